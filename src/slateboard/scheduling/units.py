"""Control units by name: what the CLI's ``--control`` and ``Runner(control="...")`` choose
from (agenda order, round robin over the blueprint's workers, or a model-based coordinator)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidInput
from .control import AgendaOrder, ControlUnit, RoundRobin
from .coordinator import CoordinatorControl

__all__ = ["CONTROL_UNITS", "make_control"]

CONTROL_UNITS = ("agenda", "round-robin", "coordinator")
"""The control units a board can be run with by name (``make_control``, the CLI's ``--control``)."""


def make_control(name: str, workers: Sequence[str], *, model: Any = None, state: Any = None) -> ControlUnit:
    """The control unit called ``name`` (one of CONTROL_UNITS) for a board with ``workers`` (in
    blueprint order): agenda order, round robin over the workers, or a model-based coordinator
    (``model``: a Model or model string; ``state``: a callable giving the committed state).
    ValueError for another name."""
    if name == "agenda":
        return AgendaOrder()
    if name == "round-robin":
        return RoundRobin(workers)
    if name == "coordinator":
        if model is None:
            raise InvalidInput("the coordinator control unit needs a model (--model)")
        return CoordinatorControl(model, state=state)
    raise InvalidInput(f"unknown control unit {name!r}; expected one of {', '.join(CONTROL_UNITS)}")
