"""One board's live runtime state, and the step every runner takes.

A ``BoardSession`` holds what driving a board needs in memory: the compiled blueprint, the kernel
at the board's last record, the scheduler, a mirror of the board's agenda, the circuit policy's
tail, recent rejections per worker, view budgets and the built workers. ``BoardSession.step`` is
one turn of DESIGN.md's loop for an invocation the caller has claimed from the store:

    view -> worker.propose (timeout, lease heartbeats) -> kernel.prepare -> store.append (record +
    agenda changes in one compare-and-set) -> kernel.commit -> rules -> agenda -> circuit policy

Both runners call it: the single-board ``Runner`` (one process drives the board) and
``RunnerProcess`` (many processes share every board of a PostgreSQL store). With ``shared=True``
the session expects other processes to append to the same board:

- before a step it catches up with their records (``refresh``: the new records are re-decided
  on the live kernel, so the stale check keeps its window; anything that does not fit triggers a
  full reload from the latest snapshot);
- when its append loses the compare-and-set (``Conflict``) it catches up and decides the same
  proposal again on the new head (a proposal whose read or written paths changed meanwhile is
  rejected as ``stale`` and re-queued once, as in parallel mode);
- when the store refuses the commit because the invocation was already committed
  (``DuplicateInvocationCommit``: its idempotency key is spent) or was cancelled meanwhile, the
  step drops its result, catches up, and reports ``StepOutcome.dropped``: nothing is appended;
- the end of the board (``finish``) is a record appended by compare-and-set too, so with several
  runners observing the end at once exactly one run-end record is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import telemetry
from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import RunError
from ..kernel.canonical import JSON
from ..kernel.circuit import HALT, RECORD_KIND, RETRY_WITH_FEEDBACK, SWITCH_WORKER, TIGHTEN_BUDGET, CircuitPolicy
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.pointer import MISSING, parse_pointer, resolve
from ..kernel.record import Record, Usage
from ..kernel.replay import redecide, replay
from ..models import resolve_model
from ..models.protocol import Model
from ..scheduling.agenda import Agenda
from ..scheduling.control import BoardSummary
from ..scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from ..scheduling.rules import Scheduler
from ..scheduling.stages import StageTracker
from ..stores.base import (
    AgendaChanges,
    AgendaError,
    Conflict,
    DuplicateInvocationCommit,
    LeaseLost,
    LoadedBoard,
    Store,
    StoreError,
)
from ..views import build_view
from ..workers.base import Worker, WorkerReply
from ..workers.factory import make_worker, make_workers
from .events import CIRCUIT_ACTION, INVOCATION_STARTED, PROPOSAL_DECIDED
from .result import RunResult, usage_by

log = logging.getLogger("slateboard.runtime")

RUN_RECORD_KIND = "run"
RUN_ENDED = "run.ended"
MAX_CONFLICTS = 64
"""Compare-and-set losses one commit tolerates before giving up (each one means another runner
committed on the same board meanwhile; 64 in a row means something is wrong)."""

_RECENT_REJECTIONS = 3

Emit = Callable[..., None]
"""``emit(kind, **data)``: how a session reports run events to its runner."""


class RunnerError(RunError, RuntimeError):
    """The run could not continue (the store failed, or the board is not runnable)."""


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
    return record.kind == RUN_RECORD_KIND and record.meta.get("event") == RUN_ENDED


def status_for(reason: str) -> str:
    """The board status an end reason leaves: failed (circuit halt), paused (awaiting approval)
    or done (anything else)."""
    return "failed" if reason.startswith("circuit") else "paused" if reason.startswith("paused") else "done"


def answer_of(blueprint: CompiledBlueprint, state: JSON) -> JSON:
    """The value at the blueprint's answer path (None when it names none or nothing is there)."""
    if blueprint.spec.answer is None:
        return None
    found = resolve(state, parse_pointer(blueprint.spec.answer))
    return None if found is MISSING else found


def make_result(
    board_id: str, blueprint: CompiledBlueprint, state: JSON, version: int, reason: str, records: Sequence[Record]
) -> RunResult:
    """The RunResult of a board from its state and its whole log (counts are over the log)."""
    return RunResult(
        board_id=board_id,
        state=state,
        answer=answer_of(blueprint, state),
        end_reason=reason,
        version=version,
        records=len(records),
        accepted=sum(r.outcome == "accepted" for r in records),
        rejected=sum(r.outcome == "rejected" for r in records),
        steps=sum(r.kind == "proposal" for r in records),
        usage=usage_by(records, "component"),
        usage_by_worker=usage_by([r for r in records if r.kind == "proposal"], "worker"),
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


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What one step did: the record it appended (None when dropped), whether the invocation was
    re-queued, why the result was dropped, and how many compare-and-set losses it took."""

    record: Record | None
    requeued: bool = False
    dropped: str | None = None
    conflicts: int = 0


class BoardSession:
    """One board's live runtime state (see the module docstring).

    ``model`` overrides the model of every LLM worker; ``functions`` supplies function workers;
    ``workers`` replaces built workers outright; ``max_steps`` overrides the blueprint's limit;
    ``serve`` limits the workers built to those names (a runner that serves only some workers
    need not be able to build the others). ``emit(kind, **data)`` receives the run events. Guarantees: the kernel only moves through
    records the store accepted (or re-decided from the store's log); one decision at a time per
    session (``lock``); with ``shared=False`` a lost compare-and-set raises ``Conflict``.
    """

    def __init__(
        self,
        store: Store,
        board_id: str,
        *,
        model: Model | str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        tools: Mapping[str, Sequence[Any]] | None = None,
        workers: Mapping[str, Worker] | None = None,
        worker_timeout: float = 120.0,
        max_steps: int | None = None,
        shared: bool = False,
        serve: Sequence[str] | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.store = store
        self.board_id = board_id
        self.model = model
        self.functions = functions
        self.tools = tools
        self.override_workers = dict(workers or {})
        self.worker_timeout = worker_timeout
        self.max_steps_override = max_steps
        self.shared = shared
        self.serve = None if serve is None else tuple(serve)
        self.emit: Emit = emit or (lambda kind, **data: None)
        self.lock = asyncio.Lock()
        self.halted: str | None = None
        self.ended_at_head = False
        self.finished_here = False
        self.workers: dict[str, Worker] = {}
        self.budgets: dict[str, int] = {}
        self.expand: dict[str, tuple[str, ...]] = {}

    # -- loading --------------------------------------------------------------------------------
    async def load(self) -> None:
        """Load the board from the store: kernel, scheduler, agenda mirror, circuit tail, workers
        (workers are built once; a reload keeps them)."""
        loaded = await self.store.load_board(self.board_id)
        self.meta = dict(loaded.info.meta)
        self.blueprint = compile_blueprint(loaded.blueprint)
        self.kernel = kernel_from(self.blueprint, loaded)
        # Approvals may predate the snapshot: rebuild them from the whole log.
        self.history: list[Record] = await self.store.read_records(self.board_id)
        for rec in self.history:
            self.kernel.note_approval(rec)
        self.circuit = CircuitPolicy.from_blueprint(self.blueprint)
        self.tail: deque[Record] = deque(loaded.records[-self.circuit.tail :], maxlen=max(self.circuit.tail, 64))
        self.rejections: dict[str, deque[Record]] = defaultdict(lambda: deque(maxlen=_RECENT_REJECTIONS))
        for rec in loaded.records:
            if rec.outcome == "rejected" and rec.worker:
                self.rejections[rec.worker].append(rec)
        self.steps = sum(1 for r in self.history if r.kind == "proposal")
        self.tokens = sum(r.usage.tokens_in + r.usage.tokens_out for r in self.history)
        self.ended_at_head = bool(self.history) and ends_run(self.history[-1])
        if self.shared:
            # Another process may have halted or paused the board and died before ending it.
            self.halted = None
            for rec in self.history:
                self._track_halt(rec)
        await self._load_agenda()
        if not self.workers:
            self.workers = self._build_workers()

    def _build_workers(self) -> dict[str, Worker]:
        if self.serve is None:
            built = make_workers(
                self.blueprint,
                model=self.model,
                functions=self.functions,
                tools=self.tools,
                state=lambda: self.kernel.state,
            )
        else:
            model = resolve_model(self.model) if isinstance(self.model, str) else self.model
            built = {
                name: make_worker(
                    self.blueprint,
                    name,
                    model=model,
                    functions=self.functions,
                    tools=self.tools,
                    state=lambda: self.kernel.state,
                )
                for name in self.blueprint.workers
                if name in self.serve
            }
        built.update(self.override_workers)
        return built

    async def _load_agenda(self) -> None:
        everything = await self.store.agenda(self.board_id, (PENDING, CLAIMED, DONE, CANCELLED))
        issued: dict[str, int] = defaultdict(int)
        for inv in everything:
            issued[inv.worker] += 1
        stages = StageTracker.from_blueprint(self.blueprint)
        self.scheduler = Scheduler.from_json(
            self.blueprint,
            {
                "order": max((i.order for i in everything), default=-1) + 1,
                "started": True,
                "issued": dict(issued),
                "stages": stages.to_json(),
            },
        )
        self.scheduler.stages.update(self.kernel.state, self.kernel.version)
        active = [i for i in everything if i.status in (PENDING, CLAIMED)]
        if self.shared:
            # Invocations claimed by other runners stay claimed in the mirror: never eligible here.
            self.agenda = Agenda.from_json(
                {
                    "pending": [i.to_json() for i in active if i.status == PENDING],
                    "claimed": [i.to_json() for i in active if i.status == CLAIMED],
                }
            )
        else:
            # Claimed invocations of a dead runner come back when their lease expires (store.claim).
            self.agenda = Agenda(active)

    async def refresh(self) -> bool:
        """Catch up with records other processes appended since this session's last one; True
        when the board had moved. The agenda mirror and the scheduler are rebuilt from the store
        when it did."""
        async with self.lock:
            return await self._refresh()

    async def _refresh(self) -> bool:
        new = await self.store.read_records(self.board_id, self.kernel.seq + 1)
        if not new:
            return False
        for rec in new:
            try:
                problem = redecide(self.kernel, rec)
            except Exception as exc:  # a record this kernel cannot re-decide: rebuild instead
                problem = f"{type(exc).__name__}: {exc}"
            if problem is not None:
                log.debug(
                    "board %s: record %d does not re-decide here (%s); reloading", self.board_id, rec.seq, problem
                )
                await self.load()
                return True
            self._note(rec)
        await self._load_agenda()
        return True

    def _note(self, rec: Record) -> None:
        """Account for a record another process appended (the kernel already has it)."""
        self.history.append(rec)
        self.tail.append(rec)
        if rec.kind == "proposal":
            self.steps += 1
        self.tokens += rec.usage.tokens_in + rec.usage.tokens_out
        if rec.outcome == "rejected" and rec.worker:
            self.rejections[rec.worker].append(rec)
        self.ended_at_head = ends_run(rec)
        self._track_halt(rec)
        if rec.kind == RECORD_KIND and rec.meta.get("action") == TIGHTEN_BUDGET and rec.worker:
            details = rec.meta.get("details")
            budget = details.get("view_budget") if isinstance(details, dict) else None
            if isinstance(budget, int):
                self.budgets[rec.worker] = budget

    def _track_halt(self, rec: Record) -> None:
        if ends_run(rec):
            self.halted = None
        elif rec.kind == RECORD_KIND and rec.meta.get("action") == HALT:
            self.halted = f"circuit: {rec.reason}"
        elif rec.outcome == "held":
            self.halted = f"paused: awaiting approval of record {rec.seq}"
        elif rec.kind == "approval" and (self.halted or "").startswith("paused"):
            self.halted = None

    # -- the board's condition ------------------------------------------------------------------
    def limit_reason(self) -> str | None:
        """Why the board must stop now (halted by the circuit or an approval, max_steps,
        max_tokens, the done condition), or None."""
        if self.halted:
            return self.halted
        limits = self.blueprint.spec.limits
        max_steps = self.max_steps_override or limits.max_steps
        if self.steps >= max_steps:
            return "max_steps"
        if limits.max_tokens is not None and self.tokens >= limits.max_tokens:
            return "max_tokens"
        if self.blueprint.done is not None:
            ctx = {"state": self.kernel.state} if self.blueprint.done.uses("state") else {}
            res = self.blueprint.done.test(ctx)
            if res.error is None and res.value is True:
                return "done"
        return None

    def end_reason(self) -> str | None:
        """``limit_reason``, else ``agenda_empty`` when no invocation is pending or claimed."""
        reason = self.limit_reason()
        if reason is None and not self.agenda and not self.agenda.claimed:
            reason = "agenda_empty"
        return reason

    def summary(self) -> BoardSummary:
        """What a control unit sees of the board."""
        return BoardSummary(
            version=self.kernel.version,
            state_hash=self.kernel.state_hash,
            steps=self.steps,
            tokens_used=self.tokens,
            active_stages=tuple(self.scheduler.stages.active),
            digest="",
            extra={},
        )

    # -- approvals ------------------------------------------------------------------------------
    async def approved_first(self) -> str | None:
        """Commit patches a human approved since the board paused; None, or why the run cannot go
        on (a held proposal still waits for its decision)."""
        async with self.lock:
            return await self._approved_first()

    async def _approved_first(self) -> str | None:
        from .approval import _pending

        waiting = _pending(self.history)
        if waiting:
            return f"paused: awaiting approval of record {waiting[0].seq}"
        conflicts = 0
        tried: set[tuple[str, str]] = set()
        while not (self.shared and self.ended_at_head):
            approvals = [
                kv for kv in sorted(self.kernel.approvals().items(), key=lambda kv: kv[1]) if kv[0] not in tried
            ]
            if not approvals:
                break
            (worker, patch), held = approvals[0]
            proposal = Proposal(worker, patch, None, None, {"op": "approval", "path": "", "version": self.kernel.version},
                                None, Usage(component="human"), {"approved": held})  # fmt: skip
            decision = self.kernel.prepare(proposal)
            rec = decision.record
            sched_before = self.scheduler.to_json()
            pushed: list[Invocation] = []
            if decision.accepted:
                pushed = list(
                    self.scheduler.schedule(
                        decision.events, self.kernel.state, rec.version, pending=self.agenda.pending_keys
                    )
                )
            try:
                await self._append(decision, AgendaChanges(push=pushed), sched_before)
            except Conflict:
                conflicts += 1
                if not self.shared or conflicts > MAX_CONFLICTS:
                    raise
                await self._refresh()  # another runner may have committed it: approvals() says
                continue
            tried.add((worker, patch))
            for inv in pushed:
                self.agenda.push(inv)
            self.emit(PROPOSAL_DECIDED, seq=rec.seq, worker=worker, invocation=None, outcome=rec.outcome,
                      stage=rec.stage, reason=rec.reason, version=self.kernel.version, tokens=self.tokens,
                      requeued=False)  # fmt: skip
        return None

    # -- one step -------------------------------------------------------------------------------
    async def step(
        self,
        inv: Invocation,
        reason: str,
        *,
        owner: str | None = None,
        lease_s: float | None = None,
    ) -> StepOutcome:
        """Run claimed invocation ``inv``: view, propose, decide, append, commit, schedule, circuit.

        ``reason`` is why it was chosen (kept in the record's meta as ``control``). With ``owner``
        and ``lease_s`` the claim's lease is extended every ``lease_s / 3`` seconds while the
        worker runs. A worker that times out becomes a ``parse`` rejection."""
        # telemetry hook (issue 17): one span per step, the view / propose / decide / append below it
        with telemetry.span(
            "slateboard.step",
            {"slateboard.worker": inv.worker, "slateboard.invocation": inv.id, "slateboard.control": reason},
        ):
            return await self._step(inv, reason, owner=owner, lease_s=lease_s)

    async def _step(self, inv: Invocation, reason: str, *, owner: str | None, lease_s: float | None) -> StepOutcome:
        worker = self.workers[inv.worker]
        with telemetry.span("slateboard.view") as sp:  # telemetry hook (issue 17)
            view = build_view(
                self.blueprint,
                inv.worker,
                self.kernel.state,
                self.kernel.version,
                event=inv.event,
                rejections=list(self.rejections[inv.worker]),
                expand=self.expand.pop(inv.worker, ()),
                budget=self.budgets.get(inv.worker),
            )
            telemetry.record_view(sp, view)
        self.emit(INVOCATION_STARTED, invocation=inv.id, worker=inv.worker, version=view.version, reason=reason)
        started = time.perf_counter()
        keeper = (
            asyncio.create_task(self._keep_lease(inv.id, owner, lease_s))
            if owner is not None and lease_s is not None
            else None
        )
        try:
            with telemetry.span("slateboard.propose", {"slateboard.worker": inv.worker}):  # telemetry hook (issue 17)
                reply = await asyncio.wait_for(
                    worker.propose(view, inv.event, feedback=inv.feedback), self.worker_timeout
                )
        except TimeoutError:
            reply = WorkerReply(
                "",
                Usage(latency_ms=(time.perf_counter() - started) * 1e3, component="worker"),
                diagnostics={"error": f"worker timed out after {self.worker_timeout:g} s"},
            )
        finally:
            if keeper is not None:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeper
        if reply.expand:
            self.expand[inv.worker] = reply.expand
        proposal = reply.to_proposal(view, invocation=inv.id, event=inv.event, meta={"control": reason})
        return await self.commit(inv, proposal)

    async def _keep_lease(self, invocation_id: str, owner: str, lease_s: float) -> None:
        every = max(lease_s / 3, 0.01)
        while True:
            await asyncio.sleep(every)
            try:
                await self.store.heartbeat(self.board_id, invocation_id, owner=owner, lease_s=lease_s)
            except LeaseLost:
                # Another runner may take the invocation over; the store's idempotency key keeps
                # the commit single, whoever gets there first.
                log.info("board %s: lease on %s lost while its worker ran", self.board_id, invocation_id)
                return
            except StoreError as exc:
                log.warning("board %s: heartbeat for %s failed: %s", self.board_id, invocation_id, exc)

    async def commit(self, inv: Invocation, proposal: Proposal) -> StepOutcome:
        """Decide ``proposal`` for claimed invocation ``inv`` and append it with its agenda
        changes; then the circuit policy. See the module docstring for the shared-mode rules."""
        async with self.lock:
            conflicts = 0
            while True:
                if self.shared and self.ended_at_head:
                    # Another step of this session caught up with a run-end record meanwhile.
                    return StepOutcome(None, dropped="the board ended meanwhile", conflicts=conflicts)
                with telemetry.span("slateboard.decide") as sp:  # telemetry hook (issue 17)
                    decision = self.kernel.prepare(proposal)
                    telemetry.record_decision(sp, decision.record)
                rec = decision.record
                # A stale proposal is re-queued once with a fresh view; an invalid one is retried
                # with its rejection as feedback until the circuit policy's threshold takes over.
                retries = self.blueprint.spec.circuit.max_consecutive_invalid
                requeue = (rec.stage == "stale" and inv.attempts == 0) or (
                    rec.outcome == "rejected" and rec.stage != "stale" and inv.attempts + 1 < retries
                )
                sched_before = self.scheduler.to_json()
                pushed: list[Invocation] = []
                if decision.accepted:
                    scheduled = self.scheduler.schedule(
                        decision.events, self.kernel.state, rec.version, pending=self.agenda.pending_keys
                    )
                    pushed = list(scheduled)
                retry = Invocation(
                    inv.id, inv.worker, inv.priority, inv.order, inv.event, inv.rule, inv.binding,
                    "pending", inv.attempts + 1, rec.reason, dict(inv.meta),
                )  # fmt: skip
                changes = AgendaChanges(
                    push=pushed, complete=() if requeue else (inv.id,), requeue=(retry,) if requeue else ()
                )
                try:
                    await self._append(decision, changes, sched_before)
                    break
                except (DuplicateInvocationCommit, AgendaError) as exc:
                    if not self.shared:
                        raise
                    # Committed (or cancelled) by another runner: its commit stands, ours is dropped.
                    await self._refresh()
                    log.info("board %s: result for %s dropped: %s", self.board_id, inv.id, exc)
                    return StepOutcome(None, dropped=str(exc), conflicts=conflicts)
                except Conflict:
                    conflicts += 1
                    if not self.shared or conflicts > MAX_CONFLICTS:
                        raise
                    await self._refresh()
                    if self.ended_at_head:
                        return StepOutcome(None, dropped="the board ended meanwhile", conflicts=conflicts)
            if self.shared:
                # The store did exactly this; the mirror may hold the invocation pending or claimed.
                self.agenda.cancel(inv.id)
                if requeue:
                    self.agenda.push(replace(retry, feedback=rec.reason))
            elif requeue:
                self.agenda.requeue(inv.id, feedback=rec.reason)
            else:
                self.agenda.complete(inv.id)
            for p in pushed:
                self.agenda.push(p)
            self.steps += 1
            self.tokens += rec.usage.tokens_in + rec.usage.tokens_out
            if rec.outcome == "rejected" and rec.worker:
                self.rejections[rec.worker].append(rec)
            if rec.outcome == "held":
                self.halted = f"paused: awaiting approval of record {rec.seq}"
            self.emit(
                PROPOSAL_DECIDED,
                seq=rec.seq,
                worker=inv.worker,
                invocation=inv.id,
                outcome=rec.outcome,
                stage=rec.stage,
                reason=rec.reason,
                version=self.kernel.version,
                tokens=self.tokens,
                requeued=requeue,
            )
            await self._circuit()
            return StepOutcome(rec, requeued=requeue, conflicts=conflicts)

    async def _append(self, decision: Decision, changes: AgendaChanges, sched_before: dict[str, JSON] | None) -> None:
        try:
            with telemetry.span("slateboard.store.append", {"slateboard.seq": decision.record.seq}):  # telemetry hook
                await self.store.append(self.board_id, decision.record, agenda=changes, state=self.kernel.state)
        except BaseException:
            self.kernel.abort(decision)
            if sched_before is not None:
                self.scheduler = Scheduler.from_json(self.blueprint, sched_before)
            raise
        self.kernel.commit(decision)
        self.tail.append(decision.record)
        self.history.append(decision.record)
        self.ended_at_head = ends_run(decision.record)

    async def _circuit(self) -> None:
        conflicts = 0
        while True:
            if self.shared and self.ended_at_head:
                return
            action = self.circuit.check(list(self.tail), tokens_used=self.tokens, steps=self.steps)
            if not action.logged:
                return
            decision = self.kernel.action(
                RECORD_KIND, action.reason, worker=action.worker, meta=action.to_record_meta()
            )
            changes = AgendaChanges()
            worker = action.worker
            retry: Invocation | None = None
            nudged: Invocation | None = None
            if action.kind == SWITCH_WORKER and worker:
                cancel = [i.id for i in self.agenda.eligible() if i.worker == worker]
                changes = AgendaChanges(cancel=cancel)
            elif action.kind == RETRY_WITH_FEEDBACK and worker in self.workers:
                waiting = next((i for i in self.agenda.eligible() if i.worker == worker), None)
                if waiting is None:
                    # The worker's invocations are spent: give it one more, carrying the feedback.
                    assert worker is not None
                    retry = Invocation(
                        f"c{decision.record.seq}", worker, 0, self.scheduler.allocate_order(),
                        {"op": "circuit", "path": "", "version": self.kernel.version}, "circuit",
                        feedback=action.feedback,
                    )  # fmt: skip
                    changes = AgendaChanges(push=(retry,))
                else:
                    # Its next invocation carries the rejection reasons as feedback (in the store
                    # too, so whichever runner claims it sees them).
                    nudged = replace(waiting, feedback=action.feedback)
                    changes = AgendaChanges(requeue=(nudged,))
            try:
                await self._append(decision, changes, None)
            except Conflict:
                conflicts += 1
                if not self.shared or conflicts > MAX_CONFLICTS:
                    raise
                await self._refresh()
                continue
            break
        if retry is not None:
            self.agenda.push(retry)
        if nudged is not None:
            self.agenda.cancel(nudged.id)
            self.agenda.push(nudged)
        self.emit(CIRCUIT_ACTION, action=action.kind, worker=worker, reason=action.reason, details=action.details)
        if action.kind == HALT:
            self.halted = f"circuit: {action.reason}"
        elif action.kind == SWITCH_WORKER and worker:
            for inv_id in changes.cancel:
                self.agenda.cancel(inv_id)
        elif action.kind == TIGHTEN_BUDGET and worker:
            budget = action.details.get("view_budget") if isinstance(action.details, dict) else None
            if isinstance(budget, int):
                self.budgets[worker] = budget

    # -- shared mode: around a claim ------------------------------------------------------------
    async def begin(self, claimed: Invocation) -> Invocation | None:
        """Before running an invocation claimed from the store (shared mode): catch up with the
        board, commit approved patches, and end the board if it must end now. Returns the
        invocation to run, or None when there is nothing to run: the board ended (here or
        elsewhere; ``ended_at_head`` says so) or the invocation was committed meanwhile."""
        async with self.lock:
            await self._refresh()
            if not self.ended_at_head and self.kernel.approvals():
                await self._approved_first()
            if self.ended_at_head:
                await self._finish("")  # another runner ended it: make sure the status says so
                return None
            reason = self.limit_reason()
            if reason is not None:
                await self._finish(reason)
                return None
            if self.agenda.get(claimed.id) is None:
                return None
            if claimed.id in self.agenda:
                self.agenda.take(claimed.id)
            return claimed

    async def settle(self, *, catch_up: bool = True) -> str | None:
        """End the board if it must end now (its end reason, after committing approved patches
        and, with ``catch_up``, catching up with the store); returns the reason it ended with,
        or None while it goes on. Right after this session's own commit the mirror is exact
        without catching up: the commit's compare-and-set proved the session was at the head."""
        async with self.lock:
            if catch_up:
                await self._refresh()
            if not self.ended_at_head:
                if self.kernel.approvals():
                    await self._approved_first()
                reason = self.end_reason()
                if reason is None:
                    return None
                return await self._finish(reason)
            return await self._finish("")

    # -- the end --------------------------------------------------------------------------------
    async def finish(self, reason: str) -> str | None:
        """End the board's run with ``reason``: append the run-end record (compare-and-set) and
        set the board's status and end reason. Returns the reason the board ended with, or None
        when (shared mode) the board moved on and no longer ends. When another runner appended
        the run-end record first, its reason is returned and the status is (re)set from it;
        ``finished_here`` says whether this session wrote the run-end record."""
        async with self.lock:
            return await self._finish(reason)

    async def _finish(self, reason: str) -> str | None:
        self.finished_here = False
        conflicts = 0
        while True:
            if self.shared and self.ended_at_head:
                ended = self.history[-1].reason or reason
                await self.store.set_status(self.board_id, status_for(ended), ended)
                return ended
            decision = self.kernel.action(RUN_RECORD_KIND, reason, meta={"event": RUN_ENDED})
            try:
                await self._append(decision, AgendaChanges(), None)
                break
            except Conflict:
                conflicts += 1
                if not self.shared or conflicts > MAX_CONFLICTS:
                    raise
                await self._refresh()
                if not self.ended_at_head:
                    again = self.end_reason()
                    if again is None:
                        return None
                    reason = again
        self.finished_here = True
        await self.store.set_status(self.board_id, status_for(reason), reason)
        return reason

    async def result(self, reason: str) -> RunResult:
        """The RunResult of the board now (counts over its whole stored log)."""
        records = await self.store.read_records(self.board_id)
        return make_result(self.board_id, self.blueprint, self.kernel.state, self.kernel.version, reason, records)
