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

from ..kernel.canonical import JSON
from ..kernel.circuit import HALT, TIGHTEN_BUDGET, circuit_summary
from ..kernel.record import APPROVAL_KIND, APPROVAL_RECORD_META, CIRCUIT_KIND, EVENT_META, PROPOSAL_KIND, Record
from ..models.pricing import PriceTable
from ..status import CIRCUIT_PREFIX, PAUSED_PREFIX
from ..vocabulary import OUTCOME_HELD, OUTCOME_REJECTED
from .boards import Held, ends_run, held_of
from .events import INVOCATION_FAILED
from .result import record_cost, record_tokens

RECENT_REJECTIONS = 3
"""Rejections per worker a view shows (the newest since the worker's last accepted proposal)."""


def _rejections() -> defaultdict[str, deque[Record]]:
    return defaultdict(lambda: deque(maxlen=RECENT_REJECTIONS))


@dataclass(slots=True)
class Accounts:
    """What a board's records add up to (see the module docstring).

    ``tail`` keeps what the circuit policy reads of the last ``tail_size`` records
    (``circuit_summary``: a proposal without its diagnostics and patch values, so a running
    board holds a few hundred bytes per record of its window rather than kilobytes); ``held``
    the held proposals no approval decision answered yet, by seq; ``history`` every record
    noted, in order, unless ``keep_history`` is False: a Runner needs none of it after loading
    (its approvals are ``held``, its last record ``tail[-1]``), and keeping every record alive
    grows the process by kilobytes per step and the garbage collector's work with it."""

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
    prices: PriceTable | None = None
    """The board's price table (``runtime.result.price_table``); None: nothing is priced."""
    cost: float = 0.0
    """The priced tokens of every record noted (``prices``). An unpriced model adds nothing here
    (the ``max_cost`` check cannot price it) and sets ``unpriced``; results show such a cost as
    unknown."""
    unpriced: bool = False
    """True once a record with tokens had a model ``prices`` does not know."""
    lost: list[str] = field(default_factory=list)
    """Ids of the invocations that failed (``invocation.failed`` records) since the last run end."""
    held: dict[int, Record] = field(default_factory=dict)
    """Held proposals (``outcome == "held"``) with no approval record naming them, by seq."""
    decided: set[JSON] = field(default_factory=set)
    """What the approval records named (one value per approval: small next to the log)."""
    noted_seq: int | None = None
    """The seq of the last record noted: a record at or before it was counted already (a
    runner catching up may read again what it loaded or appended), so ``note`` skips it."""

    def __post_init__(self) -> None:
        self.tail = deque(self.tail, maxlen=self.tail_size)

    def waiting(self) -> list[Held]:
        """The held proposals still waiting for a human, oldest first (what
        ``waiting_approvals`` finds in the whole log, kept up to date record by record)."""
        return [held_of(r) for r in self.held.values()]

    @property
    def last(self) -> Record | None:
        """The last record noted, as the circuit policy's summary (``circuit_summary``: kind,
        outcome, worker, reason, versions and hashes as logged; a proposal's meta, event and
        patch values are dropped), or None before the first."""
        return self.tail[-1] if self.tail else None

    @classmethod
    def of(
        cls,
        records: Iterable[Record],
        *,
        tail_size: int = 64,
        keep_history: bool = True,
        prices: PriceTable | None = None,
    ) -> Accounts:
        """The accounts of a log, folded record by record with ``note``."""
        accounts = cls(tail_size, keep_history, prices=prices)
        for rec in records:
            accounts.note(rec)
        return accounts

    def note(self, rec: Record) -> None:
        """Count one record (this process's own or one it caught up on), once: a record whose
        seq is not past the last one noted is already counted and is skipped, so catching up
        with the store is idempotent (a record never reaches the circuit's tail twice)."""
        if self.noted_seq is not None and rec.seq <= self.noted_seq:
            return
        self.noted_seq = rec.seq
        if self.keep_history:
            self.history.append(rec)
        self.tail.append(circuit_summary(rec))
        if rec.kind == PROPOSAL_KIND:
            self.steps += 1
        tokens = record_tokens(rec)  # a model judge's tokens count with the record it judged
        self.tokens += tokens
        if self.prices is not None and tokens:
            cost = record_cost(rec, self.prices)
            if cost is None:
                self.unpriced = True
            else:
                self.cost += cost
        if rec.outcome == OUTCOME_REJECTED and rec.worker:
            self.rejections[rec.worker].append(rec)
        elif rec.accepted and rec.worker and rec.kind == PROPOSAL_KIND:
            # an accepted proposal answers the worker's earlier rejections: re-sending them on
            # every later call would cost their tokens for the rest of the episode and tell the
            # worker its last proposal failed when it did not
            self.rejections.pop(rec.worker, None)
        elif rec.outcome == OUTCOME_HELD and rec.seq not in self.decided:
            self.held[rec.seq] = rec
        if rec.kind == APPROVAL_KIND:
            decided = rec.meta.get(APPROVAL_RECORD_META)
            if not isinstance(decided, (list, dict)):  # JSON scalars are hashable
                self.decided.add(decided)
                self.held.pop(decided, None)  # type: ignore[arg-type]
        self.ended_at_head = ends_run(rec)
        if self.ended_at_head:
            self.halted = None  # a new run starts from a clean slate
            self.lost = []
        elif rec.meta.get(EVENT_META) == INVOCATION_FAILED and rec.invocation:
            self.lost.append(rec.invocation)
        elif rec.kind == CIRCUIT_KIND and rec.meta.get("action") == HALT:
            self.halted = f"{CIRCUIT_PREFIX}: {rec.reason}"
        elif rec.outcome == OUTCOME_HELD:
            self.halted = f"{PAUSED_PREFIX}: awaiting approval of record {rec.seq}"
        elif rec.kind == APPROVAL_KIND and (self.halted or "").startswith(PAUSED_PREFIX):
            self.halted = None
        if rec.kind == CIRCUIT_KIND and rec.meta.get("action") == TIGHTEN_BUDGET and rec.worker:
            details = rec.meta.get("details")
            budget = details.get("view_budget") if isinstance(details, dict) else None
            if isinstance(budget, int):
                self.budgets[rec.worker] = budget
