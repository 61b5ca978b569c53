"""What every runtime module needs to know about a stored board, with no runtime dependency.

The board's kernel rebuilt from the store (``kernel_from``), how its end is recorded (the
run-end record, ``ends_run``, ``status_for``), which held proposals still wait for a human
(``waiting_approvals``), and its result (``make_result``, ``board_result``). Every other module
of ``slateboard.runtime`` may import this one; it imports none of them but ``result``, so the
runner, the step engine and approvals never need a function-level import to reach each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import RunError
from ..kernel.canonical import JSON
from ..kernel.kernel import Kernel
from ..kernel.pointer import MISSING, parse_pointer, resolve
from ..kernel.record import APPROVAL_KIND, APPROVAL_RECORD_META, EVENT_META, PROPOSAL_KIND, RUN_KIND, Record
from ..kernel.replay import replay
from ..status import CIRCUIT_PREFIX, FAIL_PREFIX, PAUSED_PREFIX
from ..stores.base import LoadedBoard, Store
from ..vocabulary import (
    BOARD_DONE,
    BOARD_FAILED,
    BOARD_PAUSED,
    OUTCOME_ACCEPTED,
    OUTCOME_HELD,
    OUTCOME_REJECTED,
    RUN_ENDED,
    BoardStatus,
)
from .result import RunResult, cost_by, cost_of, price_table, usage_by


class RunnerError(RunError, RuntimeError):
    """The run could not continue (the store failed, or the board is not runnable)."""


class BoardBusy(RunnerError):
    """Another runner is driving the board: it holds the lease of the invocation this runner
    chose and has appended records this runner has not seen (or changed the board's status).
    Nothing was appended by the runner that raises it; resume once the other run has ended."""


@dataclass(frozen=True, slots=True)
class Held:
    """A proposal waiting for a human: the record's seq, its worker, patch and reason."""

    seq: int
    worker: str
    patch: str
    reason: str


def waiting_approvals(records: Sequence[Record]) -> list[Held]:
    """Held proposals among ``records`` that have no approval decision yet, oldest first."""
    # A malformed approval (its "record" a list or object) decides nothing, and must not crash this.
    decided = {
        d
        for r in records
        if r.kind == APPROVAL_KIND and not isinstance(d := r.meta.get(APPROVAL_RECORD_META), (list, dict))
    }
    return [held_of(r) for r in records if r.outcome == OUTCOME_HELD and r.seq not in decided]


def held_of(record: Record) -> Held:
    """The ``Held`` summary of a held proposal record."""
    return Held(record.seq, record.worker or "", record.patch or "", record.reason or "")


def kernel_from(blueprint: CompiledBlueprint, loaded: LoadedBoard) -> Kernel:
    """The board's kernel at its last record: the latest snapshot plus the replayed log tail.

    Raises RunnerError when the stored log does not verify or a bare snapshot does not match
    its state hash."""
    board = loaded.board_id
    report = replay(
        blueprint,
        loaded.start_state,
        loaded.records,
        start_version=loaded.start_version,
        start_seq=loaded.start_seq,
        start_hash=loaded.start_hash,
    )
    if not report.ok:
        raise RunnerError(f"board {board}: stored log does not verify: {report}")
    if loaded.snapshot is not None and not loaded.records and report.state_hash != loaded.snapshot.state_hash:
        raise RunnerError(f"board {board}: snapshot at seq {loaded.snapshot.seq} does not match its state hash")
    return Kernel(
        blueprint,
        report.state,
        version=report.version,
        seq=loaded.start_seq + report.checked,
        last_hash=loaded.records[-1].hash if loaded.records else loaded.start_hash,
    )


def ends_run(record: Record) -> bool:
    """True for the record a runner appends when a board's run ends."""
    return record.kind == RUN_KIND and record.meta.get(EVENT_META) == RUN_ENDED


def status_for(reason: str) -> BoardStatus:
    """The board status an end reason leaves: failed (circuit halt, or the blueprint's ``fail``
    condition: ``failed: ...``), paused (awaiting approval) or done (anything else)."""
    # FAIL_PREFIX without its ": ": a reason that only starts "failed" fails the board too.
    if reason.startswith((CIRCUIT_PREFIX, FAIL_PREFIX.rstrip(": "))):
        return BOARD_FAILED
    return BOARD_PAUSED if reason.startswith(PAUSED_PREFIX) else BOARD_DONE


def answer_of(blueprint: CompiledBlueprint, state: JSON) -> JSON:
    """The value at the blueprint's answer path (None when it names none or nothing is there)."""
    if blueprint.spec.answer is None:
        return None
    found = resolve(state, parse_pointer(blueprint.spec.answer))
    return None if found is MISSING else found


def make_result(
    board_id: str, blueprint: CompiledBlueprint, state: JSON, version: int, reason: str, records: Sequence[Record]
) -> RunResult:
    """The RunResult of a board from its state and its whole log (counts and cost are over the log)."""
    table = price_table(blueprint.spec.limits.prices)
    proposals = [r for r in records if r.kind == PROPOSAL_KIND]
    return RunResult(
        board_id=board_id,
        state=state,
        answer=answer_of(blueprint, state),
        end_reason=reason,
        version=version,
        records=len(records),
        accepted=sum(r.outcome == OUTCOME_ACCEPTED for r in records),
        rejected=sum(r.outcome == OUTCOME_REJECTED for r in records),
        steps=sum(r.kind == PROPOSAL_KIND for r in records),
        usage=usage_by(records, "component"),
        usage_by_worker=usage_by(proposals, "worker"),
        cost_usd=cost_of(records, table),
        cost_by_component=cost_by(records, "component", table),
        cost_by_worker=cost_by(proposals, "worker", table),
    )


async def board_result(store: Store, board_id: str) -> RunResult:
    """The RunResult of a board as the store has it now: its state at the last record, the
    answer at the blueprint's answer path, and the end reason the board carries (or of its last
    run-end record; ``""`` while it runs)."""
    loaded = await store.load_board(board_id)
    blueprint = compile_blueprint(loaded.blueprint)
    kernel = kernel_from(blueprint, loaded)
    records = await store.read_records(board_id)
    reason = loaded.info.reason or ""
    if not reason:
        ended = next((r for r in reversed(records) if ends_run(r)), None)
        reason = ended.reason or "" if ended is not None else ""
    return make_result(board_id, blueprint, kernel.state, kernel.version, reason, records)
