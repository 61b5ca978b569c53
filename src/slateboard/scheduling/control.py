"""Control units: choosing what runs next among the eligible invocations.

A control unit never produces board content; it only picks one of the eligible invocations
(or asks to terminate) and says why, and the runner logs that reason. ``select`` is async so
that an implementation may call a model (the coordinator) or do other I/O; the built-in units
here are pure and deterministic. A runner must treat a Selection naming an invocation that is
not among the eligible ones as invalid (``Selection.check`` does that).

A unit's state lives in the board's log, not in the process: every proposal a control unit
chose carries ``meta.control`` (the reason the runner logs), so ``restore_control(unit,
records)`` puts a unit where the log says it is (round robin: whose turn was last). A resumed
run, or another runner process serving the same board, continues the unit's order instead of
starting over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.record import PROPOSAL_KIND, Record
from ..vocabulary import CONTROL_META
from .invocation import Invocation


def last_chosen(records: Sequence[Record], workers: Sequence[str]) -> str | None:
    """The worker of the newest proposal in ``records`` that a control unit chose (its meta has
    ``control``; an approved patch committed for a human does not count) among ``workers``."""
    names = set(workers)
    for rec in reversed(records):
        if rec.kind == PROPOSAL_KIND and rec.worker in names and CONTROL_META in rec.meta:
            return rec.worker
    return None


@dataclass(frozen=True, slots=True)
class BoardSummary:
    """What a control unit may know about the board besides the eligible invocations.

    ``version``/``state_hash`` identify the committed state; ``steps`` and ``tokens_used`` are the
    run's spend so far; ``active_stages`` the active stage names; ``digest`` an optional short
    textual summary of the state for model-based units; ``extra`` anything else (JSON).
    """

    version: int = 0
    state_hash: str = ""
    steps: int = 0
    tokens_used: int = 0
    active_stages: tuple[str, ...] = ()
    digest: str | None = None
    extra: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form."""
        return {
            "version": self.version,
            "state_hash": self.state_hash,
            "steps": self.steps,
            "tokens_used": self.tokens_used,
            "active_stages": list(self.active_stages),
            "digest": self.digest,
            "extra": dict(self.extra),
        }


@dataclass(frozen=True, slots=True)
class Selection:
    """A control unit's choice: exactly one of an invocation or ``terminate``, with a reason.

    Construct with ``Selection.choose`` or ``Selection.stop``; the constructor rejects a selection
    that both chooses and terminates, or does neither.
    """

    invocation: Invocation | None
    terminate: bool
    reason: str

    def __post_init__(self) -> None:
        if (self.invocation is None) != self.terminate:
            raise InvalidInput("a Selection chooses an invocation or terminates, exactly one of the two")

    @classmethod
    def choose(cls, invocation: Invocation, reason: str) -> Selection:
        """Run ``invocation`` next."""
        return cls(invocation, False, reason)

    @classmethod
    def stop(cls, reason: str) -> Selection:
        """End the run."""
        return cls(None, True, reason)

    def check(self, eligible: Sequence[Invocation]) -> None:
        """Raise ValueError when the chosen invocation is not (by id) among ``eligible``."""
        if self.invocation is not None and all(e.id != self.invocation.id for e in eligible):
            raise InvalidInput(f"selected invocation {self.invocation.id!r} is not eligible")

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form for logs: the chosen id and worker (or terminate) and the reason."""
        inv = self.invocation
        return {
            "invocation": inv.id if inv is not None else None,
            "worker": inv.worker if inv is not None else None,
            "terminate": self.terminate,
            "reason": self.reason,
        }


@runtime_checkable
class ControlUnit(Protocol):
    """Chooses the next invocation among ``eligible`` (given in agenda order).

    Implementations must return a Selection naming one of ``eligible`` or terminating; they
    may await I/O (a model call) but must not change the board.
    """

    async def select(self, eligible: Sequence[Invocation], board_summary: BoardSummary) -> Selection:
        """Pick what runs next, with the reason the runner logs."""
        ...


class AgendaOrder:
    """The default control unit: the first eligible invocation (highest priority, oldest);
    terminates only when nothing is eligible. Stateless and deterministic."""

    async def select(self, eligible: Sequence[Invocation], board_summary: BoardSummary) -> Selection:
        """The first of ``eligible``, or terminate when it is empty."""
        if not eligible:
            return Selection.stop("agenda order: no eligible invocation")
        first = eligible[0]
        return Selection.choose(
            first, f"agenda order: {first.id} ({first.worker}, priority {first.priority}, order {first.order})"
        )


class RoundRobin:
    """Cycles through ``workers`` in a fixed order, skipping those with nothing eligible.

    After worker W ran, the next selection goes to the first worker after W (cyclically) that
    has an eligible invocation, and takes that worker's first one in agenda order. Invocations
    of workers not in the list are only chosen when no listed worker has one (first in agenda
    order). Deterministic given the sequence of calls; the position round-trips via to_json.
    """

    def __init__(self, workers: Sequence[str], *, last: str | None = None) -> None:
        if not workers:
            raise InvalidInput("RoundRobin needs at least one worker")
        if len(set(workers)) != len(workers):
            raise InvalidInput(f"RoundRobin workers repeat: {list(workers)}")
        self.workers: tuple[str, ...] = tuple(workers)
        self._last = last if last in self.workers else None

    @property
    def last(self) -> str | None:
        """The worker chosen last (None before the first choice)."""
        return self._last

    async def select(self, eligible: Sequence[Invocation], board_summary: BoardSummary) -> Selection:
        """The next worker in the cycle that has an eligible invocation (see class docstring)."""
        if not eligible:
            return Selection.stop("round robin: no eligible invocation")
        first_of: dict[str, Invocation] = {}
        for inv in eligible:
            first_of.setdefault(inv.worker, inv)
        n = len(self.workers)
        start = 0 if self._last is None else self.workers.index(self._last) + 1
        for step in range(n):
            worker = self.workers[(start + step) % n]
            found = first_of.get(worker)
            if found is not None:
                self._last = worker
                why = f"round robin: {worker}'s turn" + (f" (skipped {step} without work)" if step else "")
                return Selection.choose(found, f"{why}: {found.id}")
        first = eligible[0]
        return Selection.choose(
            first, f"round robin: no listed worker has work; agenda order: {first.id} ({first.worker})"
        )

    def resume(self, records: Sequence[Record]) -> None:
        """Take the position the board's log says: the last worker a control unit chose there
        (``last_chosen``), or the start when none was chosen yet. The log, not this object, is
        the truth: a choice whose invocation never committed (its claim failed, its runner
        died, another runner's pick was running) does not move the position."""
        self._last = last_chosen(records, self.workers)

    def to_json(self) -> dict[str, JSON]:
        """The unit's restorable state."""
        return {"workers": list(self.workers), "last": self._last}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundRobin:
        """Inverse of to_json."""
        return cls(list(data["workers"]), last=data.get("last"))


@runtime_checkable
class Resumable(Protocol):
    """A control unit whose state can be rebuilt from the board's records."""

    def resume(self, records: Sequence[Record]) -> None:
        """Take the state the records say the unit is in."""
        ...


def restore_control(unit: ControlUnit, records: Sequence[Record]) -> None:
    """Put ``unit`` where the board's ``records`` say it is (``Resumable.resume``); a stateless
    unit (agenda order) or one that keeps no state in the log is left alone."""
    if isinstance(unit, Resumable):
        unit.resume(records)
