"""The async runner: the loop of DESIGN.md, driving one board to its end.

pop an invocation -> build the view -> call the worker (with a timeout) -> kernel.prepare ->
store.append (record + agenda changes, one transaction) -> kernel.commit -> schedule from the
committed events -> circuit policy; until the done condition holds, the agenda is empty, the
control unit terminates, the circuit policy halts (stuck, cycles, repeated invalid proposals),
or a limit is reached. The end reason is logged as a record and stored on the board.

Parallel mode keeps up to P invocations in flight. Each proposal carries the version its view
was built at; the kernel rejects one whose read or written paths changed since as ``stale``
and the runner re-queues that invocation once, with a fresh view next time.

A run can stop at any point (even SIGKILL) and resume from the store: ``Runner.open`` rebuilds
the kernel from the latest snapshot and the log tail, and leases of a dead runner expire.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..kernel.canonical import JSON
from ..kernel.circuit import HALT, RECORD_KIND, RETRY_WITH_FEEDBACK, SWITCH_WORKER, TIGHTEN_BUDGET, CircuitPolicy
from ..kernel.invariants import _MISSING
from ..kernel.invariants import get as get_at
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.pointer import parse_pointer
from ..kernel.record import Record, Usage
from ..kernel.replay import replay
from ..models.protocol import Model
from ..scheduling.agenda import Agenda
from ..scheduling.control import AgendaOrder, BoardSummary, ControlUnit, Selection
from ..scheduling.invocation import Invocation
from ..scheduling.rules import Scheduler
from ..scheduling.stages import StageTracker
from ..stores.base import AgendaChanges, LoadedBoard, Store
from ..views import build_view
from ..workers.base import Worker, WorkerReply
from ..workers.factory import make_workers
from .events import CIRCUIT_ACTION, INVOCATION_STARTED, PROPOSAL_DECIDED, RUN_ENDED, RUN_STARTED, RunEvent
from .result import RunResult, usage_by

log = logging.getLogger("slateboard.runtime")

_MISSING_ANSWER: JSON = None
_RECENT_REJECTIONS = 3


class RunnerError(RuntimeError):
    """The run could not continue (the store failed, or the board is not runnable)."""


async def create_board(
    store: Store,
    blueprint: CompiledBlueprint | dict[str, Any],
    *,
    inputs: Mapping[str, JSON] | None = None,
    task: str | None = None,
    board_id: str | None = None,
    name: str | None = None,
) -> str:
    """Create a board from an accepted blueprint: its initial state (with ``inputs`` merged in at
    the top level, and ``task`` put at the blueprint's task pointer, then re-validated) and the
    invocations of its start rules. Returns the id."""
    compiled = blueprint if isinstance(blueprint, CompiledBlueprint) else compile_blueprint(blueprint)
    spec_json = compiled.spec.to_json()
    if task is not None:
        key = parse_pointer(compiled.spec.task)[0]
        props = compiled.spec.state_schema.get("properties")
        if not isinstance(props, dict) or key not in props:
            raise ValueError(f"blueprint {compiled.spec.name!r} has no {compiled.spec.task!r} member for the task")
        inputs = {**(inputs or {}), key: task}
    if inputs:
        state = compiled.initial_state()
        if not isinstance(state, dict):
            raise ValueError("inputs need a blueprint whose initial state is an object")
        state.update(inputs)
        spec_json["initial_state"] = state
        compiled = compile_blueprint(spec_json)  # re-checks schema and invariants on the new state
    scheduler = Scheduler(compiled)
    start = list(scheduler.start(compiled.initial_state()))
    info = await store.create_board(
        spec_json, compiled.initial_state(), board_id=board_id, name=name or compiled.spec.name, agenda=start
    )
    return info.board_id


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


class Runner:
    """Drives one board of a store to its end (see module docstring).

    ``model`` overrides the model of every LLM worker; ``functions`` supplies function workers
    (by worker name or "module:callable" reference); ``workers`` replaces built workers outright.
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
        control: ControlUnit | None = None,
        parallel: int = 1,
        worker_timeout: float = 120.0,
        lease_s: float = 60.0,
        max_steps: int | None = None,
        owner: str | None = None,
    ) -> None:
        if parallel < 1:
            raise ValueError("parallel must be >= 1")
        self.store = store
        self.board_id = board_id
        self.model = model
        self.functions = functions
        self.tools = tools
        self.override_workers = dict(workers or {})
        self.control: ControlUnit = control or AgendaOrder()
        self.parallel = parallel
        self.worker_timeout = worker_timeout
        self.lease_s = lease_s
        self.max_steps_override = max_steps
        self.owner = owner or f"runner-{uuid.uuid4().hex[:8]}"
        self._listeners: list[asyncio.Queue[RunEvent | None]] = []
        self._opened = False

    # -- events ---------------------------------------------------------------------------------
    def events(self) -> AsyncIterator[RunEvent]:
        """Subscribe now; iterate the run's events until it ends (call before run())."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._listeners.append(queue)
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[RunEvent | None]) -> AsyncIterator[RunEvent]:
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                yield item
        finally:
            if queue in self._listeners:
                self._listeners.remove(queue)

    def _emit(self, kind: str, **data: JSON) -> None:
        event = RunEvent(kind, self.board_id, data)
        for q in self._listeners:
            q.put_nowait(event)

    # -- opening --------------------------------------------------------------------------------
    async def open(self) -> None:
        """Load the board from the store and rebuild kernel, scheduler and agenda."""
        loaded = await self.store.load_board(self.board_id)
        self.blueprint = compile_blueprint(loaded.blueprint)
        self.kernel = kernel_from(self.blueprint, loaded)
        # Approvals may predate the snapshot: rebuild them from the whole log.
        self.history = await self.store.read_records(self.board_id)
        for rec in self.history:
            self.kernel.note_approval(rec)
        everything = await self.store.agenda(self.board_id, ("pending", "claimed", "done", "cancelled"))
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
        # Claimed invocations of a dead runner come back when their lease expires (store.claim).
        self.agenda = Agenda([i for i in everything if i.status in ("pending", "claimed")])
        self.circuit = CircuitPolicy.from_blueprint(self.blueprint)
        self.tail: deque[Record] = deque(loaded.records[-self.circuit.tail :], maxlen=max(self.circuit.tail, 64))
        self.rejections: dict[str, deque[Record]] = defaultdict(lambda: deque(maxlen=_RECENT_REJECTIONS))
        for rec in loaded.records:
            if rec.outcome == "rejected" and rec.worker:
                self.rejections[rec.worker].append(rec)
        self.records_seen = loaded.start_seq + len(loaded.records)
        built = make_workers(
            self.blueprint,
            model=self.model,
            functions=self.functions,
            tools=self.tools,
            state=lambda: self.kernel.state,
        )
        built.update(self.override_workers)
        self.workers = built
        self.budgets: dict[str, int] = {}
        self.expand: dict[str, tuple[str, ...]] = {}
        self.steps = sum(1 for r in loaded.records if r.kind == "proposal")
        self.tokens = sum(r.usage.tokens_in + r.usage.tokens_out for r in loaded.records)
        self._commit_lock = asyncio.Lock()
        self._opened = True

    # -- the loop -------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        """Run until the board ends; returns the result (also after a resume)."""
        if not self._opened:
            await self.open()
        self._emit(RUN_STARTED, version=self.kernel.version, seq=self.kernel.seq, parallel=self.parallel)
        end_reason: str | None = await self._approved_first()
        in_flight: set[asyncio.Task[None]] = set()
        try:
            while end_reason is None:
                end_reason = self._limit_reason()
                if end_reason is not None:
                    break
                eligible = [i for i in self.agenda.eligible() if i.worker in self.workers]
                if not eligible or len(in_flight) >= self.parallel:
                    if not in_flight:
                        end_reason = "agenda_empty"
                        break
                    done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()  # re-raise a store failure from a worker task
                    end_reason = self._halted
                    continue
                selection = await self.control.select(eligible, self._summary())
                selection.check(eligible)
                if selection.terminate:
                    end_reason = f"control: {selection.reason}"
                    break
                assert selection.invocation is not None
                inv = self.agenda.take(selection.invocation.id)
                if inv is None:
                    continue
                task = asyncio.create_task(self._invoke(inv, selection))
                in_flight.add(task)
                if self.parallel == 1:
                    await task
                    in_flight.discard(task)
                    end_reason = self._halted
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
        finally:
            for task in in_flight:
                task.cancel()
        reason = end_reason or "agenda_empty"
        await self._finish(reason)
        return await self._result(reason)

    _halted: str | None = None

    async def _approved_first(self) -> str | None:
        """Commit patches a human approved since the board paused; None, or why the run cannot go
        on (a held proposal still waits for its decision)."""
        from .approval import _pending

        waiting = _pending(self.history)
        if waiting:
            return f"paused: awaiting approval of record {waiting[0].seq}"
        for (worker, patch), held in sorted(self.kernel.approvals().items(), key=lambda kv: kv[1]):
            proposal = Proposal(worker, patch, None, None, {"op": "approval", "path": "", "version": self.kernel.version},
                                None, Usage(component="human"), {"approved": held})  # fmt: skip
            async with self._commit_lock:
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
                await self._append(decision, AgendaChanges(push=pushed), sched_before)
                for inv in pushed:
                    self.agenda.push(inv)
                self._emit(PROPOSAL_DECIDED, seq=rec.seq, worker=worker, invocation=None, outcome=rec.outcome,
                           stage=rec.stage, reason=rec.reason, version=self.kernel.version, tokens=self.tokens,
                           requeued=False)  # fmt: skip
        return None

    def _limit_reason(self) -> str | None:
        if self._halted:
            return self._halted
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

    def _summary(self) -> BoardSummary:
        return BoardSummary(
            version=self.kernel.version,
            state_hash=self.kernel.state_hash,
            steps=self.steps,
            tokens_used=self.tokens,
            active_stages=tuple(self.scheduler.stages.active),
            digest="",
            extra={},
        )

    async def _invoke(self, inv: Invocation, selection: Selection) -> None:
        """Lease, view, propose, decide, append, commit, schedule, circuit: one step."""
        worker = self.workers[inv.worker]
        claim = await self.store.claim(self.board_id, owner=self.owner, lease_s=self.lease_s, worker_names=[inv.worker])
        if claim is None:
            # Another runner holds it (or a dead one whose lease has not expired yet): resync
            # the agenda from the store and try again shortly.
            self.agenda = Agenda(await self.store.agenda(self.board_id))
            await asyncio.sleep(min(1.0, self.lease_s / 4))
            return
        if claim.invocation.id != inv.id:
            # The store's best invocation for this worker differs (another runner moved on):
            # run the one we were leased, and put ours back for later.
            self.agenda.requeue(inv)
            inv = claim.invocation
            self.agenda.take(inv.id)
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
        self._emit(
            INVOCATION_STARTED, invocation=inv.id, worker=inv.worker, version=view.version, reason=selection.reason
        )
        started = time.perf_counter()
        try:
            reply = await asyncio.wait_for(worker.propose(view, inv.event, feedback=inv.feedback), self.worker_timeout)
        except TimeoutError:
            reply = WorkerReply(
                "",
                Usage(latency_ms=(time.perf_counter() - started) * 1e3, component="worker"),
                diagnostics={"error": f"worker timed out after {self.worker_timeout:g} s"},
            )
        if reply.expand:
            self.expand[inv.worker] = reply.expand
        proposal = reply.to_proposal(view, invocation=inv.id, event=inv.event, meta={"control": selection.reason})
        async with self._commit_lock:
            decision = self.kernel.prepare(proposal)
            rec = decision.record
            # A stale proposal is re-queued once with a fresh view; an invalid one is retried with
            # its rejection as feedback until the circuit policy's threshold takes over.
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
            await self._append(decision, changes, sched_before)
            if requeue:
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
                self._halted = f"paused: awaiting approval of record {rec.seq}"
            self._emit(
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

    async def _append(self, decision: Decision, changes: AgendaChanges, sched_before: dict[str, JSON] | None) -> None:
        try:
            await self.store.append(self.board_id, decision.record, agenda=changes, state=self.kernel.state)
        except BaseException:
            self.kernel.abort(decision)
            if sched_before is not None:
                self.scheduler = Scheduler.from_json(self.blueprint, sched_before)
            raise
        self.kernel.commit(decision)
        self.tail.append(decision.record)

    async def _circuit(self) -> None:
        action = self.circuit.check(list(self.tail), tokens_used=self.tokens, steps=self.steps)
        if not action.logged:
            return
        decision = self.kernel.action(RECORD_KIND, action.reason, worker=action.worker, meta=action.to_record_meta())
        changes = AgendaChanges()
        worker = action.worker
        retry: Invocation | None = None
        if action.kind == SWITCH_WORKER and worker:
            cancel = [i.id for i in self.agenda.eligible() if i.worker == worker]
            changes = AgendaChanges(cancel=cancel)
        elif (
            action.kind == RETRY_WITH_FEEDBACK
            and worker in self.workers
            and not any(i.worker == worker for i in self.agenda.eligible())
        ):
            # The worker's invocations are spent: give it one more, carrying the feedback.
            assert worker is not None
            retry = Invocation(
                f"c{decision.record.seq}", worker, 0, self.scheduler.allocate_order(),
                {"op": "circuit", "path": "", "version": self.kernel.version}, "circuit",
                feedback=action.feedback,
            )  # fmt: skip
            changes = AgendaChanges(push=(retry,))
        await self._append(decision, changes, None)
        if retry is not None:
            self.agenda.push(retry)
        self._emit(CIRCUIT_ACTION, action=action.kind, worker=worker, reason=action.reason, details=action.details)
        if action.kind == HALT:
            self._halted = f"circuit: {action.reason}"
        elif action.kind == SWITCH_WORKER and worker:
            for inv_id in changes.cancel:
                self.agenda.cancel(inv_id)
        elif action.kind == TIGHTEN_BUDGET and worker:
            budget = action.details.get("view_budget") if isinstance(action.details, dict) else None
            if isinstance(budget, int):
                self.budgets[worker] = budget
        elif action.kind == RETRY_WITH_FEEDBACK and worker and retry is None:
            # The next invocation of this worker carries the rejection reasons as feedback.
            for inv in self.agenda.eligible():
                if inv.worker == worker:
                    self.agenda.requeue(inv, feedback=action.feedback)
                    break

    async def _finish(self, reason: str) -> None:
        decision = self.kernel.action("run", reason, meta={"event": "run.ended"})
        await self._append(decision, AgendaChanges(), None)
        status = "failed" if reason.startswith("circuit") else "paused" if reason.startswith("paused") else "done"
        await self.store.set_status(self.board_id, status, reason)

    async def _result(self, reason: str) -> RunResult:
        records = await self.store.read_records(self.board_id)
        answer = _MISSING_ANSWER
        if self.blueprint.spec.answer is not None:
            found = get_at(self.kernel.state, parse_pointer(self.blueprint.spec.answer))
            answer = None if found is _MISSING else found
        result = RunResult(
            board_id=self.board_id,
            state=self.kernel.state,
            answer=answer,
            end_reason=reason,
            version=self.kernel.version,
            records=len(records),
            accepted=sum(r.outcome == "accepted" for r in records),
            rejected=sum(r.outcome == "rejected" for r in records),
            steps=sum(r.kind == "proposal" for r in records),
            usage=usage_by(records, "component"),
            usage_by_worker=usage_by([r for r in records if r.kind == "proposal"], "worker"),
        )
        self._emit(RUN_ENDED, reason=reason, version=result.version, records=result.records)
        for q in self._listeners:
            q.put_nowait(None)
        return result
