"""Choosing, within a character budget, what of the read region to show and how.

Every region node ends in exactly one state: inside the entries of a FULL node (shown exactly
in ``data``), a HANDLE (one item handle), SPLIT (its members decided one by one), or pending
(covered by a range handle of its SPLIT parent). The root starts FULL if it fits, else SPLIT
with every member pending. Members are then considered best first from one global queue
(views._order: expansion targets, members of requested ranges, the triggering event's and
recent nodes, then shallower before deeper; among siblings, scalars before schema-required
members before the rest for objects, newest first for arrays). A member is shown FULL if it
fits, else opened (when a target lies inside it), else summarised by a handle that may itself
be opened later. Every choice is priced exactly beforehand (views._costs), so the running size
is exact and a change is made only when the result still fits.

A build goes through these passes, each keeping the invariants above:

1. ``run`` starts: the root FULL, or SPLIT, or nothing fits (the attempt fails).
2. ``run`` drains the queue: each ``_promote`` takes one pending member out of its range
   (FULL, opened with ``_split``, or a HANDLE) or leaves it pending; each queued opening turns
   a HANDLE into SPLIT (``_split``) or leaves it a handle.
3. ``output`` renders the choices: the FULL nodes' entries, the item handles and every range
   still pending, in document order.

Cost: each SPLIT collection feeds the queue lazily, one member at a time, and stops after
MAX_MISSES consecutive members that did not fit; measuring stops at the space left. So a build
is O(size of the view + members looked at), plus the members of structural collections.
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from ..kernel.canonical import JSON
from ..kernel.pointer import Tokens
from ._cache import _Scope
from ._costs import Costs, FillMemo
from ._measure import Meter
from ._model import Handle
from ._order import REOPEN, Key, Priorities, Targets
from ._region import RNode

if TYPE_CHECKING:
    from ..kernel.protocol import KernelBlueprint

MAX_MISSES = 8
"""A collection stops offering members after this many consecutive ones did not fit."""

RECORD_MAX = 16
"""Objects with at most this many members are records: opened all at once (see _split_record)."""

# What a decided node is shown as (Fill.chosen); a pending member has no entry.
_FULL: Final = "full"
_HANDLE: Final = "handle"
_SPLIT: Final = "split"
# What a queue entry asks for: promote a pending member, or open a collection shown as a handle.
_PROMOTE: Final = "promote"
_OPEN: Final = "open"
_AFTER = sys.maxsize  # greater than any range end


class _Opened:
    """A SPLIT collection: the ranges of its members still pending, and its member feed."""

    __slots__ = ("feed", "misses", "node", "pending")

    def __init__(self, node: RNode, feed: Iterator[tuple[Key, RNode]]) -> None:
        self.node = node
        self.pending: list[tuple[int, int]] = [(0, node.count())]
        """Sorted, disjoint position ranges [start, stop) of pending members: one range handle each."""
        self.feed = feed
        """The members not yet offered to the queue, best first (views._order)."""
        self.misses = 0
        """Consecutive members offered that did not fit (the feed stops at MAX_MISSES)."""

    def take(self, pos: int) -> tuple[int, tuple[int, int], list[tuple[int, int]]]:
        """Where member ``pos`` is pending: (index in ``pending``, its range, what is left of
        that range without it: zero, one or two ranges). Changes nothing."""
        # (pos, _AFTER) sorts after every range starting at or before pos (ends are < _AFTER):
        # the same index as bisecting on the starts, without a key call per probe.
        pending = self.pending
        index = bisect_right(pending, (pos, _AFTER)) - 1
        start, stop = old = pending[index]
        assert start <= pos < stop
        left: list[tuple[int, int]] = []
        if start < pos:
            left.append((start, pos))
        if pos + 1 < stop:
            left.append((pos + 1, stop))
        return index, old, left


class Fill:
    """One attempt at filling ``data`` and ``handles`` for a given fixed frame (see module).

    ``frame_chars`` is the rendered size of the frame with an empty ``data`` and no handles;
    ``summary_chars`` the longest summary a handle carries; ``memo`` is shared by the attempts
    of one build, ``scope`` kept across builds by a ViewCache (a fresh one lives for this build).
    """

    def __init__(
        self,
        root: RNode | None,
        meter: Meter,
        budget: int,
        frame_chars: int,
        summary_chars: int,
        targets: Targets,
        blueprint: KernelBlueprint,
        memo: FillMemo,
        scope: _Scope | None = None,
    ) -> None:
        self.root = root
        self.budget = budget
        self.frame_chars = frame_chars
        self.costs = Costs(meter, budget, summary_chars, memo, scope if scope is not None else _Scope(None, budget))
        self.priorities = Priorities(targets, blueprint, memo.required)
        # The running size (see total): data entries and their characters, handles (item and
        # range) and theirs, without the separators, which total adds.
        self.entry_count = self.entry_chars = self.handle_count = self.handle_chars = 0
        self.chosen: dict[Tokens, tuple[str, RNode]] = {}
        """Each decided node's state (FULL, HANDLE or SPLIT), in the order decided."""
        self.item_handles: dict[Tokens, tuple[Handle, int]] = {}
        """The item handle (and its size) of each node in state HANDLE."""
        self.opened: dict[Tokens, _Opened] = {}
        """Each node in state SPLIT, with its pending ranges."""
        self.member_keys: dict[Tokens, Key] = {}
        """The queue key each member got when its collection offered it."""
        self.queue: list[tuple[Key, int, str, RNode]] = []
        """A heap of (key, sequence number, _PROMOTE or _OPEN, node): least key first, then FIFO."""
        self.pushed = 0

    # -- accounting ---------------------------------------------------------------------
    def total(self, entries: int = 0, entry_chars: int = 0, handles: int = 0, handle_chars: int = 0) -> int:
        """Exact length of the rendered view after the given change in entries and handles.

        Hand-counted for speed (it prices every move): the entries and commas inside
        ``"data":{}`` (already in the frame), and ``,"handles":[...]`` (12 characters, the
        handles and their commas) once there is a handle. views._build checks it against the
        rendered length when ``_STRICT`` (every build of tests/views/test_views.py)."""
        entries += self.entry_count
        handles += self.handle_count
        size = self.frame_chars
        if entries:
            size += self.entry_chars + entry_chars + entries - 1
        if handles:
            size += 12 + self.handle_chars + handle_chars + handles
        return size

    def fits(self, entries: int = 0, entry_chars: int = 0, handles: int = 0, handle_chars: int = 0) -> bool:
        """True when the view after the change stays within budget."""
        return self.total(entries, entry_chars, handles, handle_chars) <= self.budget

    def _apply(self, entries: int = 0, entry_chars: int = 0, handles: int = 0, handle_chars: int = 0) -> None:
        self.entry_count += entries
        self.entry_chars += entry_chars
        self.handle_count += handles
        self.handle_chars += handle_chars

    # -- the queue ------------------------------------------------------------------------
    def _push(self, key: Key, kind: str, node: RNode) -> None:
        self.pushed += 1
        heapq.heappush(self.queue, (key, self.pushed, kind, node))

    def _push_opening(self, node: RNode, key: Key) -> None:
        """Queue the opening of ``node``, just shown as a HANDLE at ``key``, if it has members:
        keyed one level down with class REOPEN, so it comes after every entry of its urgency at
        its own depth or above and before the members one level down."""
        if node.container and node.count():
            urgency, depth, _, rank = key
            self._push((urgency, depth + 1, REOPEN, rank), _OPEN, node)

    def _next_member(self, opened: _Opened) -> tuple[Key, RNode] | None:
        """The next member ``opened`` offers, with its key noted, or None once it stopped (out
        of members, or MAX_MISSES in a row did not fit)."""
        if opened.misses >= MAX_MISSES:
            return None
        offered = next(opened.feed, None)
        if offered is not None:
            self.member_keys[offered[1].tokens] = offered[0]
        return offered

    def _feed(self, opened: _Opened) -> None:
        offered = self._next_member(opened)
        if offered is not None:
            self._push(offered[0], _PROMOTE, offered[1])

    # -- pass 1: the start, and pass 2: the queue -------------------------------------------
    def run(self) -> bool:
        """Choose every representation; False when not even the minimal one fits.

        Pass 1 shows the root FULL if it fits, else opens it (SPLIT, every member pending). Pass
        2 takes queue entries least key first until none is left: a member to promote, or a
        HANDLE to open. After every move the running size is exact and within budget, and
        every node is in one state (see module); a move that would not fit is not made."""
        root = self.root
        costs = self.costs
        if root is None:
            return self.fits()
        full = costs.full_cost(root, self.budget - self.total())
        if full is not None and self.fits(full[0], full[1]):
            self._apply(full[0], full[1])
            self.chosen[()] = (_FULL, root)
            return True
        if not self._split(root):
            return False
        queue = self.queue
        while queue:
            _, _, kind, node = heapq.heappop(queue)
            if kind == _OPEN:
                if self.chosen.get(node.tokens, ("",))[0] == _HANDLE:
                    self._split(node)
                continue
            parent = node.parent
            assert parent is not None
            opened = self.opened[parent.tokens]
            while True:
                if self._promote(node):
                    opened.misses = 0
                else:
                    opened.misses += 1
                offered = self._next_member(opened)
                if offered is None:
                    break
                key, node = offered
                # The next member of the same collection is promoted at once, without a trip
                # through the queue, when it is strictly first there: a pushed entry would
                # follow every queued one of an equal key (its sequence number is the highest),
                # so the order of moves, and so the view, is exactly the queue's.
                if queue and queue[0][0] <= key:
                    self._push(key, _PROMOTE, node)
                    break
        return True

    def _promote(self, member: RNode) -> bool:
        """Take pending ``member`` out of its range: FULL if it fits, else opened if a target
        lies inside it, else a HANDLE if that fits; else it stays pending (False). Its range
        handle becomes the zero, one or two ranges left around it, priced in the same move."""
        parent = member.parent
        assert parent is not None
        opened = self.opened[parent.tokens]
        index, old, left = opened.take(member.pos)
        costs = self.costs
        # The change in range handles: the old range out, what is left of it in.
        ranges = len(left) - 1
        # Direct method calls with positional arguments: this is the builder's hottest path
        # (issue 14), and compiled, a bound method kept in a local is called through Python.
        range_chars = -costs.range_cost(parent, old[0], old[1])
        for start, stop in left:
            range_chars += costs.range_cost(parent, start, stop)
        # total(0, 0, ranges, range_chars), inlined (see total): the size after the range change.
        handles = self.handle_count + ranges
        base = self.frame_chars
        if self.entry_count:
            base += self.entry_chars + self.entry_count - 1
        if handles:
            base += 12 + self.handle_chars + range_chars + handles
        full = costs.full_cost(member, self.budget - base)
        if full is not None and self.total(full[0], full[1], ranges, range_chars) <= self.budget:
            opened.pending[index : index + 1] = left
            self.entry_count += full[0]
            self.entry_chars += full[1]
            self.handle_count += ranges
            self.handle_chars += range_chars
            self.chosen[member.tokens] = (_FULL, member)
            return True
        if member.container and self.priorities.leads(member):
            opened.pending[index : index + 1] = left
            self._apply(handles=ranges, handle_chars=range_chars)
            if self._split(member):
                return True
            opened.pending[index : index + len(left)] = [old]
            self._apply(handles=-ranges, handle_chars=-range_chars)
        if self.fits(handles=ranges + 1, handle_chars=range_chars + costs.skeleton_size(member)):
            handle, size = costs.item_handle(member)
            if self.fits(handles=ranges + 1, handle_chars=range_chars + size):
                opened.pending[index : index + 1] = left
                self._apply(handles=ranges + 1, handle_chars=range_chars + size)
                self.item_handles[member.tokens] = (handle, size)
                self.chosen[member.tokens] = (_HANDLE, member)
                self._push_opening(member, self.member_keys[member.tokens])
                return True
        return False

    def _split(self, node: RNode) -> bool:
        """Open ``node`` (a HANDLE, or a member just taken out of its parent's range) into SPLIT:
        its members start pending under one range handle, and the best one is promoted at once
        (else opening would only trade the handle for a range). False, with nothing changed,
        when that does not fit."""
        if not node.count():
            return False
        if node.parent is not None and not node.is_list and node.count() <= RECORD_MAX:
            return self._split_record(node)
        saved = (self.entry_count, self.entry_chars, self.handle_count, self.handle_chars)
        prior = self.chosen.get(node.tokens)
        if prior is not None:  # a HANDLE: its handle goes
            self._apply(handles=-1, handle_chars=-self.item_handles[node.tokens][1])
        opened = _Opened(node, self.priorities.best_first(node))
        range_chars = self.costs.range_cost(node, 0, opened.pending[0][1])
        if not self.fits(handles=1, handle_chars=range_chars):
            self.entry_count, self.entry_chars, self.handle_count, self.handle_chars = saved
            return False
        self._apply(handles=1, handle_chars=range_chars)
        self.opened[node.tokens] = opened
        self.chosen[node.tokens] = (_SPLIT, node)
        if node.parent is not None:
            first = self._next_member(opened)
            assert first is not None
            if not self._promote(first[1]):
                del self.opened[node.tokens]
                if prior is not None:
                    self.chosen[node.tokens] = prior
                else:
                    del self.chosen[node.tokens]
                self.entry_count, self.entry_chars, self.handle_count, self.handle_chars = saved
                return False
        if prior is not None:
            del self.item_handles[node.tokens]
        self._feed(opened)
        return True

    def _split_record(self, node: RNode) -> bool:
        """Open a small object all at once: every member FULL or a HANDLE, never a range, so
        opening never shows less than the record's own handle did. The whole change is priced
        first and made only if it fits; else nothing changes (False)."""
        prior = self.chosen.get(node.tokens)
        entries = entry_chars = handles = handle_chars = 0
        if prior is not None:  # a HANDLE: its handle goes
            handles, handle_chars = -1, -self.item_handles[node.tokens][1]
        costs = self.costs
        plan: list[tuple[Key, RNode, tuple[Handle, int] | None]] = []  # None: FULL
        for key, member in self.priorities.best_first(node):
            room = self.budget - self.total(entries, entry_chars, handles, handle_chars)
            full = costs.full_cost(member, room)
            if full is not None and self.fits(entries + full[0], entry_chars + full[1], handles, handle_chars):
                entries += full[0]
                entry_chars += full[1]
                plan.append((key, member, None))
                continue
            handle, size = costs.item_handle(member)
            handles += 1
            handle_chars += size
            if not self.fits(entries, entry_chars, handles, handle_chars):
                return False
            plan.append((key, member, (handle, size)))
        self._apply(entries, entry_chars, handles, handle_chars)
        if prior is not None:
            del self.item_handles[node.tokens]
        opened = _Opened(node, iter(()))
        opened.pending = []
        self.opened[node.tokens] = opened
        self.chosen[node.tokens] = (_SPLIT, node)
        for key, member, item_handle in plan:
            self.member_keys[member.tokens] = key
            if item_handle is None:
                self.chosen[member.tokens] = (_FULL, member)
            else:
                self.chosen[member.tokens] = (_HANDLE, member)
                self.item_handles[member.tokens] = item_handle
                self._push_opening(member, key)
        return True

    # -- pass 3: the output ---------------------------------------------------------------
    def output(self) -> tuple[dict[str, JSON], list[Handle]]:
        """The data entries (still referencing state values) and the handles in document order:
        exactly what ``total()`` counted."""
        data: dict[str, JSON] = {}
        placed: list[tuple[tuple[int, ...], Handle]] = []
        for state, node in self.chosen.values():
            if state == _FULL:
                for anchor in node.anchors():
                    data[anchor.pointer] = anchor.value
            elif state == _HANDLE:
                placed.append((_positions(node), self.item_handles[node.tokens][0]))
        for opened in self.opened.values():
            where = _positions(opened.node)
            for start, stop in opened.pending:
                placed.append(((*where, start), self.costs.range_handle(opened.node, start, stop)[0]))
        placed.sort(key=lambda ph: ph[0])
        return data, [h for _, h in placed]

    def close(self) -> None:
        """Drop what this attempt decided, once the builder is done with it, so that the region
        nodes it holds (in its tables, its queue and the suspended member feeds) are freed by
        reference counting with the region (views._region.release), not left to the cyclic
        garbage collector (issue 14)."""
        self.costs.last_node = self.costs.last_kept = None
        self.opened.clear()
        self.queue.clear()
        self.chosen.clear()
        self.member_keys.clear()
        self.item_handles.clear()


def _positions(node: RNode) -> tuple[int, ...]:
    """The member positions from the root down to ``node``: its place in document order."""
    out: list[int] = []
    step: RNode | None = node
    while step is not None and step.parent is not None:
        out.append(step.pos)
        step = step.parent
    return tuple(reversed(out))
