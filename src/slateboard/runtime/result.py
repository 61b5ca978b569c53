"""The outcome of a run: final state, answer, why it ended, and what it cost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.guardstage import guard_usages
from ..kernel.record import MODEL_META, PROPOSAL_KIND, Record, Usage
from ..models.pricing import PriceTable
from ..vocabulary import LAPSED_META, EndStatus


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens in/out and calls, for one component or worker; ``cache_read``/``cache_write`` are
    the input tokens a provider served from its prompt cache and wrote to it (part of ``tokens_in``)."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """tokens_in + tokens_out."""
        return self.tokens_in + self.tokens_out

    def to_json(self) -> dict[str, int]:
        """Plain JSON form."""
        return {
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "calls": self.calls,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }


def _calls(rec: Record, key: str) -> list[tuple[str, str | None, Usage]]:
    """(group, model, usage) of each model call a record logs: its own, then its model judges'
    (``kernel.guardstage``). By ``"component"`` a judge's call is its own group
    (``guard:<name>``); by ``"worker"`` it counts with the worker whose proposal it judged."""
    own = rec.usage.component if key == "component" else (rec.worker or "-")
    model = rec.meta.get(MODEL_META)
    out = [(own, model if isinstance(model, str) else None, rec.usage)]
    for judge_model, u in guard_usages(rec.meta):
        out.append((u.component if key == "component" else own, judge_model, u))
    return out


def usage_by(records: Iterable[Record], key: str) -> dict[str, TokenUsage]:
    """Sum record usage by ``"component"`` or ``"worker"`` (records without tokens count as calls,
    except the declines of lapsed invocations, which called nothing)."""
    out: dict[str, TokenUsage] = {}
    for rec in records:
        if rec.kind != PROPOSAL_KIND and rec.usage.tokens_in == 0 and rec.usage.tokens_out == 0:
            continue
        if rec.meta.get(LAPSED_META) is True:
            continue  # the runtime declined for a lapsed invocation: nothing was called
        for name, _model, u in _calls(rec, key):
            cur = out.get(name, TokenUsage())
            out[name] = TokenUsage(
                cur.tokens_in + u.tokens_in,
                cur.tokens_out + u.tokens_out,
                cur.calls + 1,
                cur.cache_read + u.cache_read,
                cur.cache_write + u.cache_write,
            )
    return out


class _LimitPrice(Protocol):
    @property
    def input(self) -> float: ...
    @property
    def output(self) -> float: ...


def price_table(prices: Mapping[str, _LimitPrice]) -> PriceTable:
    """The one price table of a board: the blueprint's ``limits.prices`` (per model string, ``*``
    for any other) over the free local/scripted models and the optional ``genai-prices``."""
    return PriceTable.from_mapping({m: {"input": p.input, "output": p.output} for m, p in prices.items()})


def blueprint_prices(blueprint: Mapping[str, object]) -> PriceTable:
    """The price table of a stored blueprint in its plain JSON form (``limits.prices``), the
    same table ``price_table`` makes of a compiled one; for readers of a store (``log``,
    ``boards``, the dashboard) that do not compile the blueprint."""
    limits = blueprint.get("limits")
    prices = limits.get("prices") if isinstance(limits, Mapping) else None
    return PriceTable.from_mapping(prices if isinstance(prices, Mapping) else {})


def record_cost(rec: Record, table: PriceTable) -> float | None:
    """Dollars of one record's logged usage, priced by its ``meta.model`` with its prompt-cache
    reads and writes at their own rates, plus its model judges' calls (each priced by its model) (0.0 with no tokens; ``None`` when no table knows the
    model or the counts do not add up). Derived from the log, so replay never changes it."""
    u = rec.usage
    model = rec.meta.get(MODEL_META)
    calls = [(model if isinstance(model, str) else None, u), *guard_usages(rec.meta)]
    total = 0.0
    for name, used in calls:  # the record's own call, then its model judges' (each at its price)
        if used.tokens_in or used.tokens_out:
            cost = table.cost(name, used.tokens_in, used.tokens_out, used.cache_read, used.cache_write)
            if cost is None:
                return None
            total += cost
    return total


def record_tokens(rec: Record) -> int:
    """Tokens of one record: its own usage plus its model judges' (``kernel.guardstage``)."""
    return (
        rec.usage.tokens_in + rec.usage.tokens_out + sum(u.tokens_in + u.tokens_out for _, u in guard_usages(rec.meta))
    )


def cost_of(records: Iterable[Record], table: PriceTable) -> float | None:
    """The priced usage of ``records``: ``None`` ("unknown") as soon as one record with tokens
    has a model no table prices, never a partial sum that would pass for the whole."""
    total = 0.0
    for rec in records:
        cost = record_cost(rec, table)
        if cost is None:
            return None
        total += cost
    return total


def cost_by(records: Iterable[Record], key: str, table: PriceTable) -> dict[str, float | None]:
    """``cost_of`` per ``"component"`` or ``"worker"``, over the same calls ``usage_by`` counts
    (``None`` for a group with an unpriced call)."""
    out: dict[str, float | None] = {}
    for rec in records:
        if rec.kind != PROPOSAL_KIND and rec.usage.tokens_in == 0 and rec.usage.tokens_out == 0:
            continue
        if rec.meta.get(LAPSED_META) is True:
            continue  # as in usage_by: nothing was called
        for name, model, u in _calls(rec, key):
            cost = (
                table.cost(model, u.tokens_in, u.tokens_out, u.cache_read, u.cache_write)
                if (u.tokens_in or u.tokens_out)
                else 0.0
            )
            cur = out.get(name, 0.0)
            out[name] = None if cur is None or cost is None else cur + cost
    return out


def cost_json(cost: float | None) -> JSON:
    """A cost as ``--json`` outputs and the dashboard give it: dollars rounded to the nano-dollar
    (sums of floats print exactly what they add up to), ``null`` for unknown."""
    return None if cost is None else round(cost, 9)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced. ``end_reason`` says why it stopped (done, agenda_empty, max_steps,
    max_tokens, control, circuit, stuck...); ``usage`` is per component, ``usage_by_worker`` per
    worker; counts are over the whole board log. ``cost_usd`` is the log's usage priced with the
    blueprint's ``limits.prices`` over the built-in price table (``None``: some model is unpriced),
    ``cost_by_component``/``cost_by_worker`` the same split like ``usage``/``usage_by_worker``."""

    board_id: str
    state: JSON
    answer: JSON
    end_reason: str
    version: int
    records: int
    accepted: int
    rejected: int
    steps: int
    usage: dict[str, TokenUsage] = field(default_factory=dict)
    usage_by_worker: dict[str, TokenUsage] = field(default_factory=dict)
    cost_usd: float | None = 0.0
    cost_by_component: dict[str, float | None] = field(default_factory=dict)
    cost_by_worker: dict[str, float | None] = field(default_factory=dict)

    @property
    def end_status(self) -> EndStatus:
        """How the run ended: solved, exhausted, failed or paused (slateboard.status.end_status)."""
        from ..status import end_status

        return end_status(None, self.end_reason, answered=self.answer is not None)

    @property
    def total_tokens(self) -> int:
        """All tokens of all components."""
        return sum(u.total for u in self.usage.values())

    def answer_as(self, answer_type: type[T]) -> T:
        """``answer`` validated as ``answer_type`` (a pydantic model, a dataclass or any type
        pydantic can validate), e.g. the ``output_type`` of the worker that writes the answer.
        The kernel already checked it against the blueprint's schema; this gives it its Python
        type. Raises InvalidInput (a ValueError) when the run has no answer or it does not fit
        ``answer_type``."""
        from pydantic import TypeAdapter, ValidationError

        name = getattr(answer_type, "__name__", repr(answer_type))
        if self.answer is None:
            raise InvalidInput(f"board {self.board_id} has no answer (it ended {self.end_reason})")
        try:
            return TypeAdapter(answer_type).validate_python(self.answer)
        except ValidationError as exc:
            raise InvalidInput(f"the answer of board {self.board_id} is not a {name}: {exc}") from None

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (``slateboard run --json``)."""
        return {
            "board_id": self.board_id,
            "end_status": self.end_status,
            "end_reason": self.end_reason,
            "answer": self.answer,
            "version": self.version,
            "records": self.records,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "steps": self.steps,
            "usage": {k: v.to_json() for k, v in sorted(self.usage.items())},
            "usage_by_worker": {k: v.to_json() for k, v in sorted(self.usage_by_worker.items())},
            "cost_usd": cost_json(self.cost_usd),
            "cost_by_component": {k: cost_json(v) for k, v in sorted(self.cost_by_component.items())},
            "cost_by_worker": {k: cost_json(v) for k, v in sorted(self.cost_by_worker.items())},
            "state": self.state,
        }
