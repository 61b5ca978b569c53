"""Human approval: a blueprint's ``approval`` patterns hold proposals until a person decides.

A proposal that passes every stage but changes a path under an approval pattern is logged with
outcome ``held`` (stage ``approval``) and the board is paused. ``approve`` logs an ``approval``
action naming the held record and its exact patch; the next run of the board (in this process
or another) commits that patch without calling the worker again. ``refuse`` logs the refusal;
the held patch is never committed (if the worker proposes that exact patch again the kernel
logs it as a no-op at stage ``approval`` rather than asking a person twice), and in the same append the worker is queued again
with the refusal as feedback, so the board does not end without an answer just because a
person said no. That is bounded: past the blueprint's ``limits.max_refusals`` refusals in a row
for one line of work, the invocation fails with a logged ``invocation.failed`` record (named in
the run's end reason; nothing is lost silently). Both leave the board ``running`` so it can be
resumed.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import UsageError
from ..kernel.canonical import JSON
from ..kernel.kernel import Kernel, Proposal
from ..kernel.pointer import Pattern, parse_pointer, region_contains
from ..kernel.record import (
    APPROVAL_DECISION_META,
    APPROVAL_KIND,
    APPROVAL_PATCH_META,
    APPROVAL_RECORD_META,
    APPROVAL_WORKER_META,
    APPROVED,
    EVENT_META,
    INVOCATION_KIND,
    REFUSED,
    Record,
)
from ..scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from ..stores.base import AgendaChanges, LoadedBoard, Store
from ..vocabulary import BOARD_RUNNING, OUTCOME_HELD, OUTCOME_REJECTED
from .boards import Held, RunnerError, kernel_from, waiting_approvals
from .events import INVOCATION_FAILED
from .step import append_decision, cas_retry

__all__ = ["REFUSALS_KEY", "ApprovalError", "Held", "approve", "approve_edited", "held_proposals", "refuse"]

REFUSALS_KEY = "refusals"
"""Key in an invocation's ``meta`` counting the refusals its line of work has had so far."""


class ApprovalError(UsageError, ValueError):
    """The record named is not a held proposal awaiting a decision on this board."""


async def held_proposals(store: Store, board_id: str) -> list[Held]:
    """Held proposals of a board that have no approval decision yet, oldest first."""
    records = await store.read_records(board_id)
    return waiting_approvals(records)


async def approve(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Approve held record ``seq``: log the decision; the board's next run commits the patch."""
    return await _decide(store, board_id, seq, APPROVED, by, note)


async def refuse(store: Store, board_id: str, seq: int, *, by: str = "human", note: str = "") -> Record:
    """Refuse held record ``seq``: log the decision; its patch is never committed."""
    return await _decide(store, board_id, seq, REFUSED, by, note)


async def _held(
    store: Store, board_id: str, seq: int
) -> tuple[LoadedBoard, list[Record], Held, CompiledBlueprint, Kernel]:
    """The board, its log, held record ``seq`` and the kernel at the board's head; ApprovalError
    when ``seq`` is not a held proposal awaiting a decision or the board cannot be loaded."""
    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    held = next((h for h in waiting_approvals(records) if h.seq == seq), None)
    if held is None:
        waiting = ", ".join(str(h.seq) for h in waiting_approvals(records)) or "none"
        raise ApprovalError(
            f"board {board_id}: record {seq} is not a held proposal awaiting a decision (waiting: {waiting})"
        )
    try:
        blueprint = compile_blueprint(loaded.blueprint)
        kernel = kernel_from(blueprint, loaded)
    except RunnerError as exc:
        raise ApprovalError(str(exc)) from None
    return loaded, records, held, blueprint, kernel


async def _decide(store: Store, board_id: str, seq: int, decision: str, by: str, note: str) -> Record:
    _loaded, records, held, blueprint, kernel = await _held(store, board_id, seq)
    reason = f"{by} {decision} record {seq}" + (f": {note}" if note else "")
    meta: dict[str, JSON] = {
        APPROVAL_RECORD_META: seq,
        APPROVAL_DECISION_META: decision,
        "by": by,
        APPROVAL_WORKER_META: held.worker,
        APPROVAL_PATCH_META: held.patch,
    }
    changes = AgendaChanges()
    failed: Invocation | None = None
    if decision == REFUSED:
        invocation = next((r.invocation for r in records if r.seq == seq), None)
        changes, failed, count = await _after_refusal(
            store, board_id, held, invocation, reason, kernel.version, blueprint.spec.limits.max_refusals
        )
        meta[REFUSALS_KEY] = count
        meta["asked_again"] = failed is None and bool(changes)
    prepared = kernel.action(APPROVAL_KIND, reason, worker=held.worker, meta=meta)
    # The same append as every step (one compare-and-set, then commit or abort); a lost
    # compare-and-set means the board moved while we decided: the caller may simply retry.
    await append_decision(store, board_id, kernel, prepared, changes)
    if failed is not None:
        await _log_failed(store, board_id, failed, f"a human refused its proposal {meta[REFUSALS_KEY]} time(s)")
    await store.set_status(board_id, BOARD_RUNNING, reason)
    return prepared.record


async def _after_refusal(
    store: Store, board_id: str, held: Held, invocation: str | None, reason: str, version: int, limit: int
) -> tuple[AgendaChanges, Invocation | None, int]:
    """The agenda changes a refusal brings: the worker queued again with the refusal as feedback
    (or, if the same worker and binding are already pending, that invocation given the
    feedback), while the refusals of this line of work stay within ``limit``; past it, the
    invocation that proposed the refused patch, to be logged as failed. Also the refusal count."""
    everything = await store.agenda(board_id, (PENDING, CLAIMED, DONE, CANCELLED))
    origin = next((i for i in everything if i.id == invocation), None)
    before = origin.meta.get(REFUSALS_KEY, 0) if origin is not None else 0
    count = (before if isinstance(before, int) else 0) + 1
    if count > limit:
        lost = origin or Invocation(invocation or f"held-{held.seq}", held.worker, 0, 0)
        return AgendaChanges(), lost, count
    feedback = f"{reason}. The refused patch (do not propose it again): {held.patch}"
    key_of = origin.key if origin is not None else Invocation("", held.worker, 0, 0).key
    waiting = next((i for i in everything if i.status == PENDING and i.key == key_of), None)
    if waiting is not None:
        nudged = replace(waiting, feedback=feedback, meta={**waiting.meta, REFUSALS_KEY: count})
        return AgendaChanges(requeue=(nudged,)), None, count
    again = Invocation(
        f"refused-{held.seq}",
        held.worker,
        origin.priority if origin is not None else 0,
        max((i.order for i in everything), default=-1) + 1,
        {"op": "approval", "path": "", "version": version},
        "approval",
        origin.binding if origin is not None else (),
        feedback=feedback,
        meta={REFUSALS_KEY: count},
    )
    return AgendaChanges(push=(again,)), None, count


async def _log_failed(store: Store, board_id: str, inv: Invocation, why: str) -> None:
    """Append the ``invocation.failed`` record for ``inv`` (after its refusal), at the board's
    head: each attempt reads the board back, so a lost compare-and-set is simply retried."""
    reason = f"invocation {inv.id} of {inv.worker} failed: {why}"

    async def attempt(_conflicts: int) -> None:
        loaded = await store.load_board(board_id)
        kernel: Kernel = kernel_from(compile_blueprint(loaded.blueprint), loaded)
        prepared = kernel.action(
            INVOCATION_KIND,
            reason,
            worker=inv.worker,
            invocation=inv.id,
            meta={EVENT_META: INVOCATION_FAILED, "attempts": inv.attempts + 1},
        )
        await append_decision(store, board_id, kernel, prepared, AgendaChanges())

    async def caught_up() -> None:
        return None  # the next attempt loads the board afresh

    await cas_retry(attempt, caught_up, retry=True)


async def approve_edited(
    store: Store, board_id: str, seq: int, patch: str, *, by: str = "human", note: str = ""
) -> Record:
    """Approve held record ``seq`` with ``patch`` (JSON Patch text a person edited) in place of
    the held one. The edit must be a JSON array of operations whose paths all lie under the
    blueprint's approval paths, and it is run through every kernel stage now (as the held
    worker's proposal, so its contract applies): an edit that fails a stage raises
    ApprovalError naming the stage, and nothing is written (the board stays paused). An edit
    that passes is logged as the approval (``by``, ``edited``, the held patch kept as
    ``held_patch``); the board's next run commits it without calling the worker again."""
    try:
        value = json.loads(patch)
    except ValueError as exc:
        raise ApprovalError(f"board {board_id}: the edited patch for record {seq} is not JSON ({exc})") from None
    if not isinstance(value, list) or not all(isinstance(op, dict) for op in value):
        raise ApprovalError(f"board {board_id}: the edited patch for record {seq} is not a JSON array of operations")
    _loaded, _records, held, blueprint, kernel = await _held(store, board_id, seq)
    for op in value:
        for key in ("path", "from"):
            where = op.get(key)
            if key == "path" or where is not None:
                _inside_approval(board_id, seq, where, blueprint.approval)
    trial = kernel.prepare(Proposal(held.worker, value, meta={"edited_by": by}))
    kernel.abort(trial)  # a dry run: the patch is committed by the board's next run
    outcome = trial.record
    if outcome.outcome == OUTCOME_REJECTED:
        raise ApprovalError(
            f"board {board_id}: the edited patch for record {seq} fails stage {outcome.stage}: {outcome.reason}"
        )
    if outcome.outcome != OUTCOME_HELD or outcome.patch is None:
        raise ApprovalError(
            f"board {board_id}: the edited patch for record {seq} needs no approval ({outcome.outcome}: {outcome.reason})"
        )
    reason = f"{by} approved record {seq} with an edited patch" + (f": {note}" if note else "")
    meta: dict[str, JSON] = {
        APPROVAL_RECORD_META: seq,
        APPROVAL_DECISION_META: APPROVED,
        "by": by,
        APPROVAL_WORKER_META: held.worker,
        APPROVAL_PATCH_META: outcome.patch,
        "edited": True,
        "held_patch": held.patch,
    }
    prepared = kernel.action(APPROVAL_KIND, reason, worker=held.worker, meta=meta)
    await append_decision(store, board_id, kernel, prepared, AgendaChanges())
    await store.set_status(board_id, BOARD_RUNNING, reason)
    return prepared.record


def _inside_approval(board_id: str, seq: int, where: object, patterns: tuple[Pattern, ...]) -> None:
    """Raise ApprovalError unless pointer ``where`` lies under one of the approval ``patterns``."""
    try:
        tokens = parse_pointer(where)
    except ValueError as exc:
        raise ApprovalError(f"board {board_id}: the edited patch for record {seq}: {exc}") from None
    if not any(region_contains(p, tokens) for p in patterns):
        raise ApprovalError(
            f"board {board_id}: the edited patch for record {seq} touches {where!r}, outside the approval paths"
        )
