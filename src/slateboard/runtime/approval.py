"""Human approval: a blueprint's ``approval`` patterns hold proposals until a person decides.

A proposal that passes every stage but changes a path under an approval pattern is logged with
outcome ``held`` (stage ``approval``) and the board is paused. ``approve`` logs an ``approval``
action naming the held record and its exact patch; the next run of the board (in this process
or another) commits that patch without calling the worker again. ``refuse`` logs the refusal;
the held patch is never committed. Both leave the board ``running`` so it can be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..blueprint.compile import compile_blueprint
from ..errors import UsageError
from ..kernel.record import Record
from ..stores.base import AgendaChanges, Store


class ApprovalError(UsageError, ValueError):
    """The record named is not a held proposal awaiting a decision on this board."""


@dataclass(frozen=True, slots=True)
class Held:
    """A proposal waiting for a human: the record's seq, its worker, patch and reason."""

    seq: int
    worker: str
    patch: str
    reason: str


async def held_proposals(store: Store, board_id: str) -> list[Held]:
    """Held proposals of a board that have no approval decision yet, oldest first."""
    records = await store.read_records(board_id)
    return _pending(records)


def _pending(records: list[Record]) -> list[Held]:
    decided = {r.meta.get("record") for r in records if r.kind == "approval"}
    return [
        Held(r.seq, r.worker or "", r.patch or "", r.reason or "")
        for r in records
        if r.outcome == "held" and r.seq not in decided
    ]


async def approve(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Approve held record ``seq``: log the decision; the board's next run commits the patch."""
    return await _decide(store, board_id, seq, "approved", by, note)


async def refuse(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Refuse held record ``seq``: log the decision; its patch is never committed."""
    return await _decide(store, board_id, seq, "refused", by, note)


async def _decide(store: Store, board_id: str, seq: int, decision: str, by: str, note: str) -> Record:
    from .runner import RunnerError, kernel_from

    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    held = next((h for h in _pending(records) if h.seq == seq), None)
    if held is None:
        waiting = ", ".join(str(h.seq) for h in _pending(records)) or "none"
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
    try:
        await store.append(board_id, prepared.record, agenda=AgendaChanges())
    except BaseException:
        kernel.abort(prepared)
        raise
    kernel.commit(prepared)
    await store.set_status(board_id, "running", reason)
    return prepared.record
