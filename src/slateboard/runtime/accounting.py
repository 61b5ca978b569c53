"""A board's running accounts, folded from its records by one function.

``Accounts.note(record)`` is the only place a record is counted: steps (proposal records,
including approved patches a runner commits for a human), tokens, the recent rejections each
worker's view shows, view budgets tightened by the circuit policy, why the board is halted or
paused, the invocations that failed (lost work) since the last run end, and whether the log ends
with a run-end record. The same function runs over the log a
session loads, over the records it writes and over the records it catches up on from other
processes, so the three can never disagree.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..kernel.circuit import HALT, RECORD_KIND, TIGHTEN_BUDGET
from ..kernel.record import Record
from .boards import ends_run
from .events import INVOCATION_FAILED

RECENT_REJECTIONS = 3
"""Rejections per worker a view shows (the newest)."""


def _rejections() -> defaultdict[str, deque[Record]]:
    return defaultdict(lambda: deque(maxlen=RECENT_REJECTIONS))


@dataclass(slots=True)
class Accounts:
    """What a board's records add up to (see the module docstring).

    ``tail`` keeps the last ``tail_size`` records (what the circuit policy inspects); ``history``
    every record noted, in order (approvals are matched over it), unless ``keep_history`` is
    False (a run with no approvals and no circuit policy, like ``Team.blackboard``, need not
    keep every record alive: that only costs memory and garbage-collector time)."""

    tail_size: int = 64
    keep_history: bool = True
    history: list[Record] = field(default_factory=list)
    tail: deque[Record] = field(default_factory=deque)
    steps: int = 0
    tokens: int = 0
    rejections: defaultdict[str, deque[Record]] = field(default_factory=_rejections)
    budgets: dict[str, int] = field(default_factory=dict)
    halted: str | None = None
    ended_at_head: bool = False
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per model (``*``: any other): (input, output) price per million tokens."""
    cost: float = 0.0
    """The priced tokens of every record noted (``prices``; unpriced models cost nothing)."""
    lost: list[str] = field(default_factory=list)
    """Ids of the invocations that failed (``invocation.failed`` records) since the last run end."""

    def __post_init__(self) -> None:
        self.tail = deque(self.tail, maxlen=self.tail_size)

    @classmethod
    def of(
        cls,
        records: Iterable[Record],
        *,
        tail_size: int = 64,
        keep_history: bool = True,
        prices: dict[str, tuple[float, float]] | None = None,
    ) -> Accounts:
        """The accounts of a log, folded record by record with ``note``."""
        accounts = cls(tail_size, keep_history, prices=dict(prices or {}))
        for rec in records:
            accounts.note(rec)
        return accounts

    def note(self, rec: Record) -> None:
        """Count one record (this process's own or one it caught up on)."""
        if self.keep_history:
            self.history.append(rec)
        self.tail.append(rec)
        if rec.kind == "proposal":
            self.steps += 1
        self.tokens += rec.usage.tokens_in + rec.usage.tokens_out
        if self.prices and (rec.usage.tokens_in or rec.usage.tokens_out):
            model = rec.meta.get("model")
            price = self.prices.get(model if isinstance(model, str) else "*") or self.prices.get("*")
            if price is not None:
                self.cost += (rec.usage.tokens_in * price[0] + rec.usage.tokens_out * price[1]) / 1e6
        if rec.outcome == "rejected" and rec.worker:
            self.rejections[rec.worker].append(rec)
        self.ended_at_head = ends_run(rec)
        if self.ended_at_head:
            self.halted = None  # a new run starts from a clean slate
            self.lost = []
        elif rec.meta.get("event") == INVOCATION_FAILED and rec.invocation:
            self.lost.append(rec.invocation)
        elif rec.kind == RECORD_KIND and rec.meta.get("action") == HALT:
            self.halted = f"circuit: {rec.reason}"
        elif rec.outcome == "held":
            self.halted = f"paused: awaiting approval of record {rec.seq}"
        elif rec.kind == "approval" and (self.halted or "").startswith("paused"):
            self.halted = None
        if rec.kind == RECORD_KIND and rec.meta.get("action") == TIGHTEN_BUDGET and rec.worker:
            details = rec.meta.get("details")
            budget = details.get("view_budget") if isinstance(details, dict) else None
            if isinstance(budget, int):
                self.budgets[rec.worker] = budget
