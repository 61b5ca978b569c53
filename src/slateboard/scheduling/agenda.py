"""The agenda: pending invocations in priority order, de-duplicated by key.

Guarantees:

* ``pop`` returns the pending invocation with the highest priority, and among equal
  priorities the lowest ``order`` (the oldest): the minimum of ``Invocation.sort_key()``;
* no two pending invocations share a ``key`` (worker + binding): ``push`` of a key that is
  already pending is refused and returns False (an invocation that is running does not block
  a new one: the new one will see a newer view);
* priorities never change: the agenda never rewrites an invocation's ``priority`` or ``order``,
  and ``requeue`` puts back the claimed original (``attempts`` + 1), whatever copy is passed;
* ``to_json``/``from_json`` round-trip every pending and claimed invocation, in agenda order.

Popped invocations are *claimed* until ``complete``, ``requeue`` or ``cancel``. ``pop`` is
O(log n) (a heap with lazy deletion); key look-ups are O(1) through an index.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, KeysView
from dataclasses import replace
from typing import Any

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from .invocation import CLAIMED, PENDING, Invocation


class Agenda:
    """An in-memory priority agenda (see module docstring for the guarantees)."""

    def __init__(self, invocations: Iterable[Invocation] = ()) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._pending: dict[str, Invocation] = {}
        self._by_key: dict[str, str] = {}
        self._claimed: dict[str, Invocation] = {}
        for inv in invocations:
            self.push(inv)

    # -- queries ----------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of pending invocations."""
        return len(self._pending)

    def __bool__(self) -> bool:
        """True when something is pending."""
        return bool(self._pending)

    def __contains__(self, invocation_id: object) -> bool:
        """True when an invocation with this id is pending."""
        return invocation_id in self._pending

    def __iter__(self) -> Iterator[Invocation]:
        """Pending invocations in agenda order."""
        return iter(self.eligible())

    @property
    def pending_keys(self) -> KeysView[str]:
        """Keys of the pending invocations (a live view; pass to Scheduler.schedule)."""
        return self._by_key.keys()

    def active_keys(self, *, excluding: str | None = None) -> frozenset[str]:
        """Keys of the pending and claimed invocations, less the claimed invocation ``excluding``
        (the one being decided, which completes with the decision): what the scheduler must not
        create again, so the same worker and binding never run twice at once."""
        keys = set(self._by_key)
        keys.update(inv.key for inv in self._claimed.values() if inv.id != excluding)
        return frozenset(keys)

    def has_key(self, key: str) -> bool:
        """True when an invocation with this key is pending."""
        return key in self._by_key

    def get(self, invocation_id: str) -> Invocation | None:
        """The pending or claimed invocation with this id, or None."""
        inv = self._pending.get(invocation_id)
        return inv if inv is not None else self._claimed.get(invocation_id)

    @property
    def claimed(self) -> list[Invocation]:
        """Claimed (popped, not yet completed) invocations, in agenda order."""
        return sorted(self._claimed.values(), key=Invocation.sort_key)

    def eligible(self) -> list[Invocation]:
        """Pending invocations in the order ``pop`` would return them."""
        return sorted(self._pending.values(), key=Invocation.sort_key)

    def peek(self) -> Invocation | None:
        """The invocation ``pop`` would return, without claiming it (None when empty)."""
        self._prune()
        return self._pending[self._heap[0][2]] if self._heap else None

    # -- changes ----------------------------------------------------------------------------
    def push(self, invocation: Invocation) -> bool:
        """Queue ``invocation`` as pending; False (and nothing queued) when its key or its id is
        already pending, or its id is claimed."""
        if invocation.key in self._by_key or invocation.id in self._pending or invocation.id in self._claimed:
            return False
        self._insert(invocation if invocation.status == PENDING else invocation.with_status(PENDING))
        return True

    def pop(self) -> Invocation | None:
        """Claim and return the first invocation in agenda order (None when empty)."""
        self._prune()
        if not self._heap:
            return None
        _, _, inv_id = heapq.heappop(self._heap)
        return self._claim(inv_id)

    def take(self, invocation_id: str) -> Invocation | None:
        """Claim a specific pending invocation (the one a control unit selected); None if absent."""
        if invocation_id not in self._pending:
            return None
        claimed = self._claim(invocation_id)
        # A runner takes by id the invocation its store leased, usually the first one: drop the
        # dead entries now at the top so that a waiting board's heap holds only live ones
        # (compaction alone let up to len(pending) + 8 dead tuples live on every board).
        self._drop_dead_top()
        return claimed

    def complete(self, invocation_id: str) -> Invocation | None:
        """Forget a claimed invocation that has run; returns it, or None if it was not claimed."""
        return self._claimed.pop(invocation_id, None)

    def requeue(self, invocation: Invocation | str, *, feedback: str | None = None) -> bool:
        """Put a claimed invocation back as pending with ``attempts`` + 1.

        The original priority and order are kept (so it goes back where it was); ``feedback``,
        when given, replaces the invocation's feedback. Returns False, and drops the claim, when
        an invocation with the same key has been queued meanwhile (that one covers it). Raises
        KeyError when the invocation is not claimed.
        """
        inv_id = invocation if isinstance(invocation, str) else invocation.id
        original = self._claimed.pop(inv_id, None)
        if original is None:
            raise KeyError(f"invocation {inv_id!r} is not claimed")
        if original.key in self._by_key:
            return False
        again = replace(
            original,
            status=PENDING,
            attempts=original.attempts + 1,
            feedback=original.feedback if feedback is None else feedback,
        )
        self._insert(again)
        return True

    def cancel(self, invocation_id: str) -> Invocation | None:
        """Remove a pending or claimed invocation; returns it (None when unknown)."""
        inv = self._pending.pop(invocation_id, None)
        if inv is not None:
            del self._by_key[inv.key]
            return inv
        return self._claimed.pop(invocation_id, None)

    def cancel_where(self, predicate: Callable[[Invocation], bool]) -> list[Invocation]:
        """Remove every pending invocation matching ``predicate``; returns them in agenda order."""
        doomed = [inv for inv in self.eligible() if predicate(inv)]
        for inv in doomed:
            self.cancel(inv.id)
        return doomed

    # -- persistence ------------------------------------------------------------------------
    def to_json(self) -> dict[str, JSON]:
        """Plain JSON: pending and claimed invocations, each list in agenda order."""
        return {
            "pending": [inv.to_json() for inv in self.eligible()],
            "claimed": [inv.to_json() for inv in self.claimed],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Agenda:
        """Inverse of to_json. Raises ValueError when the snapshot repeats a key or an id."""
        agenda = cls()
        for raw in data.get("pending") or ():
            inv = Invocation.from_json(raw)
            if not agenda.push(inv):
                raise InvalidInput(f"agenda snapshot repeats invocation {inv.id!r} (key {inv.key})")
        for raw in data.get("claimed") or ():
            inv = Invocation.from_json(raw)
            if inv.id in agenda._pending or inv.id in agenda._claimed:
                raise InvalidInput(f"agenda snapshot repeats invocation {inv.id!r}")
            agenda._claimed[inv.id] = inv.with_status(CLAIMED)
        return agenda

    # -- internals --------------------------------------------------------------------------
    def _insert(self, inv: Invocation) -> None:
        self._pending[inv.id] = inv
        self._by_key[inv.key] = inv.id
        heapq.heappush(self._heap, (-inv.priority, inv.order, inv.id))
        self._compact()

    def _claim(self, inv_id: str) -> Invocation:
        inv = self._pending.pop(inv_id)
        del self._by_key[inv.key]
        claimed = inv.with_status(CLAIMED)
        self._claimed[inv_id] = claimed
        return claimed

    def _live(self, entry: tuple[int, int, str]) -> bool:
        inv = self._pending.get(entry[2])
        return inv is not None and entry[0] == -inv.priority and entry[1] == inv.order

    def _compact(self) -> None:
        # Bound the garbage left by cancel/take, also when nothing pops: a runner takes the
        # invocation its store leased by id every step and may never pop, and every running
        # board holds an agenda (unbounded before: one dead entry per step for the board's
        # life). A compaction costs O(heap) after at least len(pending) + 8 new entries:
        # amortised O(1).
        if len(self._heap) > 2 * len(self._pending) + 8:
            self._heap = [e for e in self._heap if self._live(e)]
            heapq.heapify(self._heap)

    def _prune(self) -> None:
        self._compact()
        self._drop_dead_top()

    def _drop_dead_top(self) -> None:
        heap = self._heap
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)
