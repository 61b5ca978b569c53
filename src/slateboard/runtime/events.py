"""Typed run events: what a runner reports while it drives a board.

Events are for observers (progress displays, dashboards, tests); the transaction log stays the
record of truth. Names are dotted, ``<area>.<what>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..vocabulary import (
    BOARD_SPENT,
    CIRCUIT_ACTION,
    CONTROL_SPENT,
    CUSTOM_EVENT,
    INVOCATION_FAILED,
    INVOCATION_STARTED,
    PROPOSAL_DECIDED,
    RUN_ENDED,
    RUN_STARTED,
    STAGE_CHANGED,
    TOKENS_EVENT,
    UPDATE_EVENT,
    VALUES_EVENT,
    EventKind,
)

# The run event kinds live in ``slateboard.vocabulary``; this module, their first home,
# re-exports them beside the event type and the stream modes.
__all__ = [
    "BOARD_SPENT",
    "CIRCUIT_ACTION",
    "CONTROL_SPENT",
    "CUSTOM",
    "INVOCATION_FAILED",
    "INVOCATION_STARTED",
    "PROPOSAL_DECIDED",
    "RUN_ENDED",
    "RUN_STARTED",
    "STAGE_CHANGED",
    "STATE_UPDATE",
    "STATE_VALUES",
    "STREAM_MODES",
    "TOKENS",
    "EventKind",
    "RunEvent",
    "stream_modes",
]

STATE_UPDATE: Final = UPDATE_EVENT
"""Stream mode ``updates``: one committed patch with its worker, invocation and version."""
STATE_VALUES: Final = VALUES_EVENT
"""Stream mode ``values``: the state after one commit."""
TOKENS: Final = TOKENS_EVENT
"""Stream mode ``tokens``: one chunk of a model's reply, with its worker, invocation, call and
attempt (``slateboard.streaming``)."""
CUSTOM: Final = CUSTOM_EVENT
"""Stream mode ``custom``: one progress report a function worker emitted (never logged)."""
STREAM_MODES = ("events", "updates", "values", "tokens", "custom")
"""What ``Runner.events(modes=...)`` and ``Team.stream(prompt, modes=...)`` can stream."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened during a run: ``kind``, the board, and JSON details."""

    kind: EventKind
    board_id: str
    data: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (for --json output and server-sent events)."""
        return {"kind": self.kind, "board_id": self.board_id, **self.data}


def stream_modes(modes: Sequence[str] | None) -> tuple[str, ...]:
    """``modes`` checked against ``STREAM_MODES`` (default: ``("events",)``); InvalidInput names
    an unknown one and lists the valid ones."""
    if isinstance(modes, str):
        modes = (modes,)
    chosen = tuple(modes) if modes is not None else ("events",)
    for mode in chosen:
        if mode not in STREAM_MODES:
            raise InvalidInput(f"stream mode {mode!r} is not one of {', '.join(STREAM_MODES)}")
    return chosen
