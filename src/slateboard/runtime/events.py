"""Typed run events: what a runner reports while it drives a board.

Events are for observers (progress displays, dashboards, tests); the transaction log stays the
record of truth. Names are dotted, ``<area>.<what>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..streaming import CUSTOM_EVENT, TOKENS_EVENT, UPDATE_EVENT, VALUES_EVENT

RUN_STARTED = "run.started"
INVOCATION_STARTED = "invocation.started"
PROPOSAL_DECIDED = "proposal.decided"
CIRCUIT_ACTION = "circuit.action"
STAGE_CHANGED = "stage.changed"
INVOCATION_FAILED = "invocation.failed"
CONTROL_SPENT = "control.spent"
BOARD_SPENT = "board.spent"
RUN_ENDED = "run.ended"
STATE_UPDATE = UPDATE_EVENT
"""Stream mode ``updates``: one committed patch with its worker, invocation and version."""
STATE_VALUES = VALUES_EVENT
"""Stream mode ``values``: the state after one commit."""
TOKENS = TOKENS_EVENT
"""Stream mode ``tokens``: one chunk of a model's reply, with its worker, invocation, call and
attempt (``slateboard.streaming``)."""
CUSTOM = CUSTOM_EVENT
"""Stream mode ``custom``: one progress report a function worker emitted (never logged)."""
STREAM_MODES = ("events", "updates", "values", "tokens", "custom")
"""What ``Runner.events(modes=...)`` and ``Team.stream(prompt, modes=...)`` can stream."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened during a run: ``kind``, the board, and JSON details."""

    kind: str
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
