"""``Team.blackboard``: the classic coordinator/agents/decider loop, run on the runtime's engine.

Each ``run(prompt)`` creates a board from the built-in blueprint (slateboard.team._board) with
the problem as its first public entry, loads it into a ``runtime.session.BoardSession`` (the
step engine, circuit policy and approvals every Runner uses) and plays rounds:

1. the circuit policy's halt and the budget are checked: a halted run ends ``circuit: ...``,
   an exhausted budget interrupts it (neither runs the decider, neither answers);
2. the control unit (``team._control.TeamControl``: the coordinator Agent answering
   ``{"terminate", "next_agent", "instruction"}``, or round-robin when there is none) decides;
   the decision is logged as a ``control`` record whose append also pushes the chosen agent's
   turn onto the board's agenda (invocation ``round-<n>``);
3. terminate ends the loop; no agent (or an unreadable answer) skips the round; an unknown
   agent makes the system post an ``error`` entry and skips the round;
4. the turn is claimed from the store (a lease) and taken through ``StepEngine.step``: the
   agent's view, its worker, the kernel's decision, one append that logs the record and
   completes the turn, commit; then the circuit policy, and the classic board's stuck
   detector (``echo_check``). A rejected turn is not retried: the next round decides. An entry
   held for approval (``approval=``/``approval_paths=``) is decided through
   ``runtime.approval`` and committed by the session, or pauses the run;

until the coordinator terminates or ``max_rounds`` rounds were played. With ``parallel=True``
(no coordinator) each round is one ``control`` record pushing every agent's turn, the turns'
models run concurrently from the round's board, and their proposals are decided in agent order
(``slateboard.team._parallel``). Then the decider (an
Agent, or the fallback: last ``answer`` entry, else last contribution, else "") writes
``/answer`` in its own turn. The board's log is the audit trail: it verifies with
``slateboard.kernel.replay`` and can be read with the same tools as any other board; and it is
enough to go on: ``Team.resume(board_id)`` continues a run that died from what it logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ..blueprint.compile import compile_blueprint
from ..blueprint.output_type import OutputType
from ..kernel.canonical import JSON
from ..models import Model, resolve_model
from ..models.pricing import PriceTable
from ..runtime.events import EventKind, RunEvent, stream_modes
from ..stores import open_store
from ..stores.base import Store
from ..streaming import StreamTap, streaming_to
from ._agent import _utcnow
from ._agent_spec import Agent
from ._board import USER_AUTHOR, blackboard_blueprint, make_entry
from ._compat import RUN_EQUIVALENTS, TEAM_EQUIVALENTS, refuse_unsupported, seed_budget
from ._control import DEFAULT_MAX_REPEATS
from ._coordinate import DEFAULT_COORDINATOR_INSTRUCTIONS
from ._events import BLACKBOARD_EVENTS, BUDGET_EXCEEDED, DECIDER_FAILED, EventCallback
from ._options import TeamOptions
from ._quarantine import Sanitiser, quarantine_board
from ._result import ApprovalPolicy, ApprovalRequest, Budget, BudgetPolicy, BudgetStatus, ResumeError, Spend, TeamResult
from ._run import _BlackboardRun

__all__ = [
    "BLACKBOARD_EVENTS",
    "BUDGET_EXCEEDED",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Budget",
    "BudgetPolicy",
    "BudgetStatus",
    "EventCallback",
    "ResumeError",
    "Spend",
    "Team",
    "TeamResult",
    "TeamStream",
]

_RUN_STORE = "memory://?snapshot_every=0"
"""The store of a run given none: in memory, opened by the run and closed at its end, so no one
can load the board from it afterwards, and without snapshots. A snapshot is a copy of the whole
state built every ``snapshot_every`` records (default 100) from the previous one and the log,
only ever read to load the board; here it would cost O(board) per 100 records for nothing, a
step cost that grows with the board (~1 ms a step at 5,000 entries). The log is the same."""


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
        approval: ApprovalPolicy | None = None,
        approval_paths: Iterable[str] | None = None,
        circuit: Mapping[str, Any] | None = None,
        parallel: bool = False,
        untrusted: Iterable[str] | None = None,
        sanitiser: Sanitiser | None = None,
        **unsupported: Any,
    ) -> None:
        refuse_unsupported("Team.blackboard", unsupported, TEAM_EQUIVALENTS)
        # A one-shot iterable (a generator) would be used up by the check below and then read as
        # empty: take each iterable once, check that copy and keep it.
        if isinstance(untrusted, Iterator):
            untrusted = tuple(untrusted)
        if isinstance(approval_paths, Iterator):
            approval_paths = tuple(approval_paths)
        TeamOptions.of(
            agents=agents,
            coordinator=coordinator,
            decider=decider,
            model=model,
            max_rounds=max_rounds,
            coordinator_instructions=coordinator_instructions,
            decider_instructions=decider_instructions,
            store=store,
            on_event=on_event,
            clock=clock,
            view_budget=view_budget,
            name=name,
            approval=approval,
            approval_paths=approval_paths,
            circuit=circuit,
            parallel=parallel,
            untrusted=untrusted,
            sanitiser=sanitiser,
        )
        self.parallel = parallel
        self.untrusted: tuple[str, ...] = tuple(dict.fromkeys(untrusted or ()))
        self.sanitiser = sanitiser
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
        self.approval = approval
        # An approval policy without paths holds every public contribution.
        self.approval_paths: tuple[str, ...] = tuple(
            approval_paths if approval_paths is not None else (("/public/*",) if approval is not None else ())
        )
        settings = dict(circuit or {})
        self.max_repeats: int = settings.pop("max_repeats", DEFAULT_MAX_REPEATS)
        self.circuit: dict[str, Any] = settings
        self._models: dict[str, Model] = {}
        self._listeners: list[asyncio.Queue[RunEvent | None]] = []
        # Checked now (BlueprintError naming the agent when a type has no JSON Schema); their
        # schemas become the board's at /outputs/<agent> and /answer.
        self.outputs: dict[str, OutputType[Any]] = {
            n: OutputType.of(a.output_type, f"agents/{n}/output_type")
            for n, a in self.agents.items()
            if a.output_type is not None
        }
        self.answer_type: OutputType[Any] | None = (
            OutputType.of(decider.output_type, "decider/output_type")
            if decider is not None and decider.output_type is not None
            else None
        )
        # Fail fast on bad names, circuit settings or approval paths: the board's blueprint
        # compiles now (BlueprintError naming the setting), not at the first run.
        compile_blueprint(self.board_spec())
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
        approval: ApprovalPolicy | None = None,
        approval_paths: Iterable[str] | None = None,
        circuit: Mapping[str, Any] | None = None,
        parallel: bool = False,
        untrusted: Iterable[str] | None = None,
        sanitiser: Sanitiser | None = None,
        **unsupported: Any,
    ) -> Team:
        """A blackboard team (see the module docstring); ``agents`` may be passed positionally,
        as in loomflow.

        ``model`` is the model of every agent, the coordinator and the decider that has none of
        its own (``"local"`` when neither is given); model strings are resolved here, so an
        unknown form (``ModelConfigError`` listing the accepted ones) or a missing API key fails
        at construction. ``coordinator=None`` picks agents round-robin; ``decider=None``
        answers with the last ``answer`` entry, else the last contribution, else "". ``store``
        is a Store (kept open) or a store URL (opened and closed by each run; default: an
        in-memory store of each run's own, which keeps no snapshots). ``budget`` is checked before every round: a ``BudgetPolicy``
        (``allows_step(spent)``) or a loomflow-style budget whose ``allows_step()`` takes no
        arguments. ``clock`` stamps entries (UTC). ``view_budget`` bounds each agent's view in
        characters. ``constrain_coordinator`` sends the answer's JSON schema to the
        coordinator's model. ``approval`` (a callable, maybe async, given an ``ApprovalRequest``
        and answering True/False or ``(bool, note)``) decides every contribution that changes a
        path under ``approval_paths`` (default: the public board) before it is committed, through
        the Runner's approval mechanism: the kernel logs it ``held``, the decision is an
        ``approval`` record, a refused entry is never committed. ``approval_paths`` without
        ``approval`` pauses the run at a held entry (``end_reason`` ``paused: ...``): approve it
        with ``slateboard.runtime.approval.approve`` and ``resume`` the board. ``circuit``
        overrides the circuit policy's thresholds (the blueprint's ``circuit`` keys, e.g.
        ``stuck_after``, ``max_consecutive_invalid``, ``on_invalid``, ``max_alternations``) and
        the classic board's stuck detector: ``max_repeats`` (default 5, 0: off) contributions in
        a row with the same content by one agent halt the run, as do ``max_alternations`` (default
        6) contributions of two agents repeating each other in turn. Reserved agent names (``user``, ``system``, ``__*``) and names over
        200 characters raise ValueError; loomflow keywords slateboard does not take raise
        ``UnsupportedOption`` naming the equivalent.

        ``parallel=True`` (default False; only without a coordinator, else ValueError) plays
        parallel rounds (``slateboard.team._parallel``): every agent takes a turn each round,
        all from the board as it was when the round began, their model calls made concurrently;
        their entries are decided by the kernel and appended one by one in agent order (ids
        follow that order), so the board and its log do not depend on which model answered
        first. A parallel contribution is not checked for staleness against its peers' entries of
        the same round (it could not have seen them; its record's ``meta`` says ``parallel`` and
        the ``round_version`` it viewed); every other kernel check applies. The budget is checked
        before each round, so a round that starts runs every agent's turn (``max_calls`` may be
        passed by up to ``len(agents) - 1`` calls); a circuit halt or an entry awaiting approval
        in the middle of a round drops the round's remaining turns, each logged with its model
        usage. A resumed run takes a dead parallel round's unfinished turns one by one.

        An agent or the decider with ``Agent(output_type=T)`` replies with a ``T``: its JSON
        Schema is the board's at ``/outputs/<agent>`` (beside the agent's entry) or ``/answer``,
        so the kernel rejects a reply that does not fit at stage ``schema``; the turn is then
        retried with that reason (up to the circuit's ``max_consecutive_invalid`` attempts, a
        streak the circuit policy halts on), the schema is sent for constrained decoding, and
        ``TeamResult.output`` / ``TeamResult.outputs`` hold instances. The coordinator takes
        no ``output_type``, nor do untrusted agents (InvalidInput); a type without a JSON Schema
        is a BlueprintError naming the agent, raised here.

        ``untrusted`` (agent names) puts those agents' contributions in quarantine
        (``slateboard.team._quarantine``): the board gets the blueprint's quarantine region, their
        contracts may write only their own array there, and no other agent, the coordinator or the
        decider can read it (views cut it out). ``sanitiser`` (a callable, maybe async, given a
        copy of each quarantined entry right after it is committed) returns the text to release,
        posted on the public board by the system (kind ``released``, its record's ``meta`` naming
        the quarantined entry), or None to withhold it (logged as a ``quarantine`` action). With
        no sanitiser, quarantined entries stay where they are.
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
            approval=approval,
            approval_paths=approval_paths,
            circuit=circuit,
            parallel=parallel,
            untrusted=untrusted,
            sanitiser=sanitiser,
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

    def stream(self, prompt: str, *, modes: Sequence[str] | None = None) -> TeamStream:
        """Run ``prompt`` while iterating its events: ``async for ev in (s := team.stream(p))``;
        ``s.result`` holds the TeamResult once the iteration ends. ``modes`` are those of
        ``Runner.events`` (default ``("events",)``: the team's events); an unknown one raises
        InvalidInput listing the valid ones."""
        return TeamStream(self, prompt, stream_modes(modes))

    # -- running ------------------------------------------------------------------------------
    async def run(self, prompt: str, *, on_event: EventCallback | None = None, **unsupported: Any) -> TeamResult:
        """Run the team on ``prompt`` (see the module docstring); ``on_event`` is called with each
        event in addition to the team's callback and subscribers. loomflow's ``run`` keywords
        (``emit``, ``user_id``, ``session_id``, ...) raise ``UnsupportedOption`` naming the
        equivalent, before anything runs."""
        refuse_unsupported("Team.run", unsupported, RUN_EQUIVALENTS)
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        return await self._drive(lambda run: run.start(prompt), on_event)

    async def resume(self, board_id: str, *, on_event: EventCallback | None = None) -> TeamResult:
        """Go on with a run of this team that stopped (the process died, the task was cancelled,
        an entry awaited approval) from what its board's store logged: committed rounds are not
        played again; a turn the last decision pushed but did not finish is taken (a dead run's
        lease on it is taken over: do not resume a board another process is still running); a
        held entry is put to ``approval`` (or committed once approved with
        ``slateboard.runtime.approval.approve``); then the rounds go on to the same end an
        uninterrupted run reaches. A board whose run ended returns that run's result and
        appends nothing. ``store`` must be the store the run used (a Store or a persistent URL);
        the team must have the same agents (else ``ResumeError``). The budget sees the spend the
        log holds (rounds, calls, tokens; seconds count from the resume)."""
        if not isinstance(board_id, str) or not board_id:
            raise TypeError(f"board_id must be a board id string, got {board_id!r}")
        return await self._drive(lambda run: run.resume(board_id), on_event)

    async def _drive(
        self,
        go: Callable[[_BlackboardRun], Awaitable[TeamResult]],
        on_event: EventCallback | None,
        *,
        store: Store | None = None,
    ) -> TeamResult:
        # Subscriptions made before this call belong to this run (they end with it).
        listeners, self._listeners = self._listeners, []
        callbacks = [cb for cb in (self.on_event, on_event) if cb is not None]
        failures: list[RunEvent] = []

        def watch(event: RunEvent) -> None:
            if event.kind == DECIDER_FAILED:
                failures.append(event)

        started_at = datetime.now(UTC)
        store, owned = (store, False) if store is not None else await self._open_store()
        try:
            result = await go(_BlackboardRun(self, store, listeners, [watch, *callbacks]))
            error = failures[-1].data.get("error") if failures else None
            return dataclasses.replace(
                result,
                started_at=started_at,
                finished_at=datetime.now(UTC),
                decider_failed=bool(failures),
                decider_error=str(error) if failures and error is not None else None,
            )
        finally:
            for q in listeners:
                q.put_nowait(None)
            if owned:
                await store.close()

    def board_spec(self, prompt: str | None = None, *, at: datetime | None = None) -> dict[str, Any]:
        """The blueprint (plain JSON) of this team's board: the built-in blackboard for its
        agents, with the problem ``prompt`` as the first public entry (stamped ``at``) when
        given; the circuit policy's thresholds (``circuit=``; an agent's
        ``max_consecutive_invalid`` rejections in a row halt the run); the approval paths when
        ``approval=``/``approval_paths=`` are set; rounds, not steps, bound the run."""
        names = list(self.agents)
        spec = blackboard_blueprint(
            names,
            instructions={n: a.instructions for n, a in self.agents.items()},
            view_budget=self.view_budget,
            name=self.name,
            outputs={n: o.schema for n, o in self.outputs.items()},
            answer=self.answer_type.schema if self.answer_type is not None else None,
        )
        if self.untrusted:
            spec = quarantine_board(spec, self.untrusted)
        # Each round appends at most two proposals (an unknown agent's error entry, or a held
        # entry and its approved commit), and the decider one: max_rounds governs, not max_steps.
        # A parallel round appends up to two proposals per agent.
        per_round = 2 * len(names) if self.parallel else 2
        spec["limits"] = {"max_steps": per_round * self.max_rounds + 2}
        if isinstance(self.budget, Budget) and self.budget.prices:
            table = PriceTable.from_mapping(self.budget.prices, use_genai_prices=False).prices
            spec["limits"]["prices"] = {m: {"input": p.input, "output": p.output} for m, p in table.items()}
        # The coordinator picks who goes next, and an agent's view already shows its recent
        # rejections: a streak of rejections halts rather than queueing retries outside the rounds.
        spec["circuit"] = {"on_invalid": "halt", **self.circuit}
        if self.approval_paths:
            spec["approval"] = list(self.approval_paths)
        if prompt is not None:
            problem = make_entry("e1", USER_AUTHOR, prompt, kind="problem", at=at or self.clock())
            spec["initial_state"]["task"] = prompt
            spec["initial_state"]["public"] = [problem]
            spec["initial_state"]["signatures"][USER_AUTHOR] = problem["id"]
        return spec

    def run_sync(self, prompt: str, *, on_event: EventCallback | None = None, **unsupported: Any) -> TeamResult:
        """``run`` from synchronous code (starts an event loop; not from inside a running one);
        loomflow's ``run`` keywords are refused as in ``run``, before the loop starts."""
        refuse_unsupported("Team.run_sync", unsupported, RUN_EQUIVALENTS)
        return asyncio.run(self.run(prompt, on_event=on_event))

    async def _open_store(self) -> tuple[Store, bool]:
        """The run's store, and whether the run owns it (opened here, closed at its end)."""
        if self.store is None:
            return await open_store(_RUN_STORE), True
        if isinstance(self.store, str):
            return await open_store(self.store), True
        return self.store, False


class TeamStream:
    """Async iteration over one run's events; ``result`` is set when the run has ended."""

    def __init__(self, team: Team, prompt: str, modes: Sequence[str] = ("events",)) -> None:
        self.team = team
        self.prompt = prompt
        self.modes = frozenset(stream_modes(modes))
        self.result: TeamResult | None = None

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[RunEvent]:
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        modes = self.modes
        put: EventCallback = queue.put_nowait if "events" in modes else _ignore

        def deliver(kind: EventKind, board_id: str, data: dict[str, JSON]) -> None:
            queue.put_nowait(RunEvent(kind, board_id, data))

        tap = StreamTap.of(deliver, asyncio.get_running_loop(), modes) if modes - {"events"} else None
        with streaming_to(tap):  # the run's task copies the context: the tap goes with it
            task = asyncio.create_task(self.team.run(self.prompt, on_event=put))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            self.result = await task
        finally:
            if not task.done():
                task.cancel()


def _ignore(event: RunEvent) -> None:
    """An event callback that drops the event (a stream that did not ask for ``events``)."""
