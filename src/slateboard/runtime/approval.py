"""Human approval: a blueprint's ``approval`` patterns hold proposals until a person decides.

A proposal that passes every stage but changes a path under an approval pattern is logged with
outcome ``held`` (stage ``approval``) and the board is paused. ``approve`` logs an ``approval``
action naming the held record and its exact patch; the next run of the board (in this process
or another) commits that patch without calling the worker again. ``refuse`` logs the refusal;
the held patch is never committed. Both leave the board ``running`` so it can be resumed.
"""

from __future__ import annotations

from ..blueprint.compile import compile_blueprint
from ..errors import UsageError
from ..kernel.record import Record
from ..stores.base import AgendaChanges, Store
from .boards import Held, RunnerError, kernel_from, waiting_approvals
from .step import append_decision

__all__ = ["ApprovalError", "Held", "approve", "held_proposals", "refuse"]


class ApprovalError(UsageError, ValueError):
    """The record named is not a held proposal awaiting a decision on this board."""


async def held_proposals(store: Store, board_id: str) -> list[Held]:
    """Held proposals of a board that have no approval decision yet, oldest first."""
    records = await store.read_records(board_id)
    return waiting_approvals(records)


async def approve(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Approve held record ``seq``: log the decision; the board's next run commits the patch."""
    return await _decide(store, board_id, seq, "approved", by, note)


async def refuse(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Refuse held record ``seq``: log the decision; its patch is never committed."""
    return await _decide(store, board_id, seq, "refused", by, note)


async def _decide(store: Store, board_id: str, seq: int, decision: str, by: str, note: str) -> Record:
    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    held = next((h for h in waiting_approvals(records) if h.seq == seq), None)
    if held is None:
        waiting = ", ".join(str(h.seq) for h in waiting_approvals(records)) or "none"
        raise ApprovalError(
            f"board {board_id}: record {seq} is not a held proposal awaiting a decision (waiting: {waiting})"
        )
    try:
        kernel = kernel_from(compile_blueprint(loaded.blueprint), loaded)
    except RunnerError as exc:
        raise ApprovalError(str(exc)) from None
    reason = f"{by} {decision} record {seq}" + (f": {note}" if note else "")
    meta = {"record": seq, "decision": decision, "by": by, "worker": held.worker, "patch": held.patch}
    prepared = kernel.action("approval", reason, worker=held.worker, meta=meta)
    # The same append as every step (one compare-and-set, then commit or abort); a lost
    # compare-and-set means the board moved while we decided: the caller may simply retry.
    await append_decision(store, board_id, kernel, prepared, AgendaChanges())
    await store.set_status(board_id, "running", reason)
    return prepared.record
