"""The step engine: the one unit every runner takes a claimed invocation through.

Long by design: one transaction protocol lives here whole: deciding, the single append site
(``append_decision``), the only compare-and-set retry loop (``cas_retry``), the two concurrency
strategies and the circuit step. Splitting them would scatter the "one append site, one retry
loop" guarantees this docstring states across modules that each could break them.

    view -> worker.propose (timeout, lease heartbeats) -> kernel.prepare -> scheduler.prepare
         -> ONE store.append (record + agenda changes, compare-and-set on the board's log)
         -> kernel.commit + scheduler.commit, or kernel.abort + scheduler.abort

``StepEngine.step`` is that path for an invocation, followed by the board's circuit policy
(``check_circuit``, under the same lock); ``StepEngine.transact`` is its second half (decide,
append, commit or abort) for any record: a proposal, an approved patch, a circuit action, a
stage change, a run-end record. ``append_decision`` is the only place the runtime appends a
record: a live board appends through ``transact``; the human-approval functions
(``runtime.approval``: ``approve``, ``refuse``, ``approve_edited``) call ``append_decision``
directly, because they act on a stored board with no live engine here (the CLI's ``approve``):
building one would build the board's workers, model clients and keys included, to log one
human decision. ``cas_retry`` is the only compare-and-set retry loop: a lost compare-and-set
(``Conflict``) is retried only by a ``Shared`` engine (and by ``approval``'s failure record),
after catching up with the store.

Who drives it: the single-board ``Runner``, ``RunnerProcess`` (many processes on PostgreSQL),
and ``Team.blackboard``, each through a ``BoardSession`` (the engine with the board's loading
and end around it). What differs between them is a strategy object, the ``Concurrency``:
``Solo`` (this process is the board's only writer; its agenda mirror is exact, a lost
compare-and-set or a refused commit is an error) or ``Shared`` (other processes append to the
same board: the engine catches up and decides again, drops a result another runner already
committed, and stops once the board has ended).

After every successful append the engine applies the same agenda changes to its in-memory
mirror and notes the record in the board's ``Accounts`` (``runtime.accounting``), so what this
process wrote is counted exactly like what it catches up on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .. import telemetry
from ..blueprint.compile import CompiledBlueprint
from ..kernel.canonical import JSON
from ..kernel.circuit import RETRY_WITH_FEEDBACK, SWITCH_WORKER, CircuitAction, CircuitPolicy
from ..kernel.kernel import DECLINE_KEY, Decision, Kernel, Proposal
from ..kernel.record import CIRCUIT_KIND, EVENT_META, INVOCATION_KIND, STAGE_KIND, Record, Usage
from ..scheduling.agenda import Agenda
from ..scheduling.gather import noted
from ..scheduling.invocation import CLAIMED, PENDING, Invocation
from ..scheduling.rules import Scheduled, Scheduler
from ..scheduling.stages import STAGE_ENTERED
from ..stores.base import (
    AgendaChanges,
    AgendaError,
    AppendResult,
    Claim,
    ClaimRequest,
    Conflict,
    DuplicateInvocationCommit,
    LeaseLost,
    Store,
    StoreError,
)
from ..streaming import committed, invocation_scope
from ..views import View, ViewCache, build_view, readable_state
from ..vocabulary import CONTROL_META, LAPSED_META, ONCE_KEY, OUTCOME_REJECTED, RECHECK_META, STALE_KEY, EventKind
from ..workers.base import DEFAULT_COMPONENT, Worker, WorkerReply
from .accounting import Accounts
from .events import CIRCUIT_ACTION, INVOCATION_FAILED, INVOCATION_STARTED, PROPOSAL_DECIDED, STAGE_CHANGED

if TYPE_CHECKING:
    from ..guards import GuardSet

log = logging.getLogger("slateboard.runtime")

MAX_CONFLICTS = 64
"""Compare-and-set losses one append tolerates before giving up (each one means another runner
committed on the same board meanwhile; 64 in a row means something is wrong)."""


T = TypeVar("T")

_INVOCATION: ContextVar[tuple[str, str] | None] = ContextVar("slateboard_invocation", default=None)


def current_invocation() -> tuple[str, str] | None:
    """(board id, invocation id) of the step whose worker is proposing in this task, or None
    outside a worker's ``propose``: a worker whose work is keyed by its invocation (a sub-board
    worker's children) reads it here."""
    return _INVOCATION.get()


class Emit(Protocol):
    """``emit(kind, **data)``: how an engine reports run events to its runner (``kind`` is one
    of the vocabulary's ``EventKind``, which mypy checks at every call)."""

    def __call__(self, kind: EventKind, /, **data: JSON) -> None: ...


def _no_emit(kind: EventKind, /, **data: JSON) -> None:
    return None


async def cas_retry(
    attempt: Callable[[int], Awaitable[T]],
    catch_up: Callable[[], Awaitable[object]],
    *,
    retry: bool,
    limit: int = MAX_CONFLICTS,
) -> T:
    """Run ``attempt(conflicts_so_far)`` until it does not lose the compare-and-set.

    On ``Conflict`` (another writer appended first) it calls ``catch_up`` and tries again, at
    most ``limit`` times; with ``retry=False`` (a single writer: a conflict is a bug or a second
    writer that should not be there) the Conflict propagates at once. This is the runtime's only
    compare-and-set retry loop."""
    conflicts = 0
    while True:
        # The await that catches up is outside the handler: compiled (slateboard._native), an
        # await inside ``except`` or ``finally`` leaves the handled exception set in the thread
        # (mypy 2.4), where it resurfaces as the context, or the cause, of later errors.
        try:
            return await attempt(conflicts)
        except Conflict:
            conflicts += 1
            if not retry or conflicts > limit:
                raise
        await catch_up()


async def _stop_keeper(timer: asyncio.TimerHandle | None, keeper: list[asyncio.Task[None]]) -> None:
    """Stop a step's lease keeper: its timer, and the keeping task once the timer started it."""
    if timer is not None:
        timer.cancel()
    for task in keeper:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What one step did: the record it appended (None when dropped), whether the invocation was
    re-queued, why the result was dropped, how many compare-and-set losses it took, and the
    worker's reply (None when the step never reached the worker). ``claimed`` is the next
    invocation leased in the same transaction as the record (``step(..., claim_next=...)``),
    or None (not asked for, nothing eligible, or the step appended nothing)."""

    record: Record | None
    requeued: bool = False
    dropped: str | None = None
    conflicts: int = 0
    reply: WorkerReply | None = field(default=None, compare=False)
    claimed: Claim | None = None


# -- the concurrency strategy -------------------------------------------------------------------
class Concurrency(Protocol):
    """How an engine behaves towards other writers of its board (``Solo`` or ``Shared``)."""

    retries: bool
    """Whether a lost compare-and-set is retried after catching up (else it raises)."""

    def ended(self, accounts: Accounts) -> str | None:
        """Why nothing more may be appended now (the board ended elsewhere), or None."""
        ...

    def mirror(self, active: Sequence[Invocation]) -> Agenda:
        """The in-memory agenda mirror of the store's pending and claimed invocations."""
        ...

    def refused(self, exc: StoreError) -> str:
        """The drop reason when the store refused a commit (already committed, or cancelled);
        raises when such a refusal cannot happen legitimately."""
        ...


class Solo:
    """This process is the board's only writer: its mirror is the truth, and a lost
    compare-and-set or a refused commit is an error (raised). Claimed invocations found on
    load belonged to a dead run and are pending again (the store re-leases them)."""

    retries = False

    def ended(self, accounts: Accounts) -> str | None:
        """Never: a solo run ends only when it decides to (a new run may follow an old end)."""
        return None

    def mirror(self, active: Sequence[Invocation]) -> Agenda:
        """Every active invocation, pending."""
        return Agenda(active)

    def refused(self, exc: StoreError) -> str:
        """Raises ``exc``: nobody else can have committed this invocation."""
        raise exc


class Shared:
    """Other processes append to the board too (runner processes on PostgreSQL): a lost
    compare-and-set is retried after catching up, a commit the store refuses (another runner
    committed or cancelled the invocation first) is dropped, and once the log ends with a
    run-end record nothing more is appended. Invocations claimed by other runners stay claimed
    in the mirror: never eligible here."""

    retries = True

    def ended(self, accounts: Accounts) -> str | None:
        """``the board ended meanwhile`` once the log ends with a run-end record."""
        return "the board ended meanwhile" if accounts.ended_at_head else None

    def mirror(self, active: Sequence[Invocation]) -> Agenda:
        """Pending ones pending, claimed ones claimed."""
        return Agenda.from_json(
            {
                "pending": [i.to_json() for i in active if i.status == PENDING],
                "claimed": [i.to_json() for i in active if i.status == CLAIMED],
            }
        )

    def refused(self, exc: StoreError) -> str:
        """The refusal, as the drop reason (the other runner's commit stands)."""
        return str(exc)


def mirror_changes(agenda: Agenda, changes: AgendaChanges) -> None:
    """Apply to the in-memory mirror exactly the agenda changes the store just committed."""
    for inv_id in changes.cancel:
        agenda.cancel(inv_id)
    for inv_id in changes.complete:
        agenda.cancel(inv_id)  # pending (another runner's view of it) or claimed: gone either way
    for inv in changes.requeue:
        agenda.cancel(inv.id)
        agenda.push(inv)
    for inv in changes.push:
        agenda.push(inv)


async def append_decision(
    store: Store,
    board_id: str,
    kernel: Kernel,
    decision: Decision,
    changes: AgendaChanges,
    *,
    scheduler: Scheduler | None = None,
    claim: ClaimRequest | None = None,
) -> AppendResult:
    """Append ``decision``'s record with ``changes`` in one store transaction (compare-and-set
    on the board's log position), then commit the kernel (and the scheduler, when it prepared
    the pushed invocations); on any failure abort both and re-raise. The kernel and scheduler
    never move unless the store holds the record. ``claim`` leases the next invocation in the
    same transaction (``AppendResult.claim``)."""
    try:
        with telemetry.span("slateboard.store.append", {"slateboard.seq": decision.record.seq}):  # telemetry hook
            done = await store.append(board_id, decision.record, agenda=changes, state=kernel.state, claim=claim)
    except BaseException:
        kernel.abort(decision)
        if scheduler is not None:
            scheduler.abort()
        raise
    kernel.commit(decision)
    if scheduler is not None:
        scheduler.commit()
    return done


Prepare = Callable[[], Decision | Awaitable[Decision | None] | None]
"""Decides the record to append (``kernel.prepare`` or ``kernel.action``) at the current head, or
None when, at this head, there is nothing to append any more; awaitable when it runs a board's
guards first (``guards.GuardSet.prepare``)."""
Changes = Callable[[Decision, Sequence[Invocation]], AgendaChanges]
"""The agenda changes for a decision, given the invocations its rules pushed."""


@dataclass(frozen=True, slots=True)
class Transacted:
    """One successful append: the decision, the agenda changes committed with it, how many
    compare-and-set losses it took, and the invocation leased with it (``transact(claim=...)``)."""

    decision: Decision
    changes: AgendaChanges
    conflicts: int
    claimed: Claim | None = None

    @property
    def record(self) -> Record:
        """The appended record."""
        return self.decision.record


@dataclass(frozen=True, slots=True)
class Dropped:
    """An append that did not happen: why, and after how many compare-and-set losses."""

    reason: str
    conflicts: int


class StepEngine:
    """One board's step (see the module docstring).

    The engine holds the board's live pieces (kernel, scheduler, agenda mirror, accounts,
    workers), which its owner sets with ``reset`` (and again after a reload). ``catch_up`` is
    called after a lost compare-and-set (``Shared`` only). Guarantees: the kernel, the scheduler,
    the mirror and the accounts only move after the store accepted a record; one decision at a
    time (``lock``, held by ``step``'s second half and by every ``transact`` caller)."""

    def __init__(
        self,
        store: Store,
        board_id: str,
        *,
        concurrency: Concurrency | None = None,
        worker_timeout: float | None = 120.0,
        emit: Emit | None = None,
        catch_up: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.store = store
        self.board_id = board_id
        self.concurrency: Concurrency = concurrency or Solo()
        self.worker_timeout = worker_timeout
        self.emit: Emit = emit or _no_emit
        self.catch_up: Callable[[], Awaitable[object]] = catch_up or _nothing
        self.lock = asyncio.Lock()
        self.expand: dict[str, tuple[str, ...]] = {}
        self.workers: dict[str, Worker] = {}
        self.stage_events: list[tuple[str, str, int]] = []
        """Stage transitions (kind, stage, version) of committed records not logged yet."""
        self.circuit: CircuitPolicy | None = None
        """The board's circuit policy, run after every step (``check_circuit``); set by ``reset``."""
        self.view_cache = ViewCache()
        """What consecutive views of the board reuse; told every commit here (issue 14)."""
        self.guards: GuardSet | None = None
        """The board's guard stages (``slateboard.guards``), built by ``reset`` from the blueprint;
        ``decide`` runs them before the kernel's decision. None: the blueprint has none."""
        self.guard_functions: Mapping[str, Callable[..., Any]] = {}
        """Guard functions by reference or guard name, instead of importing them."""
        # The board's live pieces, set by ``reset``:
        self.blueprint: CompiledBlueprint
        self.kernel: Kernel
        self.scheduler: Scheduler
        self.agenda: Agenda
        self.accounts: Accounts

    def reset(
        self,
        blueprint: CompiledBlueprint,
        kernel: Kernel,
        scheduler: Scheduler,
        agenda: Agenda,
        accounts: Accounts,
        circuit: CircuitPolicy | None = None,
    ) -> None:
        """(Re)load the board's live pieces (after a load or a reload from the store)."""
        self.blueprint = blueprint
        self.kernel = kernel
        self.scheduler = scheduler
        self.agenda = agenda
        self.accounts = accounts
        self.circuit = circuit
        self.view_cache.clear()
        if not blueprint.spec.guards:
            self.guards = None
        elif self.guards is None or self.guards.digest != blueprint.digest:
            from ..guards import build_guards  # only boards with guards load them

            self.guards = build_guards(blueprint, functions=self.guard_functions)

    # -- the second half: decide, append, commit or abort -----------------------------------------
    async def transact(
        self,
        prepare: Prepare,
        changes: Changes | None = None,
        *,
        schedule: bool | Callable[[Scheduler, Decision], Scheduled] = False,
        deciding: Invocation | None = None,
        claim: ClaimRequest | None = None,
    ) -> Transacted | Dropped:
        """Decide with ``prepare``, run the rules on an accepted decision when ``schedule`` (a
        callable schedules any decision its own way, e.g. a batch's timer: ``runtime.timers``),
        append the record with ``changes(decision, pushed)`` (default: push what the rules
        created) in one compare-and-set, then commit or abort; mirror the agenda changes and
        note the record. Call it with ``lock`` held. ``Shared``: decides again on the new head
        after a lost compare-and-set, and returns ``Dropped`` when the board ended meanwhile or
        the store refused the commit. ``deciding`` is the claimed invocation whose proposal is
        decided: the rules create no invocation whose worker and binding are pending or claimed,
        except that one (it completes with this record). A running invocation that misses a
        trigger this way is not starved: the trigger changed a path it reads, so its proposal
        is stale and it runs again with a fresh view. ``claim`` leases the next invocation in
        the same store transaction as the record (``Transacted.claimed``). The notes the rules
        gave joins and batches are logged in the record's ``meta["gather"]`` (``gather.noted``)."""
        # A partial, not a closure: a closure's variables are cells made on every call, and they
        # live (garbage-collector tracked) for as long as the append waits on the store.
        attempt = functools.partial(self._attempt, prepare, changes, schedule, deciding, claim)
        return await cas_retry(attempt, self.catch_up, retry=self.concurrency.retries)

    async def _attempt(
        self,
        prepare: Prepare,
        changes: Changes | None,
        schedule: bool | Callable[[Scheduler, Decision], Scheduled],
        deciding: Invocation | None,
        claim: ClaimRequest | None,
        conflicts: int,
    ) -> Transacted | Dropped:
        """One compare-and-set attempt of ``transact`` (see there), after ``conflicts`` losses."""
        conc = self.concurrency
        ended = conc.ended(self.accounts)
        if ended is not None:
            return Dropped(ended, conflicts)
        prepared = prepare()
        # A Decision or None nearly always (inspect.isawaitable costs four type checks a step).
        decision = prepared if prepared is None or isinstance(prepared, Decision) else await prepared
        if decision is None:
            return Dropped("nothing to append", conflicts)
        rec = decision.record
        pushed: Sequence[Invocation] = ()
        scheduler = None
        if callable(schedule):
            scheduler = self.scheduler
            pushed = schedule(scheduler, decision)
        elif schedule and decision.accepted and self.scheduler.reacts:
            scheduler = self.scheduler
            pushed = scheduler.prepare(
                decision.events,
                self.kernel.state,
                rec.version,
                pending=self.agenda.active_keys(excluding=deciding.id if deciding is not None else None),
            )
        if isinstance(pushed, Scheduled) and pushed.notes:
            decision.record = rec = noted(rec, pushed.notes)
        agenda = changes(decision, pushed) if changes is not None else AgendaChanges(push=pushed)
        refused: str | None = None
        try:
            done = await append_decision(
                self.store, self.board_id, self.kernel, decision, agenda, scheduler=scheduler, claim=claim
            )
        except (DuplicateInvocationCommit, AgendaError) as exc:
            refused = conc.refused(exc)
        if refused is not None:  # caught up outside the handler (see cas_retry)
            await self.catch_up()
            log.info("board %s: result dropped: %s", self.board_id, refused)
            return Dropped(refused, conflicts)
        if decision.accepted:
            self.view_cache.changed(decision.events, rec.version)
        mirror_changes(self.agenda, agenda)
        self.accounts.note(rec)
        if isinstance(pushed, Scheduled):
            self.stage_events.extend((e.kind, e.stage, e.version) for e in pushed.stage_events)
        return Transacted(decision, agenda, conflicts, done.claim)

    # -- the step -----------------------------------------------------------------------------
    async def step(
        self,
        inv: Invocation,
        reason: str,
        *,
        owner: str | None = None,
        lease_s: float | None = None,
        meta: dict[str, JSON] | None = None,
        claim_next: ClaimRequest | None = None,
    ) -> StepOutcome:
        """Run claimed invocation ``inv``: view, propose, then ``decide``.

        ``reason`` is why it was chosen (kept in the record's meta as ``control`` unless ``meta``
        is given). With ``owner`` and ``lease_s`` the claim's lease is extended every
        ``lease_s / 3`` seconds while the worker runs. A worker that times out becomes a
        ``parse`` rejection. ``claim_next`` leases the next invocation in the same store
        transaction as the step's record (``StepOutcome.claimed``): one transaction per step."""
        # telemetry hook (issue 17): one span per step, the view / propose / decide / append below it
        with telemetry.span(
            "slateboard.step",
            {"slateboard.worker": inv.worker, "slateboard.invocation": inv.id, "slateboard.control": reason},
        ):
            # The two halves awaited here, not in a coroutine of their own: one layer fewer
            # alive (and walked by the garbage collector) while the worker's model call runs.
            proposal, reply = await self.propose(inv, reason, owner=owner, lease_s=lease_s, meta=meta)
            return await self.decide(inv, proposal, reply=reply, claim_next=claim_next)

    def view(self, inv: Invocation) -> View:
        """The view ``inv``'s worker gets now: the committed state it may read, within its
        budget (a circuit "tighten" budget when one is set), with its recent rejections and
        the handles it asked to expand (consumed: the next view does not expand them again).
        The view cache is left out while the lock is held: a decision may then be pending, its
        patch applied in place to the state and not yet committed or aborted."""
        return build_view(
            self.blueprint,
            inv.worker,
            readable_state(self.blueprint, inv.worker, self.kernel.state),
            self.kernel.version,
            event=inv.event,
            rejections=list(self.accounts.rejections.get(inv.worker, ())),  # get: no empty deque per worker per board
            expand=self.expand.pop(inv.worker, ()),
            budget=self.accounts.budgets.get(inv.worker),
            cache=None if self.lock.locked() else self.view_cache,
        )

    async def propose(
        self,
        inv: Invocation,
        reason: str,
        *,
        owner: str | None = None,
        lease_s: float | None = None,
        meta: dict[str, JSON] | None = None,
    ) -> tuple[Proposal, WorkerReply]:
        """The first half of a step: ``inv``'s view of the committed board, its worker's reply
        (a timeout becomes a failed reply) and the kernel proposal made of them; nothing is
        decided or appended. A durable-execution engine runs this half as one activity and
        ``decide`` as another, so a worker's reply is paid for once even when the commit is
        retried. An invocation of a ``recheck`` rule whose condition no longer holds
        (``Scheduler.lapsed``) does not call its worker: the reply is a decline naming why."""
        worker = self.workers[inv.worker]
        with telemetry.span("slateboard.view") as sp:  # telemetry hook (issue 17)
            view = self.view(inv)
            telemetry.record_view(sp, view)
        self.emit(INVOCATION_STARTED, invocation=inv.id, worker=inv.worker, version=view.version, reason=reason)
        lapsed = self.scheduler.lapsed(inv, self.kernel.state) if RECHECK_META in inv.meta else None
        if lapsed is not None:
            # Its rule's condition no longer holds (a commit since it was queued did its work):
            # the worker is not called, and the kernel logs the decline as a no-op.
            reply = WorkerReply(
                {DECLINE_KEY: lapsed},
                Usage(component=str(getattr(worker, "component", DEFAULT_COMPONENT))),
                diagnostics={LAPSED_META: True},
            )
        else:
            # The worker is called here, not from further coroutines of this engine: each layer
            # would stay alive (and be walked by the garbage collector) for the whole model call.
            started = time.perf_counter()
            # The lease keeper starts only once the worker has run for a third of the lease (most
            # workers answer well before): no task is created, switched to and cancelled per step.
            keeper: list[asyncio.Task[None]] = []
            timer = None
            if owner is not None and lease_s is not None:
                every = max(lease_s / 3, 0.01)
                # The timer's arguments, not a closure: a closure's variables are cells, made on
                # every call of this coroutine, and live (garbage-collector tracked) while the
                # worker runs; with many boards waiting on their models that is what fills the
                # collector's young generations.
                timer = asyncio.get_running_loop().call_later(
                    every, self._start_keeper, keeper, inv.id, owner, lease_s, every
                )
            # The keeper is stopped outside any handler (see cas_retry): compiled, an await inside
            # ``finally`` even re-raised the exception that had passed through it, in a later call.
            failure: BaseException | None = None
            try:
                # The invocation scope tags streamed tokens and progress (a no-op when none is streamed).
                with (
                    telemetry.span(
                        "slateboard.propose", {"slateboard.worker": inv.worker}
                    ),  # telemetry hook (issue 17)
                    invocation_scope(self.board_id, inv.worker, inv.id),
                ):
                    # ``asyncio.timeout`` runs the worker in this task (``wait_for`` wraps it in another).
                    # A worker with ``step_timeout = None`` (a sub-board worker) is bounded by its own limits.
                    token = _INVOCATION.set((self.board_id, inv.id))
                    try:
                        async with asyncio.timeout(getattr(worker, "step_timeout", self.worker_timeout)):
                            reply = await worker.propose(view, inv.event, feedback=inv.feedback)
                    finally:
                        _INVOCATION.reset(token)
            except TimeoutError:
                reply = self._timed_out(started)
            except BaseException as exc:
                failure = exc
            await _stop_keeper(timer, keeper)
            if failure is not None:
                raise failure
        if reply.expand:
            self.expand[inv.worker] = reply.expand
        proposal = reply.to_proposal(
            view, invocation=inv.id, event=inv.event, meta=meta if meta is not None else {CONTROL_META: reason}
        )
        return proposal, reply

    async def check_circuit(self) -> None:
        """The circuit policy after a step (call with ``lock`` held): log the action it calls
        for (with its agenda changes) in one append; counts, halts and budgets follow from the
        record. Nothing when the engine has no policy (``reset`` without one)."""
        policy = self.circuit
        if policy is None:
            return
        taken: list[CircuitAction] = []

        def prepare() -> Decision | None:
            accounts = self.accounts
            action = policy.check(list(accounts.tail), tokens_used=accounts.tokens, steps=accounts.steps)
            if not action.logged:
                return None
            taken[:] = [action]
            return self.kernel.action(CIRCUIT_KIND, action.reason, worker=action.worker, meta=action.to_record_meta())

        def changes(decision: Decision, _pushed: Sequence[Invocation]) -> AgendaChanges:
            action = taken[0]
            worker = action.worker
            if action.kind == SWITCH_WORKER and worker:
                return AgendaChanges(cancel=[i.id for i in self.agenda.eligible() if i.worker == worker])
            if action.kind == RETRY_WITH_FEEDBACK and worker is not None and worker in self.workers:
                waiting = next((i for i in self.agenda.eligible() if i.worker == worker), None)
                if waiting is None:
                    # The worker's invocations are spent: give it one more, carrying the feedback.
                    retry = Invocation(
                        f"c{decision.record.seq}", worker, 0, self.scheduler.allocate_order(),
                        {"op": "circuit", "path": "", "version": self.kernel.version}, "circuit",
                        feedback=action.feedback,
                    )  # fmt: skip
                    return AgendaChanges(push=(retry,))
                # Its next invocation carries the rejection reasons as feedback (in the store
                # too, so whichever runner claims it sees them).
                nudged = replace(waiting, feedback=action.feedback)
                return AgendaChanges(requeue=(nudged,))
            return AgendaChanges()

        done = await self.transact(prepare, changes)
        if isinstance(done, Dropped):
            return
        action = taken[0]
        self.emit(
            CIRCUIT_ACTION, action=action.kind, worker=action.worker, reason=action.reason, details=action.details
        )

    async def log_stages(self) -> None:
        """Log the stage transitions the last commits caused, one ``stage`` record each (call
        with ``lock`` held). Its exit condition holding ends a stage by itself (autocomplete):
        ``completed`` when none of its work was still queued, ``terminated`` when some was:
        that work is cancelled in the same append as the record, which names it."""
        while self.stage_events:
            kind, stage, version = self.stage_events.pop(0)
            await self.log_stage(stage, kind == STAGE_ENTERED, version)

    async def log_stage(self, stage: str, entered: bool, version: int) -> None:
        """Append one stage lifecycle record: ``entered``, or for an exit ``completed`` /
        ``terminated`` (the latter cancelling its rules' queued invocations in the same
        append)."""
        rules = frozenset() if entered else self.scheduler.stages.rules_of(self.blueprint.rules, [stage])
        queued = [i.id for i in self.agenda.eligible() if i.rule in rules]
        transition = "entered" if entered else "terminated" if queued else "completed"
        reason = f"stage {stage!r} {transition} at version {version}" + (
            f"; cancelled its queued work: {', '.join(queued)}" if queued else ""
        )

        def prepare() -> Decision:
            meta: dict[str, JSON] = {EVENT_META: STAGE_CHANGED, "stage": stage, "transition": transition}
            meta["cancelled"] = list(queued)
            return self.kernel.action(STAGE_KIND, reason, meta=meta)

        done = await self.transact(prepare, lambda _d, _p: AgendaChanges(cancel=queued))
        if isinstance(done, Transacted):
            self.emit(STAGE_CHANGED, stage=stage, transition=transition, version=version, cancelled=list(queued))

    async def _fail(self, inv: Invocation, why: str) -> None:
        """Log that ``inv`` failed and its work is lost (call with ``lock`` held, right after the
        record that completed it): an ``invocation.failed`` action record, counted by the
        accounts, so the run's end reason names it."""
        reason = f"invocation {inv.id} of {inv.worker} failed: {why}"

        def prepare() -> Decision:
            return self.kernel.action(
                INVOCATION_KIND,
                reason,
                worker=inv.worker,
                invocation=inv.id,
                meta={EVENT_META: INVOCATION_FAILED, "attempts": inv.attempts + 1},
            )

        done = await self.transact(prepare)
        if isinstance(done, Transacted):
            log.warning("board %s: %s", self.board_id, reason)
            self.emit(INVOCATION_FAILED, invocation=inv.id, worker=inv.worker, reason=reason, seq=done.record.seq)

    def _timed_out(self, started: float) -> WorkerReply:
        """The failed reply of a worker that ran out of time."""
        timed_out = f"worker timed out after {self.worker_timeout:g} s"
        return WorkerReply(
            "",
            Usage(latency_ms=(time.perf_counter() - started) * 1e3, component="worker"),
            # A timeout is a failed call, not a malformed reply: the kernel rejects it at
            # stage ``model`` with this reason rather than as "not valid JSON" (issue 16).
            diagnostics={"error": timed_out, "model_error": timed_out},
        )

    def _start_keeper(
        self, keeper: list[asyncio.Task[None]], invocation_id: str, owner: str, lease_s: float, every: float
    ) -> None:
        """Start a step's lease keeper (its timer fired: the worker has run a third of the lease)."""
        keeper.append(asyncio.get_running_loop().create_task(self._keep_lease(invocation_id, owner, lease_s, every)))

    async def _keep_lease(self, invocation_id: str, owner: str, lease_s: float, every: float) -> None:
        """Extend the lease now and every ``every`` seconds until cancelled (or lost)."""
        while True:
            try:
                await self.store.heartbeat(self.board_id, invocation_id, owner=owner, lease_s=lease_s)
            except LeaseLost:
                # Another runner may take the invocation over; the store's idempotency key keeps
                # the commit single, whoever gets there first.
                log.info("board %s: lease on %s lost while its worker ran", self.board_id, invocation_id)
                return
            except StoreError as exc:
                log.warning("board %s: heartbeat for %s failed: %s", self.board_id, invocation_id, exc)
            await asyncio.sleep(every)

    async def decide(
        self,
        inv: Invocation,
        proposal: Proposal,
        *,
        reply: WorkerReply | None = None,
        claim_next: ClaimRequest | None = None,
    ) -> StepOutcome:
        """Decide ``proposal`` for claimed invocation ``inv`` and append it with its agenda
        changes (``transact``). A stale proposal is re-queued with a fresh view up to the
        blueprint's ``circuit.max_stale_requeues`` times (counted in the invocation's ``meta``);
        past that the invocation fails: an ``invocation.failed`` action record follows the stale
        record, so the loss is in the log and the run's end reason names it. An invalid one is
        retried with its rejection as feedback until the circuit policy's threshold takes over
        (unless its ``meta`` sets ``ONCE_KEY``); anything else completes the invocation. Then
        the circuit policy runs (``check_circuit``, same lock). ``reply`` (the worker's) is
        passed through to the outcome. ``claim_next`` is leased in the same
        transaction as the record; when more records follow it in this step (stage changes, a
        failure, a circuit action), the lease is still returned: the caller checks it against
        its agenda mirror before using it."""
        circuit = self.blueprint.spec.circuit
        # The step's two callbacks on one object rather than two closures: a closure's variables
        # are cells made on every call, live for as long as the append waits on the store.
        verdict = _Verdict(self, inv, proposal, circuit.max_consecutive_invalid, circuit.max_stale_requeues)
        stale_limit = verdict.stale_limit
        stale_count = verdict.stale_count
        async with self.lock:
            done = await self.transact(verdict.prepare, verdict.changes, schedule=True, deciding=inv, claim=claim_next)
            if isinstance(done, Dropped):
                return StepOutcome(None, dropped=done.reason, conflicts=done.conflicts, reply=reply)
            rec = done.record
            requeued = verdict.requeued
            await self.log_stages()
            if rec.stage == "stale" and not requeued:
                await self._fail(inv, f"its proposal was stale {stale_count + 1} times (limit {stale_limit} re-queues)")
            self.emit(
                PROPOSAL_DECIDED,
                seq=rec.seq,
                worker=inv.worker,
                invocation=inv.id,
                outcome=rec.outcome,
                stage=rec.stage,
                reason=rec.reason,
                version=self.kernel.version,
                tokens=self.accounts.tokens,
                requeued=requeued,
            )
            committed(self.board_id, rec, self.kernel.version, self.kernel.state)  # a Team's streams (no-op unstreamed)
            await self.check_circuit()
            return StepOutcome(rec, requeued=requeued, conflicts=done.conflicts, reply=reply, claimed=done.claimed)

    async def _guarded(self, proposal: Proposal) -> Decision:
        """The kernel's decision with the board's guards run first when it needs their verdicts
        (``guards.GuardSet.prepare``); called again at each compare-and-set attempt, so the
        guards always see the head the record is appended at."""
        assert self.guards is not None
        with telemetry.span("slateboard.decide") as sp:  # telemetry hook (issue 17)
            decision = await self.guards.prepare(self.kernel, proposal)
            telemetry.record_decision(sp, decision.record)
        return decision


class _Verdict:
    """The ``prepare`` and ``changes`` of one step's ``transact`` (``StepEngine.decide``): the
    kernel's decision on the proposal (the board's guards first, when it has some), and the
    agenda changes it calls for: the invocation completed, or re-queued (stale, up to
    ``stale_limit`` times; rejected, while under ``retries`` attempts and not ``ONCE_KEY``).
    ``requeued`` says which, once ``changes`` ran."""

    __slots__ = ("engine", "inv", "proposal", "requeued", "retries", "stale_count", "stale_limit")

    def __init__(self, engine: StepEngine, inv: Invocation, proposal: Proposal, retries: int, stale_limit: int) -> None:
        self.engine = engine
        self.inv = inv
        self.proposal = proposal
        self.retries = retries
        self.stale_limit = stale_limit
        self.stale_count = int(inv.meta.get(STALE_KEY, 0))
        self.requeued = False

    def changes(self, decision: Decision, pushed: Sequence[Invocation]) -> AgendaChanges:
        inv = self.inv
        rec = decision.record
        stale = rec.stage == "stale"
        stale_count = self.stale_count
        self.requeued = requeued = (stale and stale_count < self.stale_limit) or (
            rec.outcome == OUTCOME_REJECTED
            and not stale
            and not inv.meta.get(ONCE_KEY)
            and inv.attempts + 1 < self.retries
        )
        if not requeued:
            return AgendaChanges(push=pushed, complete=(inv.id,))
        meta = {**inv.meta, STALE_KEY: stale_count + 1} if stale else inv.meta
        retry = replace(inv, status=PENDING, attempts=inv.attempts + 1, feedback=rec.reason, meta=meta)
        if stale:
            log.info(
                "board %s: invocation %s (%s) stale, re-queued with a fresh view (%d of %d)",
                self.engine.board_id, inv.id, inv.worker, stale_count + 1, self.stale_limit,
            )  # fmt: skip
        return AgendaChanges(push=pushed, requeue=(retry,))

    def prepare(self) -> Decision | Awaitable[Decision]:
        engine = self.engine
        if engine.guards is not None:
            return engine._guarded(self.proposal)
        with telemetry.span("slateboard.decide") as sp:  # telemetry hook (issue 17)
            decision = engine.kernel.prepare(self.proposal)
            telemetry.record_decision(sp, decision.record)
        return decision


async def _nothing() -> None:
    return None
