"""Typed run events: what a runner reports while it drives a board.

Events are for observers (progress displays, dashboards, tests); the transaction log stays the
record of truth. Names are dotted, ``<area>.<what>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kernel.canonical import JSON

RUN_STARTED = "run.started"
INVOCATION_STARTED = "invocation.started"
PROPOSAL_DECIDED = "proposal.decided"
CIRCUIT_ACTION = "circuit.action"
STAGE_CHANGED = "stage.changed"
INVOCATION_FAILED = "invocation.failed"
CONTROL_SPENT = "control.spent"
BOARD_SPENT = "board.spent"
RUN_ENDED = "run.ended"
STATE_UPDATE = "state.update"
"""Stream mode ``updates``: one committed patch with its worker, invocation and version."""
STATE_VALUES = "state.values"
"""Stream mode ``values``: the state after one commit."""
STREAM_MODES = ("events", "updates", "values")
"""What ``Runner.events(modes=...)`` can stream."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened during a run: ``kind``, the board, and JSON details."""

    kind: str
    board_id: str
    data: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (for --json output and server-sent events)."""
        return {"kind": self.kind, "board_id": self.board_id, **self.data}
