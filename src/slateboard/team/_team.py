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
import contextlib
import copy
import dataclasses
import inspect
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..blueprint.compile import compile_blueprint
from ..blueprint.output_type import OutputType
from ..errors import StoreError, UsageError
from ..kernel.canonical import JSON
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.pointer import escape_token
from ..kernel.record import CIRCUIT_KIND, CONTROL_KIND, QUARANTINE_KIND, RUN_KIND, Record, Usage
from ..models import Model, resolve_model
from ..models.pricing import PriceTable
from ..redaction import redact
from ..runtime.approval import Held, approve, refuse
from ..runtime.boards import RUN_ENDED, RunnerError, status_for, waiting_approvals
from ..runtime.events import RunEvent, stream_modes
from ..runtime.ledger import Ledger, SpendGuard, SpendLimits, spend_limits
from ..runtime.result import TokenUsage, cost_by, cost_of, price_table, usage_by
from ..runtime.session import BoardSession
from ..runtime.step import ONCE_KEY, Transacted
from ..scheduling.invocation import Invocation
from ..status import BUDGET_PREFIX, MAX_ROUNDS, TERMINATED
from ..stores import open_store
from ..stores.base import AgendaChanges, Store
from ..streaming import StreamTap, streaming_to
from ..workers.base import Worker, WorkerReply
from ._agent import Agent, AgentWorker, DeciderWorker, _utcnow, bounded_board
from ._board import (
    SYSTEM_AUTHOR,
    SYSTEM_WORKER,
    USER_AUTHOR,
    blackboard_blueprint,
    compile_blackboard,
    make_entry,
)
from ._compat import RUN_EQUIVALENTS, TEAM_EQUIVALENTS, refuse_unsupported, seed_budget
from ._control import (
    CONTROL_WORKER,
    COORDINATOR_DECIDED,
    DECIDE_INVOCATION,
    DEFAULT_MAX_REPEATS,
    Choice,
    EchoTail,
    Progress,
    Tally,
    TeamControl,
    decide_invocation,
    echo_check,
    round_id,
    round_invocation,
)
from ._coordinate import DEFAULT_COORDINATOR_INSTRUCTIONS
from ._options import TeamOptions
from ._parallel import (
    PARALLEL_META,
    PARALLEL_RAW,
    TURN_DROPPED,
    parallel_control_meta,
    parallel_invocation,
    renumber,
)
from ._quarantine import RELEASED_KIND, QuarantineWorker, Sanitiser, quarantine_board

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

STARTED = "blackboard.started"
NO_CONTRIBUTOR = "blackboard.no_contributor"
UNKNOWN_AGENT = "blackboard.unknown_agent"
INVOKING = "blackboard.invoking"
CONTRIBUTION = "blackboard.contribution"
REJECTED = "blackboard.rejected"
DECIDER_FAILED = "blackboard.decider_failed"
log = logging.getLogger("slateboard.team")
T = TypeVar("T")

APPROVAL = "blackboard.approval"
HALTED = "blackboard.halted"
COMPLETED = "blackboard.completed"
QUARANTINED = "blackboard.quarantined"
RELEASED = "blackboard.released"
WITHHELD = "blackboard.withheld"
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
    APPROVAL,
    HALTED,
    COMPLETED,
    QUARANTINED,
    RELEASED,
    WITHHELD,
    BUDGET_EXCEEDED,
)
"""Every event kind a blackboard run emits."""

EventCallback = Callable[[RunEvent], Any]
"""Called with each event (an awaitable result is awaited)."""

_PREVIEW = 300
_RUN_STORE = "memory://?snapshot_every=0"
"""The store of a run given none: in memory, opened by the run and closed at its end, so no one
can load the board from it afterwards, and without snapshots. A snapshot is a copy of the whole
state built every ``snapshot_every`` records (default 100) from the previous one and the log,
only ever read to load the board; here it would cost O(board) per 100 records for nothing, a
step cost that grows with the board (~1 ms a step at 5,000 entries). The log is the same."""
_LEASE_S = 60.0
"""The lease a run holds on the turn it is taking (extended while the agent's model runs)."""


class ResumeError(UsageError, ValueError):
    """``Team.resume`` was given a board that is not a blackboard of this team."""


# -- approval -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """An agent's contribution held for approval before it is committed: the board, the round,
    the agent, the ``seq`` of the logged ``held`` record, the public ``entry`` it would append
    (None when the patch appends none), the whole ``patch`` (JSON ops), and the kernel's reason
    (which paths need approval)."""

    board_id: str
    round: int | None
    agent: str
    seq: int
    entry: dict[str, Any] | None
    patch: list[dict[str, Any]]
    reason: str


ApprovalPolicy = Callable[[ApprovalRequest], "bool | tuple[bool, str] | Awaitable[bool | tuple[bool, str]]"]
"""Decides a held contribution: True (approve) or False (refuse), optionally with a note
``(bool, note)``; may be async."""


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
    once any limit is reached (spent >= limit).

    ``max_cost`` (dollars) and ``ledgers`` (``(ledger, name)`` pairs of shared spend ledgers,
    caps already set) are hard limits held per model call, as ``Runner(max_cost=, ledgers=)``
    holds them: every call of an agent, the coordinator and the decider reserves its worst case
    first, a call that does not fit is not made, and the run ends ``budget:<ledger>`` (``board``
    for ``max_cost``). ``prices`` (``{model: {"input": $, "output": $}}`` per million tokens,
    ``*`` for any other model) goes into the board's ``limits.prices``: what the cap and
    ``TeamResult.cost_usd`` price with. A cap that is not a number > 0, or a bad price table,
    raises ``InvalidInput`` naming the value."""

    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None
    max_cost: float | None = None
    ledgers: tuple[tuple[Ledger, str], ...] = ()
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        spend_limits(self.max_cost, self.ledgers)  # raises for a bad cap
        PriceTable.from_mapping(self.prices, use_genai_prices=False)  # raises for a bad table

    def spend_limits(self) -> SpendLimits | None:
        """The hard limits of a run under this budget (None: none, no reservation work)."""
        return spend_limits(self.max_cost, self.ledgers)

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

    ``output`` is the decider's answer ("" when the run was interrupted); with a decider
    ``Agent(output_type=T)`` it is an instance of ``T`` built from the committed ``/answer``
    (None when no reply fitted the schema, or the run was interrupted), and ``value`` is its
    JSON text. ``outputs`` holds each typed agent's accepted values, as instances, in board
    order. ``end_reason`` is
    ``"terminated"`` (the coordinator stopped), ``"max_rounds"``, ``"budget:<reason>"``,
    ``"circuit: <reason>"`` (the circuit policy halted the run: ``halted``) or ``"paused:
    awaiting approval of record <seq>"``; in the last three ``interrupted`` is True and
    ``interruption_reason`` holds it. ``state`` is the final
    board state, ``rounds`` the rounds started, ``usage`` tokens per component (``coordinator``,
    ``worker``, ``decider``) and ``usage_by_agent`` per blueprint worker, both from the log.
    ``started_at``/``finished_at`` are the UTC times ``run`` started and ended; ``decider_failed``
    is True when the decider's model failed and the fallback answer was used, ``decider_error``
    says why; ``turns`` counts the run's model calls. ``cost_usd`` (loomflow's field) is the
    log's usage priced with the blueprint's ``limits.prices`` over the built-in table, ``None``
    when some model is unpriced; ``cost_by_component``/``cost_by_agent`` split it like usage. ``value``, ``run_id``, ``tokens_in``, ``tokens_out``, ``turns`` and ``duration``
    are what loomflow's ``RunResult`` users read.
    """

    output: Any
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
    cost_usd: float | None = 0.0
    cost_by_component: dict[str, float | None] = field(default_factory=dict)
    cost_by_agent: dict[str, float | None] = field(default_factory=dict)
    text: str | None = None
    """The answer's text when ``output`` is typed (its JSON); None when ``output`` is the text."""
    outputs: dict[str, list[Any]] = field(default_factory=dict)

    # -- what loomflow's RunResult users read ---------------------------------------------------
    @property
    def value(self) -> str:
        """The answer as text (loomflow's ``RunResult.value``): ``output`` itself, or the JSON
        text of a typed ``output``."""
        if self.text is not None:
            return self.text
        return self.output if isinstance(self.output, str) else ""

    def output_as(self, output_type: type[T]) -> T:
        """``output``, statically typed: it must be an instance of ``output_type`` (the decider's
        ``output_type``), else TypeError saying what it is."""
        if not isinstance(self.output, output_type):
            raise TypeError(f"the output is {type(self.output).__name__}, not {output_type.__name__}")
        return self.output

    @property
    def halted(self) -> bool:
        """True when the circuit policy halted the run (``end_reason`` says why)."""
        return self.end_reason.startswith("circuit")

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
        return self.value


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
        approval_paths: Sequence[str] | None = None,
        circuit: Mapping[str, Any] | None = None,
        parallel: bool = False,
        untrusted: Sequence[str] | None = None,
        sanitiser: Sanitiser | None = None,
        **unsupported: Any,
    ) -> None:
        refuse_unsupported("Team.blackboard", unsupported, TEAM_EQUIVALENTS)
        TeamOptions(
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
        ).validate()
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
        approval_paths: Sequence[str] | None = None,
        circuit: Mapping[str, Any] | None = None,
        parallel: bool = False,
        untrusted: Sequence[str] | None = None,
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
        self, go: Callable[[_BlackboardRun], Awaitable[TeamResult]], on_event: EventCallback | None
    ) -> TeamResult:
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

        def deliver(kind: str, board_id: str, data: dict[str, JSON]) -> None:
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


# -- one run --------------------------------------------------------------------------------------
class _BlackboardRun:
    """One run (or resumed run) of a team's board, driven on a ``BoardSession``'s step engine.

    Each round: the budget and the circuit policy's halt are checked; ``TeamControl`` decides;
    the decision is logged as a ``control`` record whose append pushes the chosen agent's
    invocation on the board's agenda; the invocation is claimed from the store (a lease) and
    taken through ``StepEngine.step`` (view, worker, kernel, one append that completes it,
    commit) followed by the circuit policy, as in every Runner step."""

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
        self.owner = f"team-{uuid.uuid4().hex[:8]}"
        self.rounds = 0
        self.tally = Tally()
        self.takeover: set[str] = set()
        """Invocations a dead run had claimed (``resume``): this run takes their lease over."""
        self.session: BoardSession
        self.control: TeamControl
        self.decider: DeciderWorker
        self.echo: EchoTail
        self.guard: SpendGuard | None = None
        """The run's spend guard (``Budget(max_cost=...)`` or ``ledgers``), else None."""

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
        """What the board's log adds up to (the same fold for a fresh and a resumed run)."""
        t = self.tally.fold(self.session.history)
        return Spend(t.rounds, t.calls, t.tokens_in, t.tokens_out, time.monotonic() - self.started)

    @property
    def kernel(self) -> Kernel:
        return self.session.kernel

    def public(self) -> list[Any]:
        """The committed public board: the kernel state's own list, not a copy (a round must
        not cost O(board)); read it, count it or slice its tail, never change it."""
        state = self.kernel.state
        assert isinstance(state, dict) and isinstance(state["public"], list)
        return state["public"]

    async def open(self) -> None:
        """Load the board into a session whose workers are the team's agents and decider."""
        team = self.team
        state: Callable[[], JSON] = lambda: self.session.kernel.state  # noqa: E731
        workers: dict[str, Worker] = {
            n: AgentWorker(n, a, team.model_for(a), state=state, clock=team.clock) for n, a in team.agents.items()
        }
        self.decider = DeciderWorker(
            team.decider,
            team.model_for(team.decider) if team.decider is not None else None,
            instructions=team.decider_instructions,
            state=state,
        )
        agent_workers = [w for w in workers.values() if isinstance(w, AgentWorker)]
        for n in team.untrusted:
            workers[n] = QuarantineWorker(workers[n], state)
        workers[self.decider.name] = self.decider
        # serve=(): build no worker from the blueprint, use the team's; no engine events (the
        # run emits the blackboard.* events); no worker timeout (the seed has none).
        self.session = BoardSession(
            self.store, self.board_id, workers=workers, serve=(), emit=_quiet, compile=compile_blackboard
        )
        self.session.worker_timeout = None
        await self.session.load()
        self.echo = EchoTail(
            repeats=team.max_repeats, alternations=self.session.blueprint.spec.circuit.max_alternations
        )
        self.control = TeamControl(
            list(team.agents),
            {n: a.instructions for n, a in team.agents.items()},
            coordinator=team.coordinator,
            model=team.model_for(team.coordinator) if team.coordinator is not None else None,
            instructions=team.coordinator_instructions,
            constrain=team.constrain_coordinator,
        )
        limits = team.budget.spend_limits() if isinstance(team.budget, Budget) else None
        if limits is not None:
            # issue 33: every model call of the run reserves first; a resumed run's cap counts
            # what the board's log already cost (unknown: nothing; an unpriced model is refused)
            table = price_table(self.session.blueprint.spec.limits.prices)
            self.guard = await limits.guard(table, spent=cost_of(self.session.history, table) or 0.0)
            members: list[AgentWorker | DeciderWorker | TeamControl] = [*agent_workers, self.decider, self.control]
            for member in members:
                member.spend = self.guard

    async def transact(self, prepare: Callable[[], Decision | None], changes: Any = None) -> Record:
        """One append through the engine (compare-and-set, then commit or abort)."""
        async with self.session.lock:
            done = await self.session.transact(prepare, changes)
        assert isinstance(done, Transacted)  # Solo: nothing is ever dropped
        return done.record

    # -- starting and resuming ----------------------------------------------------------------
    async def start(self, prompt: str) -> TeamResult:
        team = self.team
        compiled = compile_blackboard(team.board_spec(prompt, at=team.clock()))
        info = await self.store.create_board(
            compiled.spec.to_json(),
            compiled.initial_state(),
            name=team.name,
            meta={"architecture": "blackboard", "agents": list(team.agents)},
        )
        self.board_id = info.board_id
        return await self._guarded(Progress(), resumed=False)

    async def resume(self, board_id: str) -> TeamResult:
        team = self.team
        self.board_id = board_id
        info = await self.store.board_info(board_id)
        agents = info.meta.get("agents") if isinstance(info.meta, dict) else None
        if info.meta.get("architecture") != "blackboard" or agents != list(team.agents):
            raise ResumeError(
                f"board {board_id} is not a blackboard of this team: its agents are {agents!r}, "
                f"the team's are {list(team.agents)!r}"
            )
        await self.open()
        history = self.session.history
        # A run paused at a held entry goes on when this team has a policy to decide it.
        decidable = team.approval is not None and bool(waiting_approvals(history))
        if self.session.ended_at_head and not decidable:
            # The run ended (its last record is the run-end record): nothing to redo (D4/D16).
            self.rounds = self.spend().rounds
            run_meta = history[-1].meta
            final = run_meta.get("final")
            state = self.kernel.state
            answer = state.get("answer") if isinstance(state, dict) else None
            if answer is not None and not isinstance(answer, str):
                final = typed_text(answer)
            return await self._result(
                history[-1].reason or "",
                answer if isinstance(answer, str) else (final if isinstance(final, str) else ""),
                interrupted=run_meta.get("interrupted") is True,
            )
        claimed = await self.store.agenda(board_id, ("claimed",))
        self.takeover = {i.id for i in claimed}
        if info.status != "running":
            await self.store.set_status(board_id, "running", "resumed")
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        return await self._guarded(Progress.of(history, answer), resumed=True)

    async def _guarded(self, progress: Progress, *, resumed: bool) -> TeamResult:
        try:
            if not resumed:
                await self.open()
            return await self._run(progress, resumed=resumed)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.store.set_status(self.board_id, "failed", "the run raised an exception")
            raise

    # -- the rounds ---------------------------------------------------------------------------
    async def _run(self, progress: Progress, *, resumed: bool) -> TeamResult:
        team = self.team
        names = list(team.agents)
        started: dict[str, JSON] = {
            "agents": list(names),
            "has_coordinator": team.coordinator is not None,
            "has_decider": team.decider is not None,
        }
        if resumed:
            started.update(resumed=True, round=progress.rounds)
        await self.emit(STARTED, **started)
        self.rounds = progress.rounds
        end_reason = TERMINATED if progress.terminated else MAX_ROUNDS
        # A resumed run first finishes what the dead one left: an approved or held entry, the
        # error entry of an unknown agent's round, the turn its last decision pushed.
        stop = await self._settle_approvals()
        if stop is not None:
            return await self._stop(stop)
        if resumed:
            await self._unsanitised(progress.rounds)
        last_agent = progress.last.get("next_agent")
        if not progress.error_posted and isinstance(last_agent, str) and last_agent not in team.agents:
            await self._post_error(progress.rounds, f"Coordinator picked unknown agent {last_agent!r}; skipping.")
        pending = [i for i in self.session.agenda.eligible() if i.worker in team.agents and i.rule == "coordinator"]
        for inv in pending:
            await self.emit(INVOKING, round=progress.rounds, agent=inv.worker)
            await self._turn(inv, progress.rounds)
        if not progress.terminated and not progress.decided:
            for round_num in range(progress.rounds + 1, team.max_rounds + 1):
                stop = self._halted()
                if stop is not None:
                    return await self._stop(stop)
                if self.guard is not None and self.guard.exhausted is not None:
                    return await self._interrupt(round_num, BudgetStatus(True, self.guard.exhausted))
                status = await team.budget.allows_step(self.spend())
                if status.blocked:
                    return await self._interrupt(round_num, status)
                self.rounds = round_num
                if team.parallel:
                    await self._parallel_round(round_num)
                    continue
                choice = await self._coordinate(round_num)
                decision = choice.decision
                await self.emit(
                    COORDINATOR_DECIDED,
                    round=round_num,
                    terminate=decision.terminate,
                    next_agent=decision.next_agent,
                    raw=decision.raw[:_PREVIEW],
                )
                if decision.terminate:
                    end_reason = TERMINATED
                    break
                if decision.next_agent is None:
                    why = "no JSON decision could be read" if not decision.parsed else "the coordinator named no agent"
                    await self.emit(NO_CONTRIBUTOR, round=round_num, reason=why)
                    continue
                if decision.next_agent not in team.agents:
                    await self._post_error(
                        round_num, f"Coordinator picked unknown agent {decision.next_agent!r}; skipping."
                    )
                    await self.emit(UNKNOWN_AGENT, round=round_num, agent_name=decision.next_agent)
                    continue
                await self.emit(INVOKING, round=round_num, agent=decision.next_agent)
                turn = self.session.agenda.get(round_id(round_num))
                assert turn is not None  # pushed with the control record
                await self._turn(turn, round_num)
        stop = self._halted()
        if stop is not None:
            return await self._stop(stop)
        if self.guard is not None and self.guard.exhausted is not None:
            return await self._interrupt(self.rounds, BudgetStatus(True, self.guard.exhausted))
        final = await self._decide()
        await self.emit(COMPLETED, final=final[:_PREVIEW], board_size=len(self.public()))
        if self.guard is not None and self.guard.exhausted is not None:
            # the decider's call was refused: the board has the fallback answer, the cap ended it
            return await self._finish(f"{BUDGET_PREFIX}{self.guard.exhausted}", final, interrupted=True)
        return await self._finish(end_reason, final)

    def _halted(self) -> str | None:
        """Why the board cannot go on: a circuit halt, or a held entry awaiting approval."""
        return self.session.halted

    async def _coordinate(self, round_num: int) -> Choice:
        """Ask the control unit, then log its decision: one ``control`` record whose append also
        pushes the chosen agent's turn on the agenda (and cancels leftover work: a turn the
        circuit policy queued for an agent carries its feedback into that agent's next turn)."""
        choice = await self.control.choose(round_num, lambda: bounded_board(self.public(), self.team.view_budget))
        agent = choice.decision.next_agent
        leftovers = [i for i in self.session.agenda.eligible() if i.id != DECIDE_INVOCATION]
        feedback = next((i.feedback for i in leftovers if i.worker == agent and i.feedback), None)
        turn = (
            round_invocation(choice, round_num, self.session.scheduler.allocate_order(), feedback=feedback)
            if agent is not None and agent in self.team.agents and not choice.decision.terminate
            else None
        )
        if turn is not None and turn.worker in self.team.outputs:
            # A typed reply that does not fit its schema is retried with the kernel's reason,
            # through the step engine's retry path, within the turn (see _turn).
            turn = dataclasses.replace(turn, meta={k: v for k, v in turn.meta.items() if k != ONCE_KEY})

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: {choice.reason}",
                worker=CONTROL_WORKER,
                invocation=round_id(round_num),
                meta=choice.record_meta(round_num),
                usage=choice.usage,
            )

        def changes(_d: Decision, _pushed: Sequence[Invocation]) -> AgendaChanges:
            return AgendaChanges(cancel=[i.id for i in leftovers], push=(turn,) if turn is not None else ())

        await self.transact(prepare, changes)
        return choice

    async def _claim(self, inv: Invocation) -> Invocation:
        """Lease ``inv`` from the store (taking over a dead run's lease when resuming)."""
        now = time.time() + _LEASE_S if inv.id in self.takeover else None
        self.takeover.discard(inv.id)
        claim = await self.store.claim(self.board_id, owner=self.owner, lease_s=_LEASE_S, invocation_id=inv.id, now=now)
        if claim is None:
            raise RunnerError(
                f"board {self.board_id}: invocation {inv.id} of {inv.worker} could not be claimed "
                "(another process holds its lease: is this board run elsewhere?)"
            )
        return self.session.adopt(claim.invocation) or claim.invocation

    async def _step(self, inv: Invocation) -> tuple[Record, WorkerReply]:
        """Claim and run one invocation through the step engine (then the circuit policy)."""
        claimed = await self._claim(inv)
        meta = {k: v for k, v in claimed.meta.items() if k != ONCE_KEY}
        outcome = await self.session.step(
            claimed, str(meta.get("control", claimed.id)), owner=self.owner, lease_s=_LEASE_S, meta=meta
        )
        assert outcome.record is not None and outcome.reply is not None  # Solo: never dropped
        return outcome.record, outcome.reply

    async def _turn(self, inv: Invocation, round_num: int) -> None:
        """The chosen agent's turn: one step, then its events (and the approval, when held). A
        typed agent's rejected reply is re-queued by the step engine with the rejection as
        feedback (up to the circuit's ``max_consecutive_invalid`` attempts): taken again here."""
        while True:
            rec, reply = await self._step(inv)
            await self._taken(inv.worker, round_num, rec, reply)
            again = self._requeued(inv.id)
            if again is None:
                return
            inv = again

    def _requeued(self, invocation_id: str) -> Invocation | None:
        """The invocation ``invocation_id`` when the step engine re-queued it (a rejected typed
        reply) and the board can go on; else None."""
        again = self.session.agenda.get(invocation_id)
        if again is None or self._halted() is not None:
            return None
        return again if any(i.id == invocation_id for i in self.session.agenda.eligible()) else None

    async def _taken(self, agent: str, round_num: int, rec: Record, reply: WorkerReply) -> None:
        """What follows a decided turn: its events, the stuck detector, the approval when held."""
        if rec.outcome == "accepted" and agent in self.team.untrusted:
            await self._quarantined(agent, round_num)
        elif rec.outcome == "accepted":
            entry = self.public()[-1]
            await self.emit(CONTRIBUTION, round=round_num, agent=agent, content=str(entry["content"])[:_PREVIEW])
            await self._echo()
        elif rec.outcome == "held":
            await self._settle_approvals()
        else:
            await self.emit(
                REJECTED,
                round=round_num,
                agent=agent,
                stage=rec.stage,
                reason=(rec.reason or "")[:_PREVIEW],
                error=reply.error,
            )

    # -- parallel rounds (``parallel=True``; see slateboard.team._parallel) ---------------------
    async def _parallel_round(self, round_num: int) -> None:
        """Every agent's turn from the board as the round began: one control record pushes them
        all, they are claimed, their models called concurrently, then their proposals decided in
        agent order (ids renumbered to the committed board, no staleness check among peers).
        A halt (circuit, or an entry awaiting approval) drops the turns not decided yet."""
        names = list(self.team.agents)
        leftovers = [i for i in self.session.agenda.eligible() if i.id != DECIDE_INVOCATION]
        turns = [
            parallel_invocation(
                name,
                round_num,
                k,
                self.session.scheduler.allocate_order(),
                feedback=next((i.feedback for i in leftovers if i.worker == name and i.feedback), None),
            )
            for k, name in enumerate(names)
        ]

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: parallel: {', '.join(names)}",
                worker=CONTROL_WORKER,
                invocation=round_id(round_num),
                meta=parallel_control_meta(names, round_num),
                usage=Usage(component="coordinator"),
            )

        def changes(_d: Decision, _pushed: Sequence[Invocation]) -> AgendaChanges:
            return AgendaChanges(cancel=[i.id for i in leftovers], push=tuple(turns))

        await self.transact(prepare, changes)
        await self.emit(
            COORDINATOR_DECIDED,
            round=round_num,
            terminate=False,
            next_agent=None,
            next_agents=list(names),
            raw=PARALLEL_RAW[:_PREVIEW],
        )
        claimed = [await self._claim(t) for t in turns]
        for inv in claimed:
            await self.emit(INVOKING, round=round_num, agent=inv.worker)
        views = [self.session.view(inv) for inv in claimed]
        keeper = asyncio.create_task(self._keep_leases([inv.id for inv in claimed]))
        calls = [
            asyncio.ensure_future(self.session.workers[inv.worker].propose(v, inv.event, feedback=inv.feedback))
            for inv, v in zip(claimed, views, strict=True)
        ]
        try:
            replies = await asyncio.gather(*calls)
        except BaseException:
            # One call failing (workers never raise for a model failure: this is a crash or a
            # cancellation) ends the round: the others are not left running behind the run.
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            raise
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        for inv, view, reply in zip(claimed, views, replies, strict=True):
            if self._halted() is not None:
                await self._drop(inv, round_num, reply)
                continue
            reply = renumber(reply, f"e{len(self.public()) + 1}")
            meta: dict[str, JSON] = {k: v for k, v in inv.meta.items() if k != ONCE_KEY}
            meta[PARALLEL_META] = True
            meta["round_version"] = view.version
            proposal = dataclasses.replace(
                reply.to_proposal(view, invocation=inv.id, event=inv.event, meta=meta), viewed_version=None
            )
            outcome = await self.session.decide(inv, proposal, reply=reply)
            assert outcome.record is not None  # Solo: never dropped
            await self._taken(inv.worker, round_num, outcome.record, reply)

    async def _keep_leases(self, invocation_ids: Sequence[str]) -> None:
        """Extend the leases on a parallel round's turns while their models run."""
        while True:
            await asyncio.sleep(_LEASE_S / 3)
            for inv_id in invocation_ids:
                with contextlib.suppress(StoreError):
                    await self.store.heartbeat(self.board_id, inv_id, owner=self.owner, lease_s=_LEASE_S)

    async def _drop(self, inv: Invocation, round_num: int, reply: WorkerReply) -> None:
        """Log a parallel turn the run cannot commit (it halted first): an action record that
        completes the turn and carries its model's usage, so the spend stays in the log."""
        model = reply.diagnostics.get("model")
        meta: dict[str, JSON] = {"event": TURN_DROPPED, "round": round_num, PARALLEL_META: True}
        if isinstance(model, str):
            meta["model"] = model
        why = self._halted() or ""

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: {inv.worker}'s turn dropped: {why}"[:_PREVIEW],
                worker=inv.worker,
                invocation=inv.id,
                meta=meta,
                usage=reply.usage,
            )

        await self.transact(prepare, lambda _d, _p: AgendaChanges(complete=(inv.id,)))
        await self.emit(REJECTED, round=round_num, agent=inv.worker, stage="dropped", reason=why[:_PREVIEW], error=None)

    # -- quarantine (``untrusted=``; see slateboard.team._quarantine) ---------------------------
    async def _unsanitised(self, round_num: int) -> None:
        """On resume: put to the sanitiser every quarantined entry a dead run committed but did
        not release or withhold (no record names it), so none is silently lost."""
        if self.team.sanitiser is None:
            return
        decided = {
            r.meta.get("quarantined") for r in self.session.history if r.meta.get("event") in (RELEASED, WITHHELD)
        }
        state = self.kernel.state
        assert isinstance(state, dict)
        for agent in self.team.untrusted:
            for index in range(len(state["quarantine"][agent])):
                if f"/quarantine/{escape_token(agent)}/{index}" not in decided:
                    await self._quarantined(agent, round_num, index)

    async def _quarantined(self, agent: str, round_num: int, index: int = -1) -> None:
        """An untrusted agent's entry (``index`` in its array; default the last) was committed
        to quarantine: put it to the sanitiser, then release it on the public board (a system
        entry, kind ``released``) or log that it is withheld."""
        state = self.kernel.state
        assert isinstance(state, dict)
        held = state["quarantine"][agent]
        index = index if index >= 0 else len(held) - 1
        entry = dict(held[index])
        where = f"/quarantine/{escape_token(agent)}/{index}"
        await self.emit(QUARANTINED, round=round_num, agent=agent, entry=str(entry.get("id")), path=where)
        sanitiser = self.team.sanitiser
        if sanitiser is None:
            return
        # A sanitiser that raises (or answers something else than text or None) withholds that
        # entry, with its error logged, instead of failing the whole run (issue 29, I9).
        failure: str | None = None
        try:
            released = sanitiser(copy.deepcopy(entry))
            if inspect.isawaitable(released):
                released = await released
            if released is not None and not isinstance(released, str):
                raise TypeError(f"a sanitiser must return a string or None, got {type(released).__name__}")
        except Exception as exc:
            released, failure = None, _failure(exc)
        meta: dict[str, JSON] = {"round": round_num, "quarantined": where, "agent": agent}
        if released is None:
            why = f"failed ({failure}) and" if failure else ""
            if failure:
                meta["error"] = failure
                log.warning("board %s: the sanitiser failed on %s; withheld: %s", self.board_id, where, failure)
            await self.transact(
                lambda: self.kernel.action(
                    QUARANTINE_KIND,
                    f"round {round_num}: the sanitiser {why} withheld {agent}'s entry at {where}".replace("  ", " "),
                    worker=SYSTEM_WORKER,
                    invocation=round_id(round_num),
                    meta={**meta, "event": WITHHELD},
                )
            )
            await self.emit(WITHHELD, round=round_num, agent=agent, path=where, error=failure)
            return
        rec = await self._post_system(
            round_num,
            released,
            kind=RELEASED_KIND,
            event={"kind": "quarantine", "round": round_num, "path": where},
            meta={**meta, "event": RELEASED},
        )
        if rec.outcome == "held":
            # The release changes the public board, which ``approval=`` guards: the approval
            # callback decides it now, as every held entry (issue 29, R10: never a silent pause).
            await self._settle_approvals()
            if self._approved(rec.seq):
                await self.emit(RELEASED, round=round_num, agent=agent, path=where, content=released[:_PREVIEW])
        elif rec.outcome == "accepted":
            await self.emit(RELEASED, round=round_num, agent=agent, path=where, content=released[:_PREVIEW])
        else:
            await self.emit(REJECTED, round=round_num, agent=SYSTEM_WORKER, stage=rec.stage, reason=rec.reason)

    def _approved(self, seq: int) -> bool:
        """Whether held record ``seq`` was approved (an ``approval`` record says so)."""
        return any(
            r.kind == "approval" and r.meta.get("record") == seq and r.meta.get("decision") == "approved"
            for r in self.session.history
        )

    # -- approvals ----------------------------------------------------------------------------
    async def _settle_approvals(self) -> str | None:
        """Decide held entries with the team's ``approval`` callback (``runtime.approval``'s
        approve/refuse: an ``approval`` record each), then commit approved entries as every
        runner does (``BoardSession.approved_first``). Returns why the run must stop (an entry
        still awaits a decision: no callback), else None."""
        session = self.session
        approval = self.team.approval
        for held in waiting_approvals(session.history):
            if approval is None:
                break
            request = _approval_request(self.board_id, held, session.history)
            # A callback that raises refuses that entry (it is withheld, never committed) with
            # the error as the logged note, instead of failing the whole run (issue 29, I9).
            try:
                verdict = approval(request)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
                approved, note = _verdict(verdict)
            except Exception as exc:
                approved, note = False, f"the approval callback failed: {_failure(exc)}"
                log.warning("board %s: record %d withheld: %s", self.board_id, held.seq, note)
            decide = approve if approved else refuse
            await decide(self.store, self.board_id, held.seq, by="approval", note=note)
            await session.refresh()  # the decision was appended beside the engine: catch up
            await self.emit(
                APPROVAL,
                round=request.round,
                agent=held.worker,
                seq=held.seq,
                decision="approved" if approved else "refused",
                note=note,
            )
            if not approved:
                await self.emit(
                    REJECTED,
                    round=request.round,
                    agent=held.worker,
                    stage="approval",
                    reason=f"refused by the approval policy{': ' + note if note else ''}"[:_PREVIEW],
                    error=None,
                )
        before = len(self.public())
        waiting = await session.approved_first()
        for entry in self.public()[before:]:
            await self.emit(
                CONTRIBUTION,
                round=self.rounds,
                agent=str(entry.get("author")),
                content=str(entry.get("content"))[:_PREVIEW],
            )
        if len(self.public()) > before:
            await self._echo()
        return waiting

    async def _echo(self) -> None:
        """The classic board's stuck detector (``echo_check``) after a contribution: a halt is
        logged as a ``circuit`` record, like the circuit policy's, and ends the run."""
        spec = self.session.blueprint.spec.circuit
        tail = self.echo.sync(self.public())  # what echo_check reads of the board, kept incrementally
        action = echo_check(tail, repeats=self.team.max_repeats, alternations=spec.max_alternations)
        if action is None or self.session.halted:
            return
        await self.transact(
            lambda: self.kernel.action(CIRCUIT_KIND, action.reason, worker=action.worker, meta=action.to_record_meta())
        )

    # -- system entries, the decider, the end -------------------------------------------------
    async def _post_error(self, round_num: int, message: str) -> None:
        event: dict[str, JSON] = {"kind": "coordinator", "round": round_num}
        await self._post_system(round_num, message, kind="error", event=event, meta={"round": round_num})

    async def _post_system(
        self, round_num: int, content: str, *, kind: str, event: dict[str, JSON], meta: dict[str, JSON]
    ) -> Record:
        """Append one ``system`` entry (an error, a released quarantined entry) to the public
        board, signed by the system worker, through the kernel: the record it logged."""
        entry_id = f"e{len(self.public()) + 1}"
        entry = make_entry(entry_id, SYSTEM_AUTHOR, content, kind=kind, at=self.team.clock())

        def prepare() -> Decision:
            return self.kernel.prepare(
                Proposal(
                    SYSTEM_WORKER,
                    [
                        {"op": "add", "path": "/public/-", "value": entry},
                        {"op": "add", "path": f"/signatures/{SYSTEM_AUTHOR}", "value": entry_id},
                    ],
                    viewed_version=self.kernel.version,
                    invocation=round_id(round_num),
                    event=event,
                    usage=Usage(component="system"),
                    meta=meta,
                )
            )

        return await self.transact(prepare)

    async def _decide(self) -> str:
        """The decider's turn (its invocation pushed on the agenda, claimed, one step); on a
        resumed run whose answer is already committed, that answer."""
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        typed = self.team.answer_type
        if isinstance(answer, str) or (typed is not None and answer is not None):
            return answer if isinstance(answer, str) else typed_text(answer)
        inv = self.session.agenda.get(DECIDE_INVOCATION)
        if inv is None:
            inv = decide_invocation(self.rounds, self.session.scheduler.allocate_order())
            if typed is not None:
                # A reply that does not fit the decider's output_type is retried with the
                # kernel's reason (the step engine's retry path), not answered by a fallback.
                inv = dataclasses.replace(inv, meta={k: v for k, v in inv.meta.items() if k != ONCE_KEY})
            await self.store.push_invocations(self.board_id, [inv])
            self.session.agenda.push(inv)
        if typed is not None:
            return await self._decide_typed(inv)
        rec, reply = await self._step(inv)
        if reply.error is not None:
            await self.emit(DECIDER_FAILED, error=reply.error[:_PREVIEW])
        ops = reply.patch if isinstance(reply.patch, list) else []
        value = ops[0].get("value") if ops and isinstance(ops[0], dict) else None
        final = value if isinstance(value, str) else ""
        if rec.outcome == "rejected":
            await self.emit(REJECTED, round=None, agent=self.decider.name, stage=rec.stage, reason=rec.reason)
        return final

    async def _decide_typed(self, inv: Invocation) -> str:
        """A typed decider's turns: each rejected reply re-queued with the kernel's reason until
        one is accepted or the attempts run out (``decider_failed`` then, with the last reason);
        the committed answer's JSON text, or ""."""
        while True:
            rec, reply = await self._step(inv)
            if rec.outcome == "rejected":
                await self.emit(REJECTED, round=None, agent=self.decider.name, stage=rec.stage, reason=rec.reason)
            again = self._requeued(inv.id) if rec.outcome == "rejected" else None
            if again is None:
                break
            inv = again
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        if answer is None:
            why = reply.error or f"{rec.stage}: {rec.reason or ''}"
            await self.emit(DECIDER_FAILED, error=why[:_PREVIEW])
            return ""
        return typed_text(answer)

    async def _interrupt(self, round_num: int, status: BudgetStatus) -> TeamResult:
        reason = f"{BUDGET_PREFIX}{status.reason}"
        spent = self.spend()
        await self.emit(
            BUDGET_EXCEEDED,
            round=round_num,
            reason=status.reason,
            tokens=spent.total_tokens,
            calls=spent.calls,
        )
        return await self._finish(reason, "", interrupted=True)

    async def _stop(self, reason: str) -> TeamResult:
        """End the run early: the circuit policy halted it, or an entry awaits approval."""
        halt = next((r for r in reversed(self.session.history) if r.kind == CIRCUIT_KIND), None)
        details = halt.meta.get("details") if halt is not None and reason.startswith("circuit") else None
        trigger = details.get("trigger") if isinstance(details, dict) else None
        await self.emit(HALTED, round=self.rounds, reason=reason[:_PREVIEW], trigger=trigger)
        return await self._finish(reason, "", interrupted=True)

    async def _finish(self, end_reason: str, final: str, *, interrupted: bool = False) -> TeamResult:
        meta: dict[str, JSON] = {
            "event": RUN_ENDED,
            "rounds": self.rounds,
            "final": final[:_PREVIEW],
            "interrupted": interrupted,
        }
        if self.guard is not None:
            meta["ledgers"] = list(await self.guard.lines())
        await self.transact(lambda: self.kernel.action(RUN_KIND, end_reason, meta=meta))
        await self.store.set_status(self.board_id, status_for(end_reason), end_reason)
        return await self._result(end_reason, final, interrupted=interrupted)

    async def _result(self, end_reason: str, final: str, *, interrupted: bool) -> TeamResult:
        # The session noted every record of the board (loaded, appended, or caught up after an
        # approval appended beside the engine): no decoding of the whole log from the store.
        records = self.session.history
        proposals = [r for r in records if r.kind == "proposal"]
        table = price_table(self.session.blueprint.spec.limits.prices)
        state = self.kernel.state
        team = self.team
        output: Any = final
        text: str | None = None
        if team.answer_type is not None:
            answer = state.get("answer") if isinstance(state, dict) else None
            output = team.answer_type.instance(answer) if answer is not None else None
            text = final
        stored = state.get("outputs") if isinstance(state, dict) else None
        outputs = {
            n: [o.instance(v) for v in stored.get(n, [])]
            for n, o in team.outputs.items()
            if isinstance(stored, dict) and isinstance(stored.get(n), list)
        }
        return TeamResult(
            output=output,
            text=text,
            outputs=outputs,
            board_id=self.board_id,
            end_reason=end_reason,
            rounds=self.rounds,
            state=self.kernel.state,
            interrupted=interrupted,
            interruption_reason=end_reason if interrupted else None,
            usage=usage_by(records, "component"),
            usage_by_agent=usage_by(proposals, "worker"),
            turns=Tally().fold(records).calls,
            cost_usd=cost_of(records, table),
            cost_by_component=cost_by(records, "component", table),
            cost_by_agent=cost_by(proposals, "worker", table),
        )


def typed_text(value: JSON) -> str:
    """A committed typed value as JSON text (sorted keys, so the run-end record is stable)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _ignore(event: RunEvent) -> None:
    """An event callback that drops the event (a stream that did not ask for ``events``)."""


def _quiet(kind: str, **data: JSON) -> None:
    """The engine's run events are not the team's (it emits the ``blackboard.*`` ones)."""
    return None


def _approval_request(board_id: str, held: Held, records: Sequence[Record]) -> ApprovalRequest:
    """What an approval callback is shown of a held record."""
    rec = next((r for r in records if r.seq == held.seq), None)
    try:
        ops = json.loads(held.patch) if held.patch else []
    except ValueError:
        ops = []
    patch = [op for op in ops if isinstance(op, dict)] if isinstance(ops, list) else []
    entry = next(
        (op.get("value") for op in patch if op.get("path") == "/public/-" and isinstance(op.get("value"), dict)),
        None,
    )
    event = rec.event if rec is not None and isinstance(rec.event, dict) else {}
    round_num = event.get("round")
    return ApprovalRequest(
        board_id=board_id,
        round=round_num if isinstance(round_num, int) else None,
        agent=held.worker,
        seq=held.seq,
        entry=dict(entry) if isinstance(entry, dict) else None,
        patch=patch,
        reason=held.reason,
    )


def _failure(exc: BaseException) -> str:
    """A callback's exception as one short, redacted line for the log and the record."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return redact(text[:300])


def _verdict(value: Any) -> tuple[bool, str]:
    """An approval callback's answer: a bool, or ``(bool, note)``."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        return value[0], str(value[1] or "")
    if isinstance(value, bool):
        return value, ""
    raise TypeError(f"an approval callback must return a bool or (bool, note), got {type(value).__name__}")
