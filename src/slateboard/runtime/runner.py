"""The async runner: the loop of DESIGN.md, driving one board to its end.

select an invocation -> claim it -> build the view -> call the worker (with a timeout) ->
kernel.prepare -> rules on the prepared events (scheduler.prepare) -> store.append (record +
agenda changes, one transaction) -> kernel and scheduler commit (or abort) -> circuit policy; until the done condition holds, the agenda is empty, the
control unit terminates, the circuit policy halts (stuck, cycles, repeated invalid proposals),
or a limit is reached. The end reason is logged as a record and stored on the board.

Parallel mode keeps up to P invocations in flight. Each proposal carries the version its view
was built at; the kernel rejects one whose read or written paths changed since as ``stale``
and the runner re-queues that invocation once, with a fresh view next time.

A run can stop at any point (even SIGKILL) and resume from the store: ``Runner.open`` rebuilds
the kernel from the latest snapshot and the log tail, and leases of a dead runner expire.

Each turn is: the control unit selects among the eligible invocations, the runner claims that
invocation from the store (a lease), and then takes it through one step: ``BoardSession.step``,
i.e. ``runtime.step.StepEngine`` followed by the circuit policy, the same unit and the same
order (claim, then step) as the runner processes of ``runtime.distributed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal

import orjson

from .. import telemetry
from ..blueprint.compile import CompiledBlueprint
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.kernel import Kernel
from ..kernel.record import Usage
from ..models.errors import ModelConfigError
from ..models.protocol import Model
from ..redaction import redact
from ..scheduling.agenda import Agenda
from ..scheduling.control import AgendaOrder, ControlUnit, Resumable, Selection, restore_control
from ..scheduling.invocation import Invocation
from ..scheduling.parallel import conflict_map
from ..scheduling.units import CONTROL_UNITS, make_control
from ..status import AGENDA_EMPTY
from ..stores.base import Claim, ClaimRequest, LeaseLost, ReportsLeases, Store, supports
from ..streaming import StreamTap, streaming_to
from ..vocabulary import BOARD_FAILED, BOARD_RUNNING, OUTCOME_ACCEPTED, RAISED_PREFIX
from ..workers.base import Worker
from .boards import BoardBusy, RunnerError, kernel_from
from .children import ChildRun, ChildRunner, ensure_child
from .create import create_board
from .events import (
    CUSTOM,
    PROPOSAL_DECIDED,
    RUN_ENDED,
    RUN_STARTED,
    STATE_UPDATE,
    STATE_VALUES,
    TOKENS,
    EventKind,
    RunEvent,
    stream_modes,
)
from .ledger import Ledger, board_spend_limits, spend_limits
from .owners import dead_on_this_host, runner_owner
from .result import RunResult, price_table
from .session import BoardSession
from .step import StepOutcome
from .timers import fire_due, wait_s

__all__ = ["BoardBusy", "Runner", "RunnerError", "create_board", "kernel_from"]

log = logging.getLogger("slateboard.runtime.runner")


class Runner:
    """Drives one board of a store to its end (see module docstring).

    ``model`` overrides the model of every LLM worker; ``functions`` supplies function workers
    (by worker name or "module:callable" reference); ``workers`` replaces built workers outright.
    ``control`` is a control unit, or its name (``agenda``, ``round-robin``, ``coordinator``:
    built for the board when it is opened; the coordinator uses ``model``). ``parallel`` bounds
    the invocations in flight; ``"auto"`` (the default) runs concurrently exactly what the
    board's contracts allow: an invocation starts while others are in flight only if its worker
    cannot conflict with theirs (``scheduling.parallel.conflict_map``: neither writes what the
    other reads or writes), so parallelism never causes a stale proposal; a board whose workers
    all conflict, or one driven by another control unit than agenda order (which chooses turn
    by turn), runs one step at a time. ``max_cost`` (dollars) and ``ledgers`` (shared
    ``(ledger, name)`` pairs) are hard spend limits held per model call (``runtime.ledger``): a
    call whose worst case does not fit is not made and the board ends ``budget:<ledger>``; the
    ``max_cost`` cap covers the whole board, so a resumed board counts what its log already cost.
    The limits recorded on the board at creation (``ledger.SPEND_META``) hold as well (issue 45).
    ``children`` runs the child boards of sub-board workers (``runtime.children.ChildRunner``);
    by default this runner does (``run_child``).
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
        control: ControlUnit | str | None = None,
        parallel: int | Literal["auto"] = "auto",
        worker_timeout: float = 120.0,
        lease_s: float = 60.0,
        max_steps: int | None = None,
        owner: str | None = None,
        max_cost: float | None = None,
        ledgers: Sequence[tuple[Ledger, str]] = (),
        children: ChildRunner | None = None,
    ) -> None:
        if parallel != "auto" and parallel < 1:
            raise InvalidInput("parallel must be >= 1 or 'auto'")
        self.store = store
        self.board_id = board_id
        self.model = model
        self.functions = functions
        self.tools = tools
        self.override_workers = dict(workers or {})
        if isinstance(control, str) and control not in CONTROL_UNITS:
            raise InvalidInput(f"unknown control unit {control!r}; expected one of {', '.join(CONTROL_UNITS)}")
        self._control_name = control if isinstance(control, str) else None
        self.control: ControlUnit = control if control is not None and not isinstance(control, str) else AgendaOrder()
        self._auto_parallel = parallel == "auto"
        self.parallel: int = 1 if parallel == "auto" else parallel
        # With "auto": each worker's conflicting workers; an invocation waits while one of
        # them is in flight. None: ``parallel`` alone bounds what runs at once.
        self._conflicts: dict[str, frozenset[str]] | None = None
        self.worker_timeout = worker_timeout
        self.lease_s = lease_s
        self.max_steps_override = max_steps
        self.owner = owner or runner_owner()
        self._listeners: list[asyncio.Queue[RunEvent | None]] = []
        self._modes: dict[asyncio.Queue[RunEvent | None], frozenset[str]] = {}  # a listener's modes
        self._values_wanted = 0  # listeners streaming "values": only then is the state copied
        self._values: dict[int, JSON] = {}
        self.session = BoardSession(
            store,
            board_id,
            model=model,
            functions=functions,
            tools=tools,
            workers=workers,
            worker_timeout=worker_timeout,
            max_steps=max_steps,
            emit=self._emit,
            keep_history=False,
            children=children or self,
        )
        self.children = children
        self._spend = spend_limits(max_cost, ledgers)
        self._opened = False
        self._control_spent = Usage(component="control")
        """The control unit's usage already logged (``_note_control_spend``)."""

    # -- the board's live state (held by the session) -------------------------------------------
    @property
    def kernel(self) -> Kernel:
        """The board's kernel at its last committed record."""
        return self.session.kernel

    @property
    def blueprint(self) -> CompiledBlueprint:
        """The board's compiled blueprint."""
        return self.session.blueprint

    @property
    def agenda(self) -> Agenda:
        """This runner's mirror of the board's agenda."""
        return self.session.agenda

    @property
    def workers(self) -> dict[str, Worker]:
        """The built workers, by blueprint worker name."""
        return self.session.workers

    # -- events ---------------------------------------------------------------------------------
    def events(self, modes: Sequence[str] | None = None) -> AsyncIterator[RunEvent]:
        """Subscribe now; iterate the run's events until it ends (call before run()).

        ``modes`` (default: ``("events",)``, the run events) picks what is streamed, any of
        ``events``; ``updates`` (a ``state.update`` event per committed patch: seq, worker,
        invocation, version and the patch as logged); ``values`` (a ``state.values`` event per
        commit: seq, version and the state after it); ``tokens`` (a ``model.tokens`` event per
        chunk of a model's reply: worker, invocation, call, attempt, model, text; a model that
        cannot stream gives its whole reply as one chunk); ``custom`` (a ``worker.custom`` event
        per ``emit(data)`` of a function worker). Streaming only reads: the log is the same. An
        unknown mode raises InvalidInput listing the valid ones. A consumer that stops iterating
        (or closes the iterator) only stops its own stream: the run goes on."""
        chosen = stream_modes(modes)
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._listeners.append(queue)
        self._modes[queue] = frozenset(chosen)
        if "values" in chosen:
            self._values_wanted += 1
        if chosen == ("events",):
            return self._drain(queue)
        return self._drain_modes(queue, frozenset(chosen))

    async def _drain_modes(
        self, queue: asyncio.Queue[RunEvent | None], modes: frozenset[str]
    ) -> AsyncIterator[RunEvent]:
        try:
            async for event in self._drain(queue):
                if event.kind in (TOKENS, CUSTOM):  # only routed here when asked for
                    yield event
                    continue
                if "events" in modes:
                    yield event
                if event.kind != PROPOSAL_DECIDED or event.data.get("outcome") != OUTCOME_ACCEPTED:
                    continue
                seq = event.data.get("seq")
                if not isinstance(seq, int):
                    continue
                if "updates" in modes:
                    (record,) = await self.store.read_records(self.board_id, seq, limit=1)
                    patch: JSON = orjson.loads(record.patch) if record.patch is not None else None
                    yield RunEvent(STATE_UPDATE, self.board_id, {"seq": seq, "worker": record.worker,
                                   "invocation": record.invocation, "version": record.version, "patch": patch})  # fmt: skip
                if "values" in modes:
                    state = self._values.get(seq)
                    yield RunEvent(STATE_VALUES, self.board_id, {"seq": seq, "version": event.data.get("version"), "state": state})  # fmt: skip
        finally:
            if "values" in modes:
                self._values_wanted -= 1
                if not self._values_wanted:
                    self._values.clear()

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
            self._modes.pop(queue, None)

    def _deliver(self, kind: EventKind, board_id: str, data: dict[str, JSON]) -> None:
        """A token chunk or a custom report: to the listeners that asked for its mode."""
        mode = "tokens" if kind == TOKENS else "custom"
        event = RunEvent(kind, board_id, data)
        for q in self._listeners:
            if mode in self._modes.get(q, ()):
                q.put_nowait(event)

    def _wants(self, mode: str) -> bool:
        """Whether a listener streams ``mode`` (``tokens`` or ``custom``; this runner reports
        ``updates`` and ``values`` from its own events)."""
        return mode in ("tokens", "custom") and any(mode in m for m in self._modes.values())

    def _tap(self) -> StreamTap:
        """The tap of this run's token and custom streams (it asks ``_wants`` each time)."""
        return StreamTap(self._deliver, asyncio.get_running_loop(), self._wants)

    def _emit(self, kind: EventKind, /, **data: JSON) -> None:
        event = RunEvent(kind, self.board_id, data)
        seq = data.get("seq")
        if (
            self._values_wanted
            and kind == PROPOSAL_DECIDED
            and data.get("outcome") == OUTCOME_ACCEPTED
            and isinstance(seq, int)
        ):
            # Copied now: by the time a listener reads the event the kernel may have moved on.
            self._values[seq] = orjson.loads(orjson.dumps(self.kernel.state))
        for q in self._listeners:
            q.put_nowait(event)

    # -- opening --------------------------------------------------------------------------------
    async def open(self) -> None:
        """Load the board from the store and rebuild kernel, scheduler and agenda."""
        await self.session.load()
        # issue 45: the limits the board was started with hold on every run of it (a resume too)
        self._spend = await board_spend_limits(
            self.store, (await self.store.board_info(self.board_id)).meta, self._spend
        )
        if self._spend is not None and self.session.spend_guard is None:
            # issue 33: a hard cap, held by reserving each LLM call's worst case before it is made
            # (a board resumed under a cap: what its log already cost counts against it)
            prices = price_table(self.session.blueprint.spec.limits.prices)
            self.session.arm_spend(
                await self._spend.guard(prices, spent=self.session.accounts.cost, owner=self.board_id)
            )
        if self._control_name is not None:
            # A control unit chosen by name (the CLI's --control) is built for this board.
            self.control = make_control(
                self._control_name, list(self.blueprint.workers), model=self.model, state=lambda: self.kernel.state
            )
            self._control_name = None
        if self.session.spend_guard is not None and hasattr(self.control, "spend"):
            self.control.spend = self.session.spend_guard  # a model-based control unit reserves too
        # The control unit continues where the board's log says it is (issue 18), not at its start.
        if isinstance(self.control, Resumable):
            restore_control(self.control, await self.store.read_records(self.board_id))
        if self._auto_parallel:
            conflicts = conflict_map(self.blueprint)
            names = list(conflicts)
            if type(self.control) is not AgendaOrder or all(b in conflicts[a] for a in names for b in names):
                # A control unit other than agenda order (round-robin, a coordinator) decides
                # turn by turn from the board its last choice produced; and where every pair
                # may conflict nothing can overlap: both take the sequential path.
                self.parallel, self._conflicts = 1, None
            else:
                self.parallel, self._conflicts = max(1, len(names)), conflicts
        self._opened = True

    # -- the loop -------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        """Run until the board ends; returns the result (also after a resume)."""
        # telemetry hook (issue 17): the run's span is the parent of every step's span
        with telemetry.span("slateboard.run", {"slateboard.board": self.board_id}) as sp, streaming_to(self._tap()):
            result = await self._run()
            telemetry.set_attributes(
                sp,
                {
                    "slateboard.blueprint": self.blueprint.spec.name,
                    "slateboard.end_reason": result.end_reason,
                    "slateboard.records": result.records,
                },
            )
            return result

    def run_sync(self) -> RunResult:
        """``run`` from synchronous code: starts an event loop for the run (not from inside a
        running one, where ``await runner.run()`` is the way), like ``Team.run_sync``. The store
        must be usable from that loop: one opened in an earlier ``asyncio.run`` is, for the
        bundled stores (they bind no loop when opened)."""
        return asyncio.run(self.run())

    async def _run(self) -> RunResult:
        if not self._opened:
            try:
                await self.open()
            except ModelConfigError as exc:
                await self._fail_unstarted(exc)
                raise
        session = self.session
        if session.accounts.ended_at_head:
            # The board's run has ended (its last record is the run-end record): running it again
            # would select work its claims can never take (D4), and a second run-end record would
            # be appended (D16). Its result is the one the log holds. (After an approval decision
            # the run-end record is no longer the head, and the board runs on.)
            last = session.accounts.last
            return await session.result((last.reason if last is not None else None) or "")
        self._emit(RUN_STARTED, version=self.kernel.version, seq=self.kernel.seq, parallel=self.parallel)
        end_reason: str | None = await session.approved_first()
        in_flight: set[asyncio.Task[StepOutcome]] = set()
        running: dict[asyncio.Task[StepOutcome], str] = {}  # in-flight task -> its worker
        # The lease on the next invocation taken in the last step's transaction (one sequential
        # runner with the agenda-order control unit: the store leases exactly the invocation
        # that unit selects next, so a step costs one store transaction).
        held: Claim | None = None
        try:
            while end_reason is None:
                end_reason = session.limit_reason()
                if end_reason is not None:
                    break
                await fire_due(session)  # a batch whose timeout passed: logged, its invocation queued
                eligible = _runnable(session, self._conflicts, in_flight, running)
                if not eligible or len(in_flight) >= self.parallel:
                    if not in_flight:
                        wait = wait_s(session)
                        if wait is None:
                            end_reason = AGENDA_EMPTY
                            break
                        await asyncio.sleep(wait)  # nothing to run but a batch's timer: wait for it
                        continue
                    done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        running.pop(task, None)
                        task.result()  # re-raise a store failure from a worker task
                    end_reason = session.accounts.halted
                    continue
                selection = await self.control.select(eligible, session.summary())
                await self._note_control_spend(selection.reason)
                selection.check(eligible)
                if selection.terminate:
                    # a control unit whose own model call did not fit ends the board budget:<ledger>
                    end_reason = session.limit_reason() or f"control: {selection.reason}"
                    break
                assert selection.invocation is not None
                # Claim, then run (the order of the runner processes): the store's lease is what
                # makes the invocation this runner's, not the mirror.
                claim, held = await self._claim(selection.invocation, held), None
                if claim is None:
                    continue
                inv = session.adopt(claim.invocation)
                if inv is None:  # the mirror no longer knows it: give the lease back, choose again
                    await self._release(claim)
                    continue
                if self.parallel == 1:
                    # In this task: no task to create and switch to per step.
                    held = (await self._invoke(inv, selection)).claimed
                    end_reason = session.accounts.halted
                    continue
                task = asyncio.create_task(self._invoke(inv, selection))
                in_flight.add(task)
                running[task] = inv.worker
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
        finally:
            for task in in_flight:
                task.cancel()
            if held is not None:
                # The run ends with a lease it will not use: give it back, so a resume does not
                # wait for it to expire.
                await self._release(held)
        reason = await session.finish(end_reason or AGENDA_EMPTY) or end_reason or AGENDA_EMPTY
        result = await session.result(reason)
        self._emit(RUN_ENDED, reason=reason, version=result.version, records=result.records)
        for q in self._listeners:
            q.put_nowait(None)
        return result

    async def _fail_unstarted(self, exc: ModelConfigError) -> None:
        """A run that cannot start because a worker's model is unusable as configured (a missing
        key or weights file) fails its board with the reason, instead of leaving it listed
        ``running`` with nothing running it. Best effort: a store error leaves it as it was."""
        reason = f"{RAISED_PREFIX}: {redact(str(exc))}"[:500]
        with contextlib.suppress(Exception):
            info = await self.store.board_info(self.board_id)
            if info.status == BOARD_RUNNING:
                await self.store.set_status(self.board_id, BOARD_FAILED, reason)

    async def _note_control_spend(self, reason: str) -> None:
        """Log what the control unit's last choice spent (a model-based one keeps a running
        ``usage``, e.g. ``CoordinatorControl``): the difference since the last note becomes a
        ``spend`` record with the unit's component, so its tokens are in the log and the result."""
        usage = getattr(self.control, "usage", None)
        if not isinstance(usage, Usage):
            return
        before = self._control_spent
        delta = Usage(
            usage.tokens_in - before.tokens_in,
            usage.tokens_out - before.tokens_out,
            round(max(0.0, usage.latency_ms - before.latency_ms), 3),
            usage.component or "control",
            usage.cache_read - before.cache_read,
            usage.cache_write - before.cache_write,
        )
        self._control_spent = usage
        model = getattr(getattr(self.control, "model", None), "name", None)
        await self.session.note_spend(
            delta, f"control unit chose: {reason}"[:500], model=model if isinstance(model, str) else None
        )

    def _prefetch(self) -> ClaimRequest | None:
        """What to lease with a step's record: the next invocation, when this runner will surely
        choose the one the store would pick (sequential, agenda order); else nothing."""
        if self.parallel != 1 or type(self.control) is not AgendaOrder:
            return None
        return ClaimRequest(owner=self.owner, lease_s=self.lease_s, worker_names=list(self.session.workers))

    async def _claim(self, chosen: Invocation, held: Claim | None) -> Claim | None:
        """The lease on ``chosen``: ``held`` when it is that invocation as the mirror has it,
        else a claim of exactly that invocation (``held`` is given back). While another owner's
        lease on it has not expired (a runner that died, say) this waits; once that owner has
        appended to the board (or the board left ``running``), it raises ``BoardBusy``: a second
        runner on a busy board never runs a step of its own. None: ``chosen`` left this runner's
        agenda meanwhile (a step of its own in flight cancelled or completed it): choose again."""
        if held is not None:
            if held.invocation.id == chosen.id and held.invocation.with_status(chosen.status) == chosen:
                return held
            await self._release(held)
        announced: set[str] = set()  # the lease owners this wait was already reported for
        while True:
            claim = await self.store.claim(
                self.board_id, owner=self.owner, lease_s=self.lease_s, invocation_id=chosen.id
            )
            if claim is not None:
                return claim
            if self.session.agenda.get(chosen.id) is None:
                return None
            info = await self.store.board_info(self.board_id)
            if info.status != BOARD_RUNNING:
                raise BoardBusy(
                    f"board {self.board_id} is busy: another run set it {info.status} meanwhile, so"
                    f" invocation {chosen.id} cannot be claimed; resume the board to run it again"
                )
            if info.seq != self.kernel.seq:
                raise BoardBusy(
                    f"board {self.board_id} is busy: another runner holds invocation {chosen.id} and has"
                    f" appended to the board meanwhile (its log is at record {info.seq}, this runner's at"
                    f" {self.kernel.seq}); wait for that run to end, then resume"
                )
            # Leased by a runner that has not appended since this one loaded the board (perhaps
            # one that died): wait for the lease to end, unless the store tells it is a lease of
            # a process of this host that is gone (then it is given back now), and say so.
            if not await self._lease_of_the_dead(chosen.id, announced):
                await asyncio.sleep(min(1.0, self.lease_s / 4))

    async def _lease_of_the_dead(self, invocation_id: str, announced: set[str]) -> bool:
        """Whether another owner's lease on ``invocation_id`` was just given back because that
        owner is a process of this host that no longer exists (issue 29, R16; the store must
        report leases: ``ReportsLeases``). Otherwise logs once per owner what this runner waits
        for: the invocation, its lease owner and how long the lease still runs."""
        if not supports(self.store, ReportsLeases):
            if not announced:
                announced.add("")
                log.warning(
                    "board %s: invocation %s is leased by another run (perhaps one that died): waiting for its"
                    " lease to end (leases last up to %g s)",
                    self.board_id, invocation_id, self.lease_s,
                )  # fmt: skip
            return False
        assert isinstance(self.store, ReportsLeases)
        lease = next((x for x in await self.store.leases(self.board_id) if x.invocation_id == invocation_id), None)
        if lease is None:
            return False
        if dead_on_this_host(lease.owner):
            with contextlib.suppress(LeaseLost):
                await self.store.heartbeat(self.board_id, invocation_id, owner=lease.owner, lease_s=-self.lease_s)
            log.warning(
                "board %s: invocation %s was leased by %s, a process of this host that no longer exists:"
                " its lease is given back and the board goes on now",
                self.board_id, invocation_id, lease.owner,
            )  # fmt: skip
            return True
        if lease.owner not in announced:
            announced.add(lease.owner)
            left = max(0.0, lease.lease_until - time.time())
            log.warning(
                "board %s: waiting %.0f s for invocation %s: it is leased by %s until %s (a run that may have"
                " died; the board goes on when the lease ends)",
                self.board_id, left, invocation_id, lease.owner,
                time.strftime("%H:%M:%S", time.localtime(lease.lease_until)),
            )  # fmt: skip
        return False

    async def _release(self, claim: Claim) -> None:
        """Give a lease back unused (it ends now, so the invocation is claimable at once)."""
        with contextlib.suppress(LeaseLost):
            await self.store.heartbeat(self.board_id, claim.invocation.id, owner=self.owner, lease_s=-self.lease_s)

    def _invoke(self, inv: Invocation, selection: Selection) -> Coroutine[Any, Any, StepOutcome]:
        """One step of an invocation this runner holds the lease of (the step's own coroutine: no
        layer of this method's waits on the worker's model call with it)."""
        return self.session.step(
            inv, selection.reason, owner=self.owner, lease_s=self.lease_s, claim_next=self._prefetch()
        )

    async def run_child(self, store: Store, child: ChildRun) -> RunResult:
        """``ChildRunner`` in this process (the default): create the child board unless ``store``
        has it, then run it to its end (resume it when it had not ended; read its result back when
        it had) with this runner's worker source, worker timeout, lease and child runner, the
        parent's spend ledgers shared (``runtime.children``)."""
        await ensure_child(store, child, create_board)
        runner = Runner(
            store,
            child.child_id,
            model=self.model,
            functions=self.functions,
            tools=self.tools,
            worker_timeout=self.worker_timeout,
            lease_s=self.lease_s,
            ledgers=child.ledgers,
            children=self.children,
        )
        return await runner.run()


def _runnable(
    session: BoardSession,
    conflicts: dict[str, frozenset[str]] | None,
    in_flight: set[asyncio.Task[StepOutcome]],
    running: dict[asyncio.Task[StepOutcome], str],
) -> list[Invocation]:
    """The eligible invocations of ``session``'s workers that may start now (none whose worker
    conflicts with one in flight). A function of its own: the comprehensions' variables would be
    cells of ``Runner._run``, alive, and tracked by the garbage collector, for the whole run."""
    workers = session.workers
    eligible = [i for i in session.agenda.eligible() if i.worker in workers]
    if conflicts is not None and in_flight:
        busy = {running[t] for t in in_flight}
        eligible = [i for i in eligible if not (conflicts.get(i.worker, busy) & busy)]
    return eligible
