"""What a team's run is given and gives back: budgets, approval requests, the result."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import UsageError
from ..kernel.canonical import JSON
from ..models.pricing import PriceTable
from ..runtime.ledger import Ledger, SpendLimits, spend_limits
from ..runtime.result import TokenUsage
from ..vocabulary import CIRCUIT_PREFIX

T = TypeVar("T")


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
    ``"terminated"`` (the coordinator stopped), ``"rounds_played"`` (a team without a
    coordinator played all its rounds: its normal end), ``"max_rounds"`` (the coordinator never
    stopped), ``"budget:<reason>"``,
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
        return self.end_reason.startswith(CIRCUIT_PREFIX)

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


def typed_text(value: JSON) -> str:
    """A committed typed value as JSON text (sorted keys, so the run-end record is stable)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
