"""One board's live runtime: loading it, catching up, approvals, the circuit policy, its end.

A ``BoardSession`` is the one façade of a board's runtime: it is the board's ``StepEngine``
(``runtime.step``: the one unit that takes a claimed invocation through view -> worker ->
kernel.prepare -> one store append -> commit or abort, then the circuit policy), loaded from the
store, with what happens around steps:

    claim (the caller) -> begin (Shared: catch up, approved patches, end?) -> adopt the claim
    -> step (the engine's: decide, append, circuit policy, under one lock) -> settle / finish

Both runners use it in that order: the single-board ``Runner`` (``Solo``: one process drives
the board) and ``RunnerProcess`` (``Shared``: many processes share every board of a PostgreSQL
store). With ``shared=True`` the session expects other processes to append to the same board:

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

Counting (steps, tokens, rejections, budgets, halts) is ``Accounts.note`` over every record,
whoever wrote it (``runtime.accounting``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..kernel.canonical import JSON, hash_json
from ..kernel.circuit import CircuitPolicy
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.record import EVENT_META, MODEL_META, RUN_KIND, SPEND_KIND, Record, Usage
from ..kernel.replay import redecide
from ..models import resolve_model
from ..models.protocol import Model
from ..scheduling.agenda import Agenda
from ..scheduling.control import BoardSummary
from ..scheduling.gather import Gathers
from ..scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from ..scheduling.rules import Scheduler
from ..scheduling.stages import StageTracker
from ..status import (
    AGENDA_EMPTY,
    BUDGET_PREFIX,
    DONE_CONDITION,
    FAIL_PREFIX,
    MAX_COST,
    MAX_STEPS,
    MAX_TOKENS,
    PAUSED_PREFIX,
    with_lost_work,
)
from ..stores.base import Store
from ..workers.base import Worker
from ..workers.factory import make_worker, make_workers
from .accounting import Accounts
from .boards import (
    RunnerError,
    board_result,
    ends_run,
    kernel_from,
    make_result,
    status_for,
)
from .children import ChildRunner
from .events import CONTROL_SPENT, PROPOSAL_DECIDED, RUN_ENDED
from .ledger import SpendGuard
from .result import RunResult, price_table
from .step import MAX_CONFLICTS, Concurrency, Dropped, Emit, Shared, Solo, StepEngine, StepOutcome
from .subboards import SubBoardWorker

__all__ = [
    "MAX_CONFLICTS",
    "RUN_ENDED",
    "BoardSession",
    "RunnerError",
    "StepOutcome",
    "WorkerSource",
    "board_result",
    "ends_run",
    "kernel_from",
    "make_result",
    "status_for",
]

log = logging.getLogger("slateboard.runtime")


@dataclass(frozen=True)
class WorkerSource:
    """How a session builds a board's workers: ``model`` overrides the model of every LLM
    worker; ``functions`` supplies function workers; ``tools`` tool lists; ``workers`` replaces
    built workers outright; ``serve`` limits the workers built to those names (a runner that
    serves only some workers need not be able to build the others); ``children`` runs the child
    boards of sub-board workers (``runtime.children``; None: they reject every proposal)."""

    model: Model | str | None = None
    functions: Mapping[str, Callable[..., Any]] | None = None
    tools: Mapping[str, Sequence[Any]] | None = None
    workers: Mapping[str, Worker] = field(default_factory=dict)
    serve: tuple[str, ...] | None = None
    children: ChildRunner | None = None

    def build(
        self,
        blueprint: CompiledBlueprint,
        state: Callable[[], Any],
        store: Store | None = None,
        board_meta: Callable[[], Mapping[str, Any]] = dict,
    ) -> dict[str, Worker]:
        """The workers of ``blueprint`` (``state`` gives tool and sub-board workers the live
        state); sub-board workers run their children in ``store`` through ``children``."""
        built = self._build(blueprint, state)
        for name, contract in blueprint.workers.items():
            if contract.spec.board is not None and store is not None and (self.serve is None or name in self.serve):
                built[name] = SubBoardWorker(
                    blueprint, name, store=store, state=state, children=self.children, board_meta=board_meta
                )
        built.update(self.workers)
        return built

    def _build(self, blueprint: CompiledBlueprint, state: Callable[[], Any]) -> dict[str, Worker]:
        if self.serve is None:
            built = make_workers(blueprint, model=self.model, functions=self.functions, tools=self.tools, state=state)
        else:
            model = resolve_model(self.model) if isinstance(self.model, str) else self.model
            built = {
                name: make_worker(blueprint, name, model=model, functions=self.functions, tools=self.tools, state=state)
                for name, contract in blueprint.workers.items()
                if name in self.serve and contract.spec.board is None
            }
        return built


# Blueprints compiled, by the digest of their stored JSON: many boards of one blueprint in one
# process share its compiled schema index, contracts, rules and CEL programs (immutable once
# accepted) instead of compiling and holding a copy each. Bounded, least recently used first out.
_COMPILED: OrderedDict[str, CompiledBlueprint] = OrderedDict()
_COMPILED_MAX = 64


def _compile_shared(stored: Any) -> CompiledBlueprint:
    """``compile_blueprint(stored)`` for a stored blueprint (a JSON object), shared by digest with
    every board of the same blueprint in this process. Each caller gets its own list of
    Python-registered invariants (``add_invariant`` on one board's blueprint reaches no other);
    everything else is the compiled, immutable part."""
    if not isinstance(stored, dict):
        return compile_blueprint(stored)
    key = hash_json(stored)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = compile_blueprint(stored)
        _COMPILED[key] = compiled
        if len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(key)
    return dataclasses.replace(compiled, extra_invariants=list(compiled.extra_invariants))


class BoardSession(StepEngine):
    """One board's live runtime (see the module docstring): the step engine of the board, plus
    loading, catching up, approvals, limits and the end of its run.

    ``model``, ``functions``, ``tools``, ``workers``, ``serve`` and ``children`` (what runs a
    sub-board worker's child boards) say how workers are built (``WorkerSource``);
    ``max_steps`` overrides the blueprint's limit; ``emit(kind, **data)`` receives the run
    events; ``shared`` picks the ``Shared`` concurrency strategy (else ``Solo``;
    ``concurrency`` names another one, as the Temporal engine does). Guarantees: the kernel only
    moves through records the store accepted (or re-decided from the store's log); one decision
    at a time per session (``lock``); with ``shared=False`` a lost compare-and-set raises
    ``Conflict``.
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
        compile: Callable[[Any], CompiledBlueprint] | None = None,
        keep_history: bool = True,
        concurrency: Concurrency | None = None,
        children: ChildRunner | None = None,
    ) -> None:
        super().__init__(
            store,
            board_id,
            concurrency=concurrency or (Shared() if shared else Solo()),
            worker_timeout=worker_timeout,
            emit=emit,
            catch_up=self._refresh,
        )
        self.spend_guard: SpendGuard | None = None
        """Set before ``load`` by a run with a spend cap: every LLM worker reserves each model
        call against it, and a refused reservation ends the board ``budget:<ledger>``."""
        # Whether every record stays in memory (``history``): a Team reads its rounds back from
        # it; a Runner needs only the accounts, and a long run should not grow per step.
        self.keep_history = keep_history
        # How the stored blueprint becomes the kernel's (Team.blackboard passes one that swaps
        # its built-in whole-state invariants for indexed checks with the same verdicts).
        self._compile = compile or _compile_shared
        self.source = WorkerSource(
            model, functions, tools, dict(workers or {}), None if serve is None else tuple(serve), children
        )
        self.board_meta: Mapping[str, Any] = {}
        """The board's meta as stored (read when the workers are built; children inherit its spend limits)."""
        self.guard_functions = dict(functions or {})  # a guard's function may be supplied like a worker's
        self.max_steps_override = max_steps
        self.finished_here = False

    # -- what the board's records add up to (``accounts``) ----------------------------------------
    @property
    def history(self) -> list[Record]:
        """Every record of the board, in order (only for a session made with ``keep_history``:
        otherwise ``RunnerError``; read the store's log, or ``accounts.last``, instead)."""
        if not self.keep_history:
            raise RunnerError(f"board {self.board_id}: this session keeps no record history (keep_history=False)")
        return self.accounts.history

    # -- loading --------------------------------------------------------------------------------
    async def load(self) -> None:
        """Load the board from the store: kernel, scheduler, agenda mirror, accounts, workers
        (workers are built once; a reload keeps them)."""
        loaded = await self.store.load_board(self.board_id)
        blueprint = self._compile(loaded.blueprint)
        kernel = kernel_from(blueprint, loaded)
        # Approvals may predate the snapshot: rebuild them from the whole log, up to the
        # kernel's seq: another process may have appended since ``load_board``, and counting
        # those records here as well as on the next catch-up (which starts after the kernel's
        # seq) would put them twice in the circuit's tail (a "cycle" of a version with itself).
        history = [r for r in await self.store.read_records(self.board_id) if r.seq <= kernel.seq]
        for rec in history:
            kernel.note_approval(rec)
        circuit = CircuitPolicy.from_blueprint(blueprint)
        prices = price_table(blueprint.spec.limits.prices)
        accounts = Accounts.of(history, tail_size=max(circuit.tail, 64), keep_history=self.keep_history, prices=prices)
        # Joins and batches are a fold over the notes of the whole log (``scheduling.gather``);
        # a reload keeps the clock their notes are stamped with.
        gathers = Gathers.of(blueprint, history)
        if hasattr(self, "scheduler"):
            gathers.clock = self.scheduler.gathers.clock
        scheduler, agenda = await self._load_agenda(blueprint, kernel, gathers)
        self.reset(blueprint, kernel, scheduler, agenda, accounts, circuit)
        if not self.workers:
            self.board_meta = (await self.store.board_info(self.board_id)).meta
            self.workers = self.source.build(blueprint, lambda: self.kernel.state, self.store, lambda: self.board_meta)
        if self.spend_guard is not None:
            self.arm_spend(self.spend_guard)

    def arm_spend(self, guard: SpendGuard) -> None:
        """Make every LLM worker and model judge of the board reserve its model calls against ``guard``."""
        self.spend_guard = guard
        for worker in self.workers.values():
            if hasattr(worker, "spend"):  # LLM workers (function workers spend nothing)
                worker.spend = guard
        if self.guards is not None:
            self.guards.spend = guard  # model judges reserve their calls too

    async def _load_agenda(
        self, blueprint: CompiledBlueprint, kernel: Kernel, gathers: Gathers
    ) -> tuple[Scheduler, Agenda]:
        everything = await self.store.agenda(self.board_id, (PENDING, CLAIMED, DONE, CANCELLED))
        issued: dict[str, int] = {}
        for inv in everything:
            issued[inv.worker] = issued.get(inv.worker, 0) + 1
        scheduler = Scheduler.from_json(
            blueprint,
            {
                "order": max((i.order for i in everything), default=-1) + 1,
                "started": True,
                "issued": issued,
                "stages": StageTracker.from_blueprint(blueprint).to_json(),
            },
        )
        scheduler.stages.update(kernel.state, kernel.version)
        scheduler.gathers = gathers
        active = [i for i in everything if i.status in (PENDING, CLAIMED)]
        return scheduler, self.concurrency.mirror(active)

    async def refresh(self) -> bool:
        """Catch up with records other processes appended since this session's last one; True
        when the board had moved. The agenda mirror and the scheduler are rebuilt from the store
        when it did."""
        async with self.lock:
            return await self._refresh()

    async def _refresh(self) -> bool:
        kernel = self.kernel
        new = await self.store.read_records(self.board_id, kernel.seq + 1)
        if not new:
            return False
        for rec in new:
            try:
                problem = redecide(kernel, rec)
            except Exception as exc:  # a record this kernel cannot re-decide: rebuild instead
                problem = f"{type(exc).__name__}: {exc}"
            if problem is not None:
                log.debug(
                    "board %s: record %d does not re-decide here (%s); reloading", self.board_id, rec.seq, problem
                )
                await self.load()
                return True
            self.accounts.note(rec)
            self.scheduler.gathers.note_record(rec)
        self.scheduler, self.agenda = await self._load_agenda(self.blueprint, kernel, self.scheduler.gathers)
        return True

    # -- the board's condition ------------------------------------------------------------------
    def limit_reason(self) -> str | None:
        """Why the board must stop now (halted by the circuit or an approval, max_steps,
        max_tokens, the done condition, the fail condition: ``failed: <condition>``), or None.
        A condition that errors does not end the board (it may hold later)."""
        accounts = self.accounts
        if accounts.halted:
            return accounts.halted
        if self.spend_guard is not None and self.spend_guard.exhausted is not None:
            return f"{BUDGET_PREFIX}{self.spend_guard.exhausted}"
        limits = self.blueprint.spec.limits
        max_steps = self.max_steps_override or limits.max_steps
        if accounts.steps >= max_steps:
            return MAX_STEPS
        if limits.max_tokens is not None and accounts.tokens >= limits.max_tokens:
            return MAX_TOKENS
        if limits.max_cost is not None and accounts.cost >= limits.max_cost:
            return MAX_COST
        done = self.blueprint.done
        if done is not None:
            ctx = {"state": self.kernel.state} if done.uses("state") else {}
            res = done.test(ctx)
            if res.error is None and res.value is True:
                return DONE_CONDITION
        fail = self.blueprint.fail
        if fail is not None:
            ctx = {"state": self.kernel.state} if fail.uses("state") else {}
            res = fail.test(ctx)
            if res.error is None and res.value is True:
                return f"{FAIL_PREFIX}{self.blueprint.spec.fail}"
        return None

    def end_reason(self) -> str | None:
        """``limit_reason``, else ``agenda_empty`` when no invocation is pending or claimed and no
        batch waits for its timer."""
        reason = self.limit_reason()
        if reason is None and not self.agenda and not self.agenda.claimed and not self.scheduler.gathers.deadlines():
            reason = AGENDA_EMPTY
        return reason

    def summary(self) -> BoardSummary:
        """What a control unit sees of the board."""
        return BoardSummary(
            version=self.kernel.version,
            state_hash=self.kernel.state_hash,
            steps=self.accounts.steps,
            tokens_used=self.accounts.tokens,
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
        waiting = self.accounts.waiting()
        if waiting:
            return f"{PAUSED_PREFIX}: awaiting approval of record {waiting[0].seq}"
        tried: set[tuple[str, str]] = set()
        picked: list[tuple[str, str]] = []
        while True:

            def prepare() -> Decision | None:
                # Re-read at every attempt: after a lost compare-and-set another runner may
                # have committed the approved patch already.
                kernel = self.kernel
                approvals = sorted(kernel.approvals().items(), key=lambda kv: kv[1])
                found = next((kv for kv in approvals if kv[0] not in tried), None)
                if found is None:
                    return None
                (worker, patch), held = found
                picked[:] = [(worker, patch)]
                proposal = Proposal(worker, patch, None, None, {"op": "approval", "path": "", "version": kernel.version},
                                    None, Usage(component="human"), {"approved": held})  # fmt: skip
                return kernel.prepare(proposal)

            done = await self.transact(prepare, schedule=True)
            if isinstance(done, Dropped):
                return None
            tried.add(picked[0])
            await self.log_stages()
            rec = done.record
            self.emit(PROPOSAL_DECIDED, seq=rec.seq, worker=rec.worker, invocation=None, outcome=rec.outcome,
                      stage=rec.stage, reason=rec.reason, version=self.kernel.version,
                      tokens=self.accounts.tokens, requeued=False)  # fmt: skip

    # -- one step -------------------------------------------------------------------------------
    def adopt(self, claimed: Invocation) -> Invocation | None:
        """Take an invocation the store leased to this process in the agenda mirror; None when
        the mirror no longer knows it (committed or cancelled meanwhile)."""
        if self.agenda.get(claimed.id) is None:
            return None
        if claimed.id in self.agenda:
            self.agenda.take(claimed.id)
        return claimed

    async def note_spend(
        self, usage: Usage, reason: str, *, event: str = CONTROL_SPENT, model: str | None = None
    ) -> Record | None:
        """Log tokens spent outside a worker's proposal (a model-based control unit choosing,
        the Architect drafting the blueprint) as an action record carrying ``usage`` (its
        ``component`` says who spent them), so the log, the accounts (``max_tokens``) and the
        result count them like every other token. None when nothing was spent or (shared mode)
        the board ended meanwhile."""
        if usage.tokens_in == 0 and usage.tokens_out == 0:
            return None
        async with self.lock:
            done = await self.transact(
                lambda: self.kernel.action(SPEND_KIND, reason, meta={EVENT_META: event, MODEL_META: model}, usage=usage)
            )
        return None if isinstance(done, Dropped) else done.record

    # -- shared mode: around a claim ------------------------------------------------------------
    async def begin(self, claimed: Invocation) -> Invocation | None:
        """Before running an invocation claimed from the store (shared mode): catch up with the
        board, commit approved patches, and end the board if it must end now. Returns the
        invocation to run (adopted in the mirror), or None when there is nothing to run: the
        board ended (here or elsewhere; ``ended_at_head`` says so) or the invocation was
        committed meanwhile."""
        async with self.lock:
            await self._refresh()
            if not self.accounts.ended_at_head and self.kernel.approvals():
                await self._approved_first()
            if self.accounts.ended_at_head:
                await self._finish("")  # another runner ended it: make sure the status says so
                return None
            reason = self.limit_reason()
            if reason is not None:
                await self._finish(reason)
                return None
            return self.adopt(claimed)

    async def settle(self, *, catch_up: bool = True) -> str | None:
        """End the board if it must end now (its end reason, after committing approved patches
        and, with ``catch_up``, catching up with the store); returns the reason it ended with,
        or None while it goes on. Right after this session's own commit the mirror is exact
        without catching up: the commit's compare-and-set proved the session was at the head."""
        async with self.lock:
            if catch_up:
                await self._refresh()
            if not self.accounts.ended_at_head:
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
        first = True
        ending = [reason]
        meta: dict[str, JSON] = {EVENT_META: RUN_ENDED}
        if self.spend_guard is not None:
            meta["ledgers"] = list(await self.spend_guard.lines())  # issue 33: the ledgers' state

        def prepare() -> Decision | None:
            nonlocal first
            if not first:
                # Lost the compare-and-set and caught up: does the board still end, and why?
                again = self.end_reason()
                if again is None:
                    return None
                ending[0] = again
            first = False
            # The end reason names the work this run lost (failed invocations), never silently.
            ending[0] = with_lost_work(ending[0], self.accounts.lost) if ending[0] else ending[0]
            return self.kernel.action(RUN_KIND, ending[0], meta=meta)

        done = await self.transact(prepare)
        if isinstance(done, Dropped):
            if not self.accounts.ended_at_head:
                return None
            last = self.accounts.last
            ended = (last.reason if last is not None else None) or reason
            await self.store.set_status(self.board_id, status_for(ended), ended)
            return ended
        self.finished_here = True
        await self.store.set_status(self.board_id, status_for(ending[0]), ending[0])
        return ending[0]

    async def result(self, reason: str) -> RunResult:
        """The RunResult of the board now (counts over its whole stored log)."""
        records = await self.store.read_records(self.board_id)
        return make_result(self.board_id, self.blueprint, self.kernel.state, self.kernel.version, reason, records)
