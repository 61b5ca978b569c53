"""``Team.blackboard``: the classic coordinator/agents/decider loop, run on the kernel.

Each ``run(prompt)`` creates a board from the built-in blueprint (slateboard.team._board) with
the problem as its first public entry, then plays rounds:

1. the budget is checked; an exhausted budget interrupts the run (no decider, no answer);
2. the coordinator (an Agent answering ``{"terminate", "next_agent", "instruction"}``, or
   round-robin when there is none) decides; the decision is logged as a ``control`` record;
3. terminate ends the loop; no agent (or an unreadable answer) skips the round; an unknown
   agent makes the system post an ``error`` entry and skips the round;
4. the chosen agent's worker proposes appending its entry; the kernel decides and the record
   is appended to the store before the state is committed;

until the coordinator terminates or ``max_rounds`` rounds were played. Then the decider (an
Agent, or the fallback: last ``answer`` entry, else last contribution, else "") writes
``/answer`` through the kernel. The board's log is the audit trail: it verifies with
``slateboard.kernel.replay`` and can be read with the same tools as any other board.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from ..blueprint.compile import CompiledBlueprint
from ..kernel.canonical import JSON
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.record import Record, Usage
from ..models import Model, resolve_model
from ..runtime.accounting import Accounts
from ..runtime.events import RunEvent
from ..runtime.result import TokenUsage, usage_by
from ..runtime.step import Solo, StepEngine
from ..scheduling.agenda import Agenda
from ..scheduling.invocation import Invocation
from ..scheduling.rules import Scheduler
from ..stores import open_store
from ..stores.base import Store
from ..workers.base import Worker, WorkerReply
from ._agent import Agent, AgentWorker, DeciderWorker, _utcnow, bounded_board, run_agent
from ._board import (
    SYSTEM_AUTHOR,
    SYSTEM_WORKER,
    USER_AUTHOR,
    blackboard_blueprint,
    check_agent_names,
    compile_blackboard,
    make_entry,
)
from ._compat import RUN_EQUIVALENTS, TEAM_EQUIVALENTS, check_model, refuse_unsupported, seed_budget
from ._coordinate import (
    DEFAULT_COORDINATOR_INSTRUCTIONS,
    CoordinatorDecision,
    coordinator_prompt,
    coordinator_schema,
    parse_coordinator_decision,
    round_robin_decision,
)

__all__ = [
    "BLACKBOARD_EVENTS",
    "BUDGET_EXCEEDED",
    "Budget",
    "BudgetPolicy",
    "BudgetStatus",
    "EventCallback",
    "Spend",
    "Team",
    "TeamResult",
    "TeamStream",
]

STARTED = "blackboard.started"
COORDINATOR_DECIDED = "blackboard.coordinator_decided"
NO_CONTRIBUTOR = "blackboard.no_contributor"
UNKNOWN_AGENT = "blackboard.unknown_agent"
INVOKING = "blackboard.invoking"
CONTRIBUTION = "blackboard.contribution"
REJECTED = "blackboard.rejected"
DECIDER_FAILED = "blackboard.decider_failed"
COMPLETED = "blackboard.completed"
BUDGET_EXCEEDED = "budget.exceeded"
BLACKBOARD_EVENTS = (
    STARTED,
    COORDINATOR_DECIDED,
    NO_CONTRIBUTOR,
    UNKNOWN_AGENT,
    INVOKING,
    CONTRIBUTION,
    REJECTED,
    DECIDER_FAILED,
    COMPLETED,
    BUDGET_EXCEEDED,
)
"""Every event kind a blackboard run emits."""

EventCallback = Callable[[RunEvent], Any]
"""Called with each event (an awaitable result is awaited)."""

_PREVIEW = 300


# -- budget ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Spend:
    """What a run has spent so far: rounds started, model calls, tokens and seconds."""

    rounds: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    elapsed_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        """tokens_in + tokens_out."""
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A budget's verdict before a round: ``blocked`` with the ``reason``, or allowed."""

    blocked: bool = False
    reason: str | None = None


@runtime_checkable
class BudgetPolicy(Protocol):
    """Anything that decides, before each round, whether the run may go on."""

    async def allows_step(self, spent: Spend) -> BudgetStatus:
        """Allowed, or blocked with a reason."""
        ...


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on tokens, model calls and wall-clock seconds (None: no limit). A round is blocked
    once any limit is reached (spent >= limit)."""

    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None

    async def allows_step(self, spent: Spend) -> BudgetStatus:
        """Blocked with the first limit reached, else allowed."""
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            return BudgetStatus(True, f"max_tokens ({spent.total_tokens} of {self.max_tokens} tokens used)")
        if self.max_calls is not None and spent.calls >= self.max_calls:
            return BudgetStatus(True, f"max_calls ({spent.calls} of {self.max_calls} model calls made)")
        if self.max_seconds is not None and spent.elapsed_s >= self.max_seconds:
            return BudgetStatus(True, f"max_seconds ({spent.elapsed_s:.1f} of {self.max_seconds:g} s)")
        return BudgetStatus()


# -- result ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TeamResult:
    """The outcome of one blackboard run.

    ``output`` is the decider's answer ("" when the run was interrupted). ``end_reason`` is
    ``"terminated"`` (the coordinator stopped), ``"max_rounds"``, or ``"budget:<reason>"``, in
    which case ``interrupted`` is True and ``interruption_reason`` holds it. ``state`` is the final
    board state, ``rounds`` the rounds started, ``usage`` tokens per component (``coordinator``,
    ``worker``, ``decider``) and ``usage_by_agent`` per blueprint worker, both from the log.
    ``started_at``/``finished_at`` are the UTC times ``run`` started and ended; ``decider_failed``
    is True when the decider's model failed and the fallback answer was used, ``decider_error``
    says why; ``turns`` counts the run's model calls. ``value``, ``run_id``, ``tokens_in``, ``tokens_out``, ``turns`` and ``duration``
    are what loomflow's ``RunResult`` users read.
    """

    output: str
    board_id: str
    end_reason: str
    rounds: int
    state: JSON
    interrupted: bool = False
    interruption_reason: str | None = None
    usage: dict[str, TokenUsage] = field(default_factory=dict)
    usage_by_agent: dict[str, TokenUsage] = field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    decider_failed: bool = False
    decider_error: str | None = None
    turns: int = 0

    # -- what loomflow's RunResult users read ---------------------------------------------------
    @property
    def value(self) -> str:
        """The answer (loomflow's ``RunResult.value``; the same string as ``output``)."""
        return self.output

    @property
    def run_id(self) -> str:
        """This run's id: the id of its board in the store (``board_id``)."""
        return self.board_id

    @property
    def tokens_in(self) -> int:
        """Prompt tokens of every model call of the run (coordinator, agents, decider)."""
        return sum(u.tokens_in for u in self.usage.values())

    @property
    def tokens_out(self) -> int:
        """Completion tokens of every model call of the run."""
        return sum(u.tokens_out for u in self.usage.values())

    @property
    def duration(self) -> timedelta | None:
        """``finished_at - started_at`` (None when either is unknown)."""
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at

    @property
    def public(self) -> list[dict[str, Any]]:
        """The public entries of the final board."""
        if isinstance(self.state, dict) and isinstance(self.state.get("public"), list):
            return [e for e in self.state["public"] if isinstance(e, dict)]
        return []

    @property
    def total_tokens(self) -> int:
        """All tokens of all components."""
        return sum(u.total for u in self.usage.values())

    def __str__(self) -> str:
        return self.output


# -- the team -------------------------------------------------------------------------------------
class Team:
    """A team of agents; ``Team.blackboard(...)`` builds the blackboard architecture.

    Guarantees (see the module docstring for the loop): at least one agent and ``max_rounds >= 1``
    or ValueError at construction; the coordinator's misbehaviour (unreadable answer, model
    failure, unknown agent) never crashes a run; every board change goes through the kernel and
    is logged before it is committed; the store's log of each run verifies with replay.
    """

    def __init__(
        self,
        agents: Mapping[str, Agent],
        *,
        coordinator: Agent | None = None,
        decider: Agent | None = None,
        model: Model | str | None = None,
        max_rounds: int = 10,
        coordinator_instructions: str | None = None,
        decider_instructions: str | None = None,
        store: Store | str | None = None,
        budget: BudgetPolicy | Any | None = None,
        on_event: EventCallback | None = None,
        clock: Callable[[], datetime] | None = None,
        view_budget: int = 100_000,
        constrain_coordinator: bool = True,
        name: str = "blackboard",
        **unsupported: Any,
    ) -> None:
        refuse_unsupported("Team.blackboard", unsupported, TEAM_EQUIVALENTS)
        if not isinstance(agents, Mapping):
            raise TypeError(
                f"agents must be a mapping of names to Agents (agents={{'name': Agent(...)}}), got {type(agents).__name__}"
            )
        if not agents:
            raise ValueError("Blackboard requires at least one agent")
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int):
            raise TypeError(f"max_rounds must be an integer, got {type(max_rounds).__name__}")
        if max_rounds < 1:
            raise ValueError("max_rounds must be >= 1")
        check_agent_names(list(agents))
        for n, a in agents.items():
            if not isinstance(a, Agent):
                raise TypeError(f"agent {n!r} must be an Agent, got {type(a).__name__}")
        for role, member in (("coordinator", coordinator), ("decider", decider)):
            if member is not None and not isinstance(member, Agent):
                raise TypeError(f"{role} must be an Agent or None, got {type(member).__name__}")
        check_model(model, "Team.blackboard")
        for label, text in (
            ("coordinator_instructions", coordinator_instructions),
            ("decider_instructions", decider_instructions),
        ):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{label} must be a string or None, got {type(text).__name__}")
        if store is not None and not isinstance(store, str | Store):
            raise TypeError(f"store must be a Store or a store URL, got {type(store).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, got {type(on_event).__name__}")
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a zero-argument callable returning a datetime, got {type(clock).__name__}")
        if isinstance(view_budget, bool) or not isinstance(view_budget, int) or view_budget < 1:
            raise ValueError(f"view_budget must be a positive number of characters, got {view_budget!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.agents: dict[str, Agent] = dict(agents)
        self.coordinator = coordinator
        self.decider = decider
        self.model = model
        self.max_rounds = max_rounds
        self.coordinator_instructions = coordinator_instructions or DEFAULT_COORDINATOR_INSTRUCTIONS
        self.decider_instructions = decider_instructions
        self.store = store
        # A budget written for seed 004 (allows_step() without arguments) is adapted here.
        self.budget: BudgetPolicy = seed_budget(budget, BudgetStatus) if budget is not None else Budget()
        self.on_event = on_event
        self.clock: Callable[[], datetime] = clock or _utcnow
        self.view_budget = view_budget
        self.constrain_coordinator = bool(constrain_coordinator)
        self.name = name
        self._models: dict[str, Model] = {}
        self._listeners: list[asyncio.Queue[RunEvent | None]] = []
        blackboard_blueprint(list(self.agents), view_budget=view_budget)  # fail fast on bad names
        # Resolve every model now: an unknown form or a missing API key fails here, at build
        # time, not in round 1. "local" is left to the first run (it loads weights).
        members = [*self.agents.values(), *(m for m in (coordinator, decider) if m is not None)]
        for member in members:
            chosen = member.model if member.model is not None else self.model
            if not (isinstance(chosen, str) and chosen.strip().lower().startswith("local")) and chosen is not None:
                self.model_for(member)

    @classmethod
    def blackboard(
        cls,
        agents: Mapping[str, Agent],
        *,
        coordinator: Agent | None = None,
        decider: Agent | None = None,
        model: Model | str | None = None,
        max_rounds: int = 10,
        coordinator_instructions: str | None = None,
        decider_instructions: str | None = None,
        store: Store | str | None = None,
        budget: BudgetPolicy | Any | None = None,
        on_event: EventCallback | None = None,
        clock: Callable[[], datetime] | None = None,
        view_budget: int = 100_000,
        constrain_coordinator: bool = True,
        name: str = "blackboard",
        **unsupported: Any,
    ) -> Team:
        """A blackboard team (see the module docstring); ``agents`` may be passed positionally,
        as in loomflow.

        ``model`` is the model of every agent, the coordinator and the decider that has none of
        its own (``"local"`` when neither is given); model strings are resolved here, so an
        unknown form (``ModelConfigError`` listing the accepted ones) or a missing API key fails
        at construction. ``coordinator=None`` picks agents round-robin; ``decider=None``
        answers with the last ``answer`` entry, else the last contribution, else "". ``store``
        is a Store (kept open) or a store URL (opened and closed by each run; default
        ``memory://``). ``budget`` is checked before every round: a ``BudgetPolicy``
        (``allows_step(spent)``) or a loomflow-style budget whose ``allows_step()`` takes no
        arguments. ``clock`` stamps entries (UTC). ``view_budget`` bounds each agent's view in
        characters. ``constrain_coordinator`` sends the answer's JSON schema to the
        coordinator's model. Reserved agent names (``user``, ``system``, ``__*``) and names over
        200 characters raise ValueError; loomflow keywords slateboard does not take raise
        ``UnsupportedOption`` naming the equivalent.
        """
        return cls(
            agents,
            coordinator=coordinator,
            decider=decider,
            model=model,
            max_rounds=max_rounds,
            coordinator_instructions=coordinator_instructions,
            decider_instructions=decider_instructions,
            store=store,
            budget=budget,
            on_event=on_event,
            clock=clock,
            view_budget=view_budget,
            constrain_coordinator=constrain_coordinator,
            name=name,
            **unsupported,
        )

    # -- models -------------------------------------------------------------------------------
    def model_for(self, agent: Agent) -> Model:
        """The resolved model of an agent (its own, else the team's, else ``"local"``); model
        strings are resolved once per team."""
        chosen = agent.model if agent.model is not None else self.model
        if chosen is None:
            chosen = "local"
        if not isinstance(chosen, str):
            return resolve_model(chosen)
        if chosen not in self._models:
            self._models[chosen] = resolve_model(chosen)
        return self._models[chosen]

    # -- events -------------------------------------------------------------------------------
    def events(self) -> AsyncIterator[RunEvent]:
        """Subscribe now; iterate the events of the next run until it ends (call before run)."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._listeners.append(queue)
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[RunEvent | None]) -> AsyncIterator[RunEvent]:
        try:
            while (item := await queue.get()) is not None:
                yield item
        finally:
            if queue in self._listeners:
                self._listeners.remove(queue)

    def stream(self, prompt: str) -> TeamStream:
        """Run ``prompt`` while iterating its events: ``async for ev in (s := team.stream(p))``;
        ``s.result`` holds the TeamResult once the iteration ends."""
        return TeamStream(self, prompt)

    # -- running ------------------------------------------------------------------------------
    async def run(self, prompt: str, *, on_event: EventCallback | None = None, **unsupported: Any) -> TeamResult:
        """Run the team on ``prompt`` (see the module docstring); ``on_event`` is called with each
        event in addition to the team's callback and subscribers. loomflow's ``run`` keywords
        (``emit``, ``user_id``, ``session_id``, ...) raise ``UnsupportedOption`` naming the
        equivalent, before anything runs."""
        refuse_unsupported("Team.run", unsupported, RUN_EQUIVALENTS)
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        # Subscriptions made before this call belong to this run (they end with it).
        listeners, self._listeners = self._listeners, []
        callbacks = [cb for cb in (self.on_event, on_event) if cb is not None]
        failures: list[RunEvent] = []

        def watch(event: RunEvent) -> None:
            if event.kind == DECIDER_FAILED:
                failures.append(event)

        started_at = datetime.now(UTC)
        store, owned = await self._open_store()
        try:
            run = _BlackboardRun(self, store, listeners, [watch, *callbacks])
            result = await run.execute(prompt)
            error = failures[-1].data.get("error") if failures else None
            return dataclasses.replace(
                result,
                started_at=started_at,
                finished_at=datetime.now(UTC),
                decider_failed=bool(failures),
                decider_error=str(error) if failures and error is not None else None,
                turns=int(getattr(run, "calls", 0)),
            )
        finally:
            for q in listeners:
                q.put_nowait(None)
            if owned:
                await store.close()

    def run_sync(self, prompt: str, *, on_event: EventCallback | None = None, **unsupported: Any) -> TeamResult:
        """``run`` from synchronous code (starts an event loop; not from inside a running one);
        loomflow's ``run`` keywords are refused as in ``run``, before the loop starts."""
        refuse_unsupported("Team.run_sync", unsupported, RUN_EQUIVALENTS)
        return asyncio.run(self.run(prompt, on_event=on_event))

    async def _open_store(self) -> tuple[Store, bool]:
        if self.store is None or isinstance(self.store, str):
            return await open_store(self.store or "memory://"), True
        return self.store, False


class TeamStream:
    """Async iteration over one run's events; ``result`` is set when the run has ended."""

    def __init__(self, team: Team, prompt: str) -> None:
        self.team = team
        self.prompt = prompt
        self.result: TeamResult | None = None

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[RunEvent]:
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        task = asyncio.create_task(self.team.run(self.prompt, on_event=queue.put_nowait))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            self.result = await task
        finally:
            if not task.done():
                task.cancel()


# -- one run --------------------------------------------------------------------------------------
class _BlackboardRun:
    def __init__(
        self,
        team: Team,
        store: Store,
        listeners: list[asyncio.Queue[RunEvent | None]],
        callbacks: list[EventCallback],
    ) -> None:
        self.team = team
        self.store = store
        self.listeners = listeners
        self.callbacks = callbacks
        self.board_id = ""
        self.started = time.monotonic()
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.rounds = 0
        self.compiled: CompiledBlueprint
        self.engine: StepEngine

    # -- plumbing -----------------------------------------------------------------------------
    async def emit(self, kind: str, **data: JSON) -> None:
        event = RunEvent(kind, self.board_id, data)
        for q in self.listeners:
            q.put_nowait(event)
        for cb in self.callbacks:
            out = cb(event)
            if inspect.isawaitable(out):
                await out

    def spend(self) -> Spend:
        return Spend(self.rounds, self.calls, self.tokens_in, self.tokens_out, time.monotonic() - self.started)

    def count(self, usage: Usage, calls: int = 1) -> None:
        self.calls += calls
        self.tokens_in += usage.tokens_in
        self.tokens_out += usage.tokens_out

    @property
    def kernel(self) -> Kernel:
        return self.engine.kernel

    async def append(self, decision: Decision) -> None:
        """Append a decision already prepared on the kernel (the engine's append path)."""
        async with self.engine.lock:
            await self.engine.transact(lambda: decision)

    async def action(self, kind: str, reason: str, **kw: Any) -> None:
        async with self.engine.lock:
            await self.engine.transact(lambda: self.kernel.action(kind, reason, **kw))

    async def propose(
        self, worker: Worker, event: dict[str, JSON], invocation: str, meta: dict[str, JSON]
    ) -> tuple[Record, WorkerReply]:
        """One step of the engine for ``worker``, chosen by the coordinator: the invocation is
        made up by this control loop (not on the store's agenda), so it is neither completed
        nor re-queued; a rejection is shown to the agent in its next view."""
        inv = Invocation(invocation, worker.name, 0, self.rounds, event)
        outcome = await self.engine.step(inv, invocation, meta=meta, stored=False)
        assert outcome.record is not None and outcome.reply is not None  # Solo: never dropped
        return outcome.record, outcome.reply

    def public(self) -> list[dict[str, Any]]:
        state = self.kernel.state
        assert isinstance(state, dict)
        return [e for e in state["public"] if isinstance(e, dict)]

    # -- the loop -----------------------------------------------------------------------------
    async def execute(self, prompt: str) -> TeamResult:
        team = self.team
        names = list(team.agents)
        spec = blackboard_blueprint(
            names,
            instructions={n: a.instructions for n, a in team.agents.items()},
            view_budget=team.view_budget,
            name=team.name,
        )
        problem = make_entry("e1", USER_AUTHOR, prompt, kind="problem", at=team.clock())
        spec["initial_state"]["task"] = prompt
        spec["initial_state"]["public"] = [problem]
        spec["initial_state"]["signatures"][USER_AUTHOR] = problem["id"]
        self.compiled = compile_blackboard(spec)
        workers = {
            n: AgentWorker(n, a, team.model_for(a), state=lambda: self.kernel.state, clock=team.clock)
            for n, a in team.agents.items()
        }
        coordinator_model = team.model_for(team.coordinator) if team.coordinator is not None else None
        decider = DeciderWorker(
            team.decider,
            team.model_for(team.decider) if team.decider is not None else None,
            instructions=team.decider_instructions,
            state=lambda: self.kernel.state,
        )
        info = await self.store.create_board(
            self.compiled.spec.to_json(),
            self.compiled.initial_state(),
            name=team.name,
            meta={"architecture": "blackboard", "agents": list(names)},
        )
        self.board_id = info.board_id
        # The blackboard runs on the step engine every runner uses (one writer: Solo), with no
        # worker timeout (the seed has none); the coordinator below is its control loop.
        self.engine = StepEngine(self.store, self.board_id, concurrency=Solo(), worker_timeout=None)
        accounts = Accounts(tail_size=1, keep_history=False)  # no approvals, no circuit policy
        self.engine.reset(self.compiled, Kernel(self.compiled), Scheduler(self.compiled), Agenda(), accounts)
        self.engine.workers = {**workers, decider.name: decider}
        try:
            return await self._loop(names, workers, coordinator_model, decider)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.store.set_status(self.board_id, "failed", "the run raised an exception")
            raise

    async def _loop(
        self,
        names: list[str],
        workers: dict[str, AgentWorker],
        coordinator_model: Model | None,
        decider: DeciderWorker,
    ) -> TeamResult:
        team = self.team
        await self.emit(
            STARTED,
            agents=list(names),
            has_coordinator=team.coordinator is not None,
            has_decider=team.decider is not None,
        )
        end_reason = "max_rounds"
        for round_num in range(1, team.max_rounds + 1):
            status = await team.budget.allows_step(self.spend())
            if status.blocked:
                return await self._interrupt(round_num, status)
            self.rounds = round_num
            decision = await self._coordinate(round_num, names, coordinator_model)
            await self.emit(
                COORDINATOR_DECIDED,
                round=round_num,
                terminate=decision.terminate,
                next_agent=decision.next_agent,
                raw=decision.raw[:_PREVIEW],
            )
            if decision.terminate:
                end_reason = "terminated"
                break
            if decision.next_agent is None:
                why = "no JSON decision could be read" if not decision.parsed else "the coordinator named no agent"
                await self.emit(NO_CONTRIBUTOR, round=round_num, reason=why)
                continue
            if decision.next_agent not in workers:
                await self._post_error(
                    round_num, f"Coordinator picked unknown agent {decision.next_agent!r}; skipping."
                )
                await self.emit(UNKNOWN_AGENT, round=round_num, agent_name=decision.next_agent)
                continue
            agent = decision.next_agent
            await self.emit(INVOKING, round=round_num, agent=agent)
            event: dict[str, JSON] = {
                "kind": "coordinator",
                "round": round_num,
                "agent": agent,
                "instruction": decision.instruction,
            }
            outcome, reply = await self.propose(
                workers[agent], event, f"round-{round_num}", {"round": round_num, "control": decision.raw[:_PREVIEW]}
            )
            self.count(reply.usage)
            if outcome.outcome == "accepted":
                entry = self.public()[-1]
                await self.emit(CONTRIBUTION, round=round_num, agent=agent, content=str(entry["content"])[:_PREVIEW])
            else:
                await self.emit(
                    REJECTED,
                    round=round_num,
                    agent=agent,
                    stage=outcome.stage,
                    reason=(outcome.reason or "")[:_PREVIEW],
                    error=reply.error,
                )
        final = await self._decide(decider)
        await self.emit(COMPLETED, final=final[:_PREVIEW], board_size=len(self.public()))
        return await self._finish(end_reason, final)

    async def _coordinate(self, round_num: int, names: list[str], model: Model | None) -> CoordinatorDecision:
        team = self.team
        usage = Usage(component="coordinator")
        if team.coordinator is None or model is None:
            decision = round_robin_decision(names, round_num)
        else:
            roles = {n: a.instructions for n, a in team.agents.items()}
            prompt = coordinator_prompt(
                team.coordinator_instructions, roles, bounded_board(self.public(), team.view_budget)
            )
            schema = coordinator_schema(names) if team.constrain_coordinator else None
            reply = await run_agent(team.coordinator, model, prompt, json_schema=schema)
            usage = Usage(reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.latency_ms, "coordinator")
            self.count(usage)
            if reply.error is not None:
                decision = CoordinatorDecision(False, None, None, f"(coordinator failed: {reply.error})", parsed=False)
            else:
                decision = parse_coordinator_decision(reply.text)
        if decision.terminate:
            reason = "terminate"
        elif decision.next_agent is None:
            reason = "no contributor" if decision.parsed else "unreadable decision: no contributor"
        else:
            reason = f"next agent: {decision.next_agent}"
        await self.action(
            "control",
            f"round {round_num}: {reason}",
            worker="__coordinator",
            invocation=f"round-{round_num}",
            meta={
                "event": COORDINATOR_DECIDED,
                "round": round_num,
                "terminate": decision.terminate,
                "next_agent": decision.next_agent,
                "instruction": decision.instruction,
                "parsed": decision.parsed,
                "raw": decision.raw[:2000],
            },
            usage=usage,
        )
        return decision

    async def _post_error(self, round_num: int, message: str) -> None:
        entry_id = f"e{len(self.public()) + 1}"
        entry = make_entry(entry_id, SYSTEM_AUTHOR, message, kind="error", at=self.team.clock())
        proposal = Proposal(
            SYSTEM_WORKER,
            [
                {"op": "add", "path": "/public/-", "value": entry},
                {"op": "add", "path": f"/signatures/{SYSTEM_AUTHOR}", "value": entry_id},
            ],
            viewed_version=self.kernel.version,
            invocation=f"round-{round_num}",
            event={"kind": "coordinator", "round": round_num},
            usage=Usage(component="system"),
            meta={"round": round_num},
        )
        await self.append(self.kernel.prepare(proposal))

    async def _decide(self, decider: DeciderWorker) -> str:
        event: dict[str, JSON] = {"kind": "decide", "rounds": self.rounds}
        outcome, reply = await self.propose(decider, event, "decide", {"rounds": self.rounds})
        if decider.agent is not None:
            self.count(reply.usage)
        if reply.error is not None:
            await self.emit(DECIDER_FAILED, error=reply.error[:_PREVIEW])
        ops = reply.patch if isinstance(reply.patch, list) else []
        value = ops[0].get("value") if ops and isinstance(ops[0], dict) else None
        final = value if isinstance(value, str) else ""
        if outcome.outcome == "rejected":
            await self.emit(REJECTED, round=None, agent=decider.name, stage=outcome.stage, reason=outcome.reason)
        return final

    async def _interrupt(self, round_num: int, status: BudgetStatus) -> TeamResult:
        reason = f"budget:{status.reason}"
        spent = self.spend()
        await self.emit(
            BUDGET_EXCEEDED,
            round=round_num,
            reason=status.reason,
            tokens=spent.total_tokens,
            calls=spent.calls,
        )
        return await self._finish(reason, "", interrupted=True)

    async def _finish(self, end_reason: str, final: str, *, interrupted: bool = False) -> TeamResult:
        await self.action(
            "run",
            end_reason,
            meta={"event": "run.ended", "rounds": self.rounds, "final": final[:_PREVIEW], "interrupted": interrupted},
        )
        await self.store.set_status(self.board_id, "done", end_reason)
        records = await self.store.read_records(self.board_id)
        return TeamResult(
            output=final,
            board_id=self.board_id,
            end_reason=end_reason,
            rounds=self.rounds,
            state=self.kernel.state,
            interrupted=interrupted,
            interruption_reason=end_reason if interrupted else None,
            usage=usage_by(records, "component"),
            usage_by_agent=usage_by([r for r in records if r.kind == "proposal"], "worker"),
        )
