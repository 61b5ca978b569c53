"""Choosing, within a character budget, what of the read region to show and how.

Every region node ends in exactly one state: inside the entries of a FULL node (shown exactly
in ``data``), a HANDLE (one item handle), SPLIT (its members decided one by one), or pending
(covered by a range handle of its SPLIT parent). The root starts FULL if it fits, else SPLIT
with every member pending. Members are then considered best first from one global queue:
expansion targets, members of requested ranges, the triggering event's and recent nodes, then
shallower before deeper; among siblings, scalars before schema-required members before the
rest (objects), newest first (arrays). A member is shown FULL if it fits, else opened (when a
target lies inside it), else summarised by a handle that may itself be opened later. The
running size is exact, so a change is made only when the result still fits.

Cost: each SPLIT collection feeds the queue lazily, one member at a time, and stops after
MAX_MISSES consecutive members that did not fit; measuring stops at the space left. So a build
is O(size of the view + members looked at), plus the members of structural collections.
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON
from ..kernel.pointer import Tokens
from ._cache import _ListMemo, _Scope
from ._measure import Meter, canonical_prefix, json_size, shorten, str_size
from ._model import Handle
from ._region import RNode

if TYPE_CHECKING:
    from ..kernel.protocol import KernelBlueprint

MAX_MISSES = 8
"""A collection stops offering members after this many consecutive ones did not fit."""

RECORD_MAX = 16
"""Objects with at most this many members are records: opened all at once (see _split_record)."""

_FULL, _HANDLE, _SPLIT = "full", "handle", "split"
_QUIET = 3  # urgency of a node no target relates to
_AFTER = sys.maxsize  # greater than any interval end

Key = tuple[int, int, int, int]
# "Not looked up yet" in Fill._names, compared by identity: a member named by an equal string
# only makes the look-up run again, with the same result.
_UNNAMED = "\0not named yet"
_NO_MEMO = _ListMemo()  # "not looked up yet" in Fill._lms (None there means "no memo"), by identity


@dataclass(slots=True)
class Targets:
    """What the builder shows first: expansion items and ranges, then event/recent paths."""

    items: list[RNode] = field(default_factory=list)
    ranges: list[tuple[RNode, int, int]] = field(default_factory=list)
    soft: list[Tokens] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Split:
    __slots__ = ("feed", "intervals", "misses", "node")

    def __init__(self, node: RNode, feed: Iterator[tuple[Key, RNode]]) -> None:
        self.node = node
        self.intervals: list[tuple[int, int]] = [(0, node.count())]
        self.feed = feed
        self.misses = 0

    def without(self, pos: int) -> tuple[int, tuple[int, int], list[tuple[int, int]]]:
        # (pos, _AFTER) sorts after every interval starting at or before pos (ends are < _AFTER):
        # the same index as bisecting on the starts, without a key call per probe.
        intervals = self.intervals
        i = bisect_right(intervals, (pos, _AFTER)) - 1
        a, b = old = intervals[i]
        assert a <= pos < b
        new = []
        if a < pos:
            new.append((a, pos))
        if pos + 1 < b:
            new.append((pos + 1, b))
        return i, old, new


def _member_class(node: RNode, pos: int, required: frozenset[str]) -> int:
    """A member's class in the fill order within one urgency: 0 for an object's scalar, 1 for
    a container the schema requires, 2 for any other container and for every array member."""
    if node.is_list:
        return 2
    key = node.member_token(pos)
    value = node.value[key] if node.readable else node.member_at(pos).value
    if not isinstance(value, (dict, list)):
        return 0
    return 1 if key in required else 2


def _unique(node: RNode, depth: int, keyed: Iterable[tuple[tuple[int, int, int], int]]) -> Iterator[tuple[Key, RNode]]:
    """The members of ``node`` in the order of ``keyed``, each once, at its first key."""
    seen: set[int] = set()
    for (urg, c, r), pos in keyed:
        if pos in seen:
            continue
        seen.add(pos)
        yield (urg, depth, c, r), node.member_at(pos)


def _list_stream(urg: int, start: int, stop: int, n: int) -> Iterator[tuple[tuple[int, int, int], int]]:
    """Array positions ``start`` down to ``stop`` (exclusive), each with its key at urgency ``urg``."""
    for pos in range(start, stop, -1):
        yield (urg, 2, n - 1 - pos), pos


class Fill:
    """One attempt at filling ``data`` and ``handles`` for a given fixed frame (see module)."""

    def __init__(
        self,
        root: RNode | None,
        meter: Meter,
        budget: int,
        base: int,
        summary: int,
        targets: Targets,
        bp: KernelBlueprint,
        memo: dict[Any, Any],
        scope: _Scope | None = None,
    ) -> None:
        self.root = root
        self.meter = meter
        self.budget = budget
        self.base = base
        self.summary = summary
        self.targets = targets
        self.bp = bp
        self.memo = memo
        self.scope = scope if scope is not None else _Scope(None, budget)  # kept for this build only
        # Typed tables inside the shared memo for the hottest look-ups (one per promotion):
        # range costs, pointer sizes and member names, keyed without a tag to build each time.
        # Those of readable arrays live in the scope's array memos instead, which a ViewCache
        # carries to the next build (views._cache); pointer sizes depend on tokens alone.
        self._rcost: dict[tuple[Tokens, int, int, int], int] = memo.setdefault("rcost", {})
        self._ptr_size: dict[Tokens, int] = self.scope.ptr
        self._names: dict[tuple[Tokens, int], str | None] = memo.setdefault("name", {})
        self._lms: dict[Tokens, _ListMemo | None] = memo.setdefault("lists", {})
        self.dn = self.ds = self.hn = self.hs = 0
        self.rep: dict[Tokens, tuple[str, RNode]] = {}
        self.handles: dict[Tokens, tuple[Handle, int]] = {}
        self.splits: dict[Tokens, _Split] = {}
        self.keys: dict[Tokens, Key] = {}
        self.heap: list[tuple[Key, int, str, RNode]] = []
        self.seq = 0

    # -- accounting ---------------------------------------------------------------------
    def total(self, dn: int = 0, ds: int = 0, hn: int = 0, hs: int = 0) -> int:
        """Exact length of the rendered view after the given change in entries and handles."""
        dn += self.dn
        hn += self.hn
        t = self.base
        if dn:
            t += self.ds + ds + dn - 1  # entries and commas inside "data":{}
        if hn:
            t += 12 + self.hs + hs + hn  # ,"handles":[...]
        return t

    def fits(self, dn: int = 0, ds: int = 0, hn: int = 0, hs: int = 0) -> bool:
        """True when the view after the change stays within budget."""
        return self.total(dn, ds, hn, hs) <= self.budget

    def _apply(self, dn: int = 0, ds: int = 0, hn: int = 0, hs: int = 0) -> None:
        self.dn += dn
        self.ds += ds
        self.hn += hn
        self.hs += hs

    # -- priorities ---------------------------------------------------------------------
    def _urgency_below(self, node: RNode) -> int:
        """Urgency shared by every member of ``node`` (targets at or above the node)."""
        tok = node.tokens
        n = len(tok)
        level = _QUIET
        for item in self.targets.items:
            if tok[: len(item.tokens)] == item.tokens:
                return 0
        for coll, a, b in self.targets.ranges:
            t = coll.tokens
            if n > len(t) and tok[: len(t)] == t:
                member = coll.member(tok[len(t)])
                if member is not None and a <= member.pos < b:
                    level = 1
        if level == _QUIET:
            for t in self.targets.soft:
                if tok[: len(t)] == t:
                    return 2
        return level

    def _order(self, node: RNode) -> Iterator[tuple[Key, RNode]]:
        """The members of ``node`` best first, lazily, each with its queue key.

        Not itself a generator: compiled, a generator that delegates with ``yield from`` passes
        every member through two generator frames, and this feeds every promotion (issue 14)."""
        n = node.count()
        depth = node.depth + 1
        is_list = node.is_list
        base = self._urgency_below(node)
        tok = node.tokens
        special: dict[int, int] = {}
        for urg, paths in ((0, [i.tokens for i in self.targets.items]), (2, self.targets.soft)):
            for t in paths:
                if len(t) >= depth and t[: depth - 1] == tok:
                    m = node.member(t[depth - 1])
                    if m is not None:
                        special[m.pos] = min(special.get(m.pos, _QUIET), urg, base)
        ranges: list[tuple[int, int]] = []
        for coll, a, b in self.targets.ranges:
            t = coll.tokens
            if t == tok:
                ranges.append((a, b))
            elif len(t) >= depth and t[: depth - 1] == tok:
                m = node.member(t[depth - 1])
                if m is not None:
                    special[m.pos] = min(special.get(m.pos, _QUIET), 1, base)
        if not is_list:
            return self._order_object(node, n, depth, base, special, ranges)
        if not ranges:
            return self._order_list(node, n, depth, base, special)
        return self._order_merged(node, n, depth, base, special, ranges)

    def _order_object(
        self, node: RNode, n: int, depth: int, base: int, special: dict[int, int], ranges: list[tuple[int, int]]
    ) -> Iterator[tuple[Key, RNode]]:
        """_order for an object: every member's key is known at once, so one sort replaces a
        merge of sorted streams (the same order: items compare whole, and the first of a
        member's keys is its least)."""
        required = self._required(node)
        keyed = [((u, _member_class(node, p, required), p), p) for p, u in special.items()]
        for a, b in ranges:
            keyed.extend(((min(1, base), _member_class(node, p, required), p), p) for p in range(a, b))
        keyed.extend(((base, _member_class(node, p, required), p), p) for p in range(n))
        keyed.sort()
        return _unique(node, depth, keyed)

    def _order_merged(
        self, node: RNode, n: int, depth: int, base: int, special: dict[int, int], ranges: list[tuple[int, int]]
    ) -> Iterator[tuple[Key, RNode]]:
        """_order for an array with requested ranges: lazy streams (an array may be long), merged."""
        streams: list[Iterator[tuple[tuple[int, int, int], int]]] = [
            iter(sorted(((u, 2, n - 1 - p), p) for p, u in special.items())),
        ]
        for a, b in ranges:
            streams.append(_list_stream(min(1, base), b - 1, a - 1, n))
        streams.append(_list_stream(base, n - 1, -1, n))
        return _unique(node, depth, heapq.merge(*streams))

    @staticmethod
    def _order_list(node: RNode, n: int, depth: int, base: int, special: dict[int, int]) -> Iterator[tuple[Key, RNode]]:
        """_order for an array with no requested range, the common case, without merging streams.

        Every member has the key ``(base, depth, 2, n - 1 - pos)`` (newest first) except the
        special ones, whose urgency is at most ``base``: those strictly more urgent come first,
        by key, and the rest keep their place, exactly the order of the general merge."""
        early = sorted((u, n - 1 - p, p) for p, u in special.items() if u < base)
        for u, r, p in early:
            yield (u, depth, 2, r), node.member_at(p)
        skip = {p for _, _, p in early}
        for pos in range(n - 1, -1, -1):
            if pos not in skip:
                yield (base, depth, 2, n - 1 - pos), node.member_at(pos)

    def _required(self, node: RNode) -> frozenset[str]:
        key = ("req", node.tokens)
        hit = self.memo.get(key)
        if hit is None:
            hit = frozenset()
            if isinstance(node.value, dict):
                _, loc = self.bp.schema.locate(node.tokens)
                if loc is not None and isinstance(loc.schema, dict):
                    req = loc.schema.get("required")
                    if isinstance(req, list):
                        hit = frozenset(r for r in req if isinstance(r, str))
            self.memo[key] = hit
        assert isinstance(hit, frozenset)
        return hit

    def _leads(self, node: RNode) -> bool:
        """True for an expansion target and for a node with a target below it: such a node is
        opened rather than summarised when it does not fit in full."""
        tok = node.tokens
        n = len(tok)
        for item in self.targets.items:
            if item.tokens[:n] == tok:
                return True
        for t in self.targets.soft:
            if len(t) > n and t[:n] == tok:
                return True
        return any(c.tokens[:n] == tok for c, _, _ in self.targets.ranges)

    def _push(self, key: Key, kind: str, node: RNode) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (key, self.seq, kind, node))

    def _next_member(self, sp: _Split) -> tuple[Key, RNode] | None:
        """The next member ``sp`` offers, with its key noted, or None once it stopped (out of
        members, or MAX_MISSES in a row did not fit)."""
        if sp.misses >= MAX_MISSES:
            return None
        nxt = next(sp.feed, None)
        if nxt is not None:
            self.keys[nxt[1].tokens] = nxt[0]
        return nxt

    def _feed(self, sp: _Split) -> None:
        nxt = self._next_member(sp)
        if nxt is not None:
            self._push(nxt[0], "promote", nxt[1])

    # -- kept results ---------------------------------------------------------------------
    def _lm(self, node: RNode) -> _ListMemo | None:
        """The scope's memo of ``node`` when it is a readable array (kept across builds by a
        ViewCache), else None (its results stay in this build's memo)."""
        tokens = node.tokens
        # A sentinel, not KeyError: compiled, every raised exception builds a traceback.
        hit = self._lms.get(tokens, _NO_MEMO)
        if hit is not _NO_MEMO:
            return hit
        lm = self.scope.list_memo(tokens) if node.readable and node.is_list else None
        self._lms[tokens] = lm
        return lm

    def _hint(self, node: RNode) -> None:
        """Tell the meter what is known of a readable node's value before it is measured: the
        kept facts of a readable array's member, or an array's size from its members' facts.
        Only for a kept scope: within one build the meter's own memo already measures each
        value once."""
        if not self.scope.kept:
            return
        value = node.value
        if type(value) is not dict and type(value) is not list:
            return
        hints = self.meter.hints
        key = id(value)
        if key in hints:
            return
        parent = node.parent
        plm = self._lm(parent) if parent is not None else None
        if plm is not None:
            hints[key] = plm.member_facts(node.pos, value, self.scope.budget)
        elif type(value) is list and node.readable:
            hint = hints[key] = self.scope.list_hint(node.tokens, hints)
            self.meter.walks[key] = hint.walk

    # -- costs --------------------------------------------------------------------------
    def full_cost(self, node: RNode, limit: int) -> tuple[int, int] | None:
        """(entries, characters) of showing ``node`` in full, or None when over ``limit``."""
        if node.readable:  # the common case, one anchor: the node itself (no generator)
            self.meter.work += 1
            k = str_size(node.pointer) + 1
            rem = limit - k
            if rem < 1 or self.meter.exhausted:
                return None
            self._hint(node)
            v = self.meter.size(node.value, rem)
            return None if v > rem else (1, k + v)
        n = s = 0
        for a in node.anchors():
            self.meter.work += 1
            k = str_size(a.pointer) + 1
            rem = limit - s - k
            if rem < 1 or self.meter.exhausted:
                return None
            self._hint(a)
            v = self.meter.size(a.value, rem)
            if v > rem:
                return None
            s += k + v
            n += 1
        return n, s

    def range_handle(self, node: RNode, a: int, b: int) -> tuple[Handle, int]:
        """The range handle for members ``a`` to ``b - 1`` of ``node`` and its size."""
        lm = self._lm(node)
        table: dict[Any, Any] = self.memo if lm is None else lm.rhandles
        key = ("range", node.tokens, a, b, self.summary) if lm is None else (a, b, self.summary)
        hit = table.get(key)
        if hit is not None:
            assert isinstance(hit, tuple)
            return hit
        ident = f"[{a}:{b}]"
        h = Handle(
            f"{node.pointer}#{ident}", node.pointer, ident, summary=self._range_summary(node, a, b, lm), items=b - a
        )
        out = (h, self.range_cost(node, a, b))
        table[key] = out
        if lm is not None and b - 1 > lm.hi:
            lm.hi = b - 1
        return out

    def range_cost(self, node: RNode, a: int, b: int) -> int:
        """The size of range_handle(node, a, b), by arithmetic instead of rendering it.

        The builder prices a range handle on every promotion (hundreds per view) but renders only
        the ranges left at the end, so pricing must not build and encode a handle each time. The
        rendered form is ``{"handle":P#I,"id":I,"items":N,"pointer":P[,"summary":S]}`` (keys
        sorted); ``#`` and the digits, brackets and colon of ``I`` need no escaping, so the
        handle string costs the pointer's string size plus ``1 + len(I)``. Tests pin this to the
        rendered length.
        """
        lm = self._lm(node)
        if lm is None:
            key = (node.tokens, a, b, self.summary)
            hit = self._rcost.get(key)
        else:
            rkey = (a, b, self.summary)
            hit = lm.ranges.get(rkey)
        if hit is not None:
            return hit
        p = self._ptr_size.get(node.tokens)
        if p is None:
            p = self._ptr_size[node.tokens] = str_size(node.pointer)
        ident = len(str(a)) + len(str(b)) + 3
        # {"handle":H,"id":I,"items":N,"pointer":P}: braces, four keys with colons, three commas
        size = 2 + 9 + (p + 1 + ident) + 1 + 5 + (ident + 2) + 1 + 8 + len(str(b - a)) + 1 + 10 + p
        summary = self._range_summary(node, a, b, lm)
        if summary is not None:
            size += 1 + 10 + str_size(summary)  # ,"summary":S
        if lm is None:
            self._rcost[key] = size
        else:
            lm.ranges[rkey] = size
            if b - 1 > lm.hi:
                lm.hi = b - 1
        return size

    def _range_summary(self, node: RNode, a: int, b: int, lm: _ListMemo | None) -> str | None:
        """A range's summary: its first and last members' names (None if any of the first two
        or the last is unnamed). Names are looked up first to last and the lookup stops at the
        first unnamed one: on a list of plain items (no ``id``) that is the range's start, which
        the builder's ranges share, so pricing a range costs one memo hit instead of naming its
        newest member on every promotion."""
        if self.summary <= 0:
            return None
        first = self._name(node, a, lm)
        if first is None:  # the common case of plain items: no tuple or list to build
            return None
        names: list[str] = [first]
        for pos in (a + 1, b - 1) if b - a > 2 else range(a + 1, b):
            name = self._name(node, pos, lm)
            if name is None:
                return None
            names.append(name)
        text = names[0] if b - a == 1 else f"{names[0]}, {names[1]}" if b - a == 2 else f"{names[0]} … {names[-1]}"
        return shorten(text, min(self.summary, 48))

    def _name(self, node: RNode, pos: int, lm: _ListMemo | None) -> str | None:
        """The name of member ``pos`` (see _member_name), looked up once; ``lm``: ``_lm(node)``."""
        if lm is not None:
            hit = lm.names.get(pos, _UNNAMED)
            if hit is not _UNNAMED:
                return hit
            name = lm.names[pos] = self._member_name(node, pos)
            if pos > lm.hi:
                lm.hi = pos
            return name
        key = (node.tokens, pos)
        hit = self._names.get(key, _UNNAMED)
        if hit is not _UNNAMED:  # ranges share their ends: name each member once
            return hit
        name = self._member_name(node, pos)
        self._names[key] = name
        return name

    @staticmethod
    def _member_name(node: RNode, pos: int) -> str | None:
        """How a range summary names a member: its key, or its id (None for a plain index)."""
        if not node.is_list:
            return node.member_token(pos)
        name = node.member_handle_id(pos)
        return None if name == node.member_token(pos) else name

    def _skeleton(self, node: RNode, size: int | str, summary: str | None) -> Handle:
        parent = node.parent
        assert parent is not None
        ident = node.handle_id()
        items = node.count() if node.container else None
        return Handle(f"{parent.pointer}#{ident}", parent.pointer, ident, node.pointer, summary, size, items)

    def skeleton_size(self, node: RNode) -> int:
        """The size of ``_skeleton(node, 0, None)`` (the least an item handle can take), by
        arithmetic instead of building and encoding the handle.

        The builder prices it for every member that does not fit in full, most of which never
        get a handle. The rendered form is ``{"handle":H,"id":I[,"items":N],"path":Q,
        "pointer":P,"size":0}`` (keys sorted) with ``H`` = ``P#I``; JSON escapes each character
        on its own, so ``H`` costs the string sizes of ``P`` and ``I`` less one (two quotes
        shared, one ``#``). Tests pin this to the rendered length.
        """
        parent = node.parent
        assert parent is not None
        p = str_size(parent.pointer)
        i = str_size(node.handle_id())
        # braces, then "handle":H ,"id":I ,"path":Q ,"pointer":P ,"size":0
        size = 2 + 9 + (p + i - 1) + 1 + 5 + i + 1 + 7 + str_size(node.pointer) + 1 + 10 + p + 1 + 8
        if node.container:
            size += 1 + 8 + len(str(node.count()))  # ,"items":N
        return size

    def item_handle(self, node: RNode) -> tuple[Handle, int]:
        """The item handle of ``node`` and its size."""
        plm = self._lm(node.parent) if node.parent is not None else None
        table: dict[Any, Any]
        key: Any
        if plm is None:
            table, key = self.memo, ("item", node.tokens, self.summary)
        else:  # a readable array's member: kept per index and summary length (budget: the scope's)
            table = plm.items.setdefault(node.pos, {})
            key = self.summary
            if node.pos > plm.hi:
                plm.hi = node.pos
        hit = table.get(key)
        if hit is not None:
            assert isinstance(hit, tuple)
            return hit
        fc = self.full_cost(node, self.budget)
        size: int | str = fc[1] if fc is not None else f">{self.budget}"
        h = self._skeleton(node, size, self._summary(node))
        out = (h, json_size(h.to_json()))
        table[key] = out
        return out

    def _summary(self, node: RNode) -> str | None:
        n = self.summary
        if n <= 0:
            return None
        value: JSON
        if node.readable:
            value = node.value
            if isinstance(value, str):
                return shorten(value, n)
        else:
            value = {}
            length = 0
            for a in node.anchors():
                value[a.pointer] = a.value
                length += len(a.pointer) + 3
                if length > n:
                    break
        text, longer = canonical_prefix(value, n)
        return shorten(text + ("…" if longer else ""), n)

    # -- moves --------------------------------------------------------------------------
    def _promote(self, m: RNode) -> bool:
        """Take pending member ``m`` out of its range: FULL, opened, or a handle, if it fits."""
        parent = m.parent
        assert parent is not None
        sp = self.splits[parent.tokens]
        i, old, new = sp.without(m.pos)
        rn = len(new) - 1
        # Direct method calls with positional arguments: this is the builder's hottest path
        # (issue 14), and compiled, a bound method kept in a local is called through Python.
        rs = -self.range_cost(parent, old[0], old[1])
        for a, b in new:
            rs += self.range_cost(parent, a, b)
        fc = self.full_cost(m, self.budget - self.total(0, 0, rn, rs))
        if fc is not None and self.total(fc[0], fc[1], rn, rs) <= self.budget:
            sp.intervals[i : i + 1] = new
            self.dn += fc[0]
            self.ds += fc[1]
            self.hn += rn
            self.hs += rs
            self.rep[m.tokens] = (_FULL, m)
            return True
        if m.container and self._leads(m):
            sp.intervals[i : i + 1] = new
            self._apply(hn=rn, hs=rs)
            if self._split(m):
                return True
            sp.intervals[i : i + len(new)] = [old]
            self._apply(hn=-rn, hs=-rs)
        skeleton = self.skeleton_size(m)
        if self.fits(hn=rn + 1, hs=rs + skeleton):
            h, cost = self.item_handle(m)
            if self.fits(hn=rn + 1, hs=rs + cost):
                sp.intervals[i : i + 1] = new
                self._apply(hn=rn + 1, hs=rs + cost)
                self.handles[m.tokens] = (h, cost)
                self.rep[m.tokens] = (_HANDLE, m)
                if m.container and m.count():
                    urg, depth, _, rank = self.keys[m.tokens]
                    self._push((urg, depth + 1, -1, rank), _SPLIT, m)
                return True
        return False

    def _split(self, m: RNode) -> bool:
        """Open ``m`` (a handle, or just taken out of its parent's range): its members start
        pending, and the best one is promoted at once (else opening would only lose the handle)."""
        if not m.count():
            return False
        if m.parent is not None and not m.is_list and m.count() <= RECORD_MAX:
            return self._split_record(m)
        saved = (self.dn, self.ds, self.hn, self.hs)
        prior = self.rep.get(m.tokens)
        if prior is not None:
            self._apply(hn=-1, hs=-self.handles[m.tokens][1])
        sp = _Split(m, self._order(m))
        rc = self.range_cost(m, 0, sp.intervals[0][1])
        if not self.fits(hn=1, hs=rc):
            self.dn, self.ds, self.hn, self.hs = saved
            return False
        self._apply(hn=1, hs=rc)
        self.splits[m.tokens] = sp
        self.rep[m.tokens] = (_SPLIT, m)
        if m.parent is not None:
            first = self._next_member(sp)
            assert first is not None
            if not self._promote(first[1]):
                del self.splits[m.tokens]
                if prior is not None:
                    self.rep[m.tokens] = prior
                else:
                    del self.rep[m.tokens]
                self.dn, self.ds, self.hn, self.hs = saved
                return False
        if prior is not None:
            del self.handles[m.tokens]
        self._feed(sp)
        return True

    def _split_record(self, m: RNode) -> bool:
        """Open a small object all at once: every member FULL or a handle, never a range, so
        opening never shows less than the record's own handle did; no change if that does not fit."""
        prior = self.rep.get(m.tokens)
        delta = [0, 0, -1, -self.handles[m.tokens][1]] if prior is not None else [0, 0, 0, 0]
        plan: list[tuple[Key, RNode, str, tuple[int, int] | tuple[Handle, int]]] = []
        for key, member in self._order(m):
            fc = self.full_cost(member, self.budget - self.total(*delta))
            if fc is not None and self.fits(delta[0] + fc[0], delta[1] + fc[1], delta[2], delta[3]):
                delta[0] += fc[0]
                delta[1] += fc[1]
                plan.append((key, member, _FULL, fc))
                continue
            h, cost = self.item_handle(member)
            delta[2] += 1
            delta[3] += cost
            if not self.fits(*delta):
                return False
            plan.append((key, member, _HANDLE, (h, cost)))
        self._apply(*delta)
        if prior is not None:
            del self.handles[m.tokens]
        sp = _Split(m, iter(()))
        sp.intervals = []
        self.splits[m.tokens] = sp
        self.rep[m.tokens] = (_SPLIT, m)
        for key, member, kind, info in plan:
            self.keys[member.tokens] = key
            self.rep[member.tokens] = (kind, member)
            if kind == _HANDLE:
                assert isinstance(info[0], Handle)
                self.handles[member.tokens] = (info[0], info[1])
                if member.container and member.count():
                    urg, depth, _, rank = key
                    self._push((urg, depth + 1, -1, rank), _SPLIT, member)
        return True

    def run(self) -> bool:
        """Choose every representation; False when not even the minimal one fits."""
        root = self.root
        if root is None:
            return self.fits()
        fc = self.full_cost(root, self.budget - self.total())
        if fc is not None and self.fits(dn=fc[0], ds=fc[1]):
            self._apply(dn=fc[0], ds=fc[1])
            self.rep[()] = (_FULL, root)
            return True
        if not self._split(root):
            return False
        heap = self.heap
        while heap:
            _, _, kind, node = heapq.heappop(heap)
            if kind != "promote":
                if self.rep.get(node.tokens, ("",))[0] == _HANDLE:
                    self._split(node)
                continue
            parent = node.parent
            assert parent is not None
            sp = self.splits[parent.tokens]
            while True:
                if self._promote(node):
                    sp.misses = 0
                else:
                    sp.misses += 1
                nxt = self._next_member(sp)
                if nxt is None:
                    break
                key, node = nxt
                # The next member of the same collection is promoted at once, without a trip
                # through the queue, when it is strictly first there: a pushed entry would
                # follow every queued one of an equal key (its sequence number is the highest),
                # so the order of moves, and so the view, is exactly the queue's.
                if heap and heap[0][0] <= key:
                    self._push(key, "promote", node)
                    break
        return True

    def close(self) -> None:
        """Drop what this attempt decided, once the builder is done with it: each split's member
        feed is a generator whose frame holds this Fill, a reference cycle that only the cyclic
        garbage collector could free otherwise (issue 14)."""
        self.splits.clear()
        self.heap.clear()
        self.rep.clear()
        self.keys.clear()
        self.handles.clear()

    def output(self) -> tuple[dict[str, JSON], list[Handle]]:
        """The data entries (still referencing state values) and the handles in document order."""
        data: dict[str, JSON] = {}
        keyed: list[tuple[tuple[int, ...], Handle]] = []
        for kind, node in self.rep.values():
            if kind == _FULL:
                for anchor in node.anchors():
                    data[anchor.pointer] = anchor.value
            elif kind == _HANDLE:
                keyed.append((_positions(node), self.handles[node.tokens][0]))
        for sp in self.splits.values():
            base = _positions(sp.node)
            for a, b in sp.intervals:
                keyed.append(((*base, a), self.range_handle(sp.node, a, b)[0]))
        keyed.sort(key=lambda kh: kh[0])
        return data, [h for _, h in keyed]


def _positions(node: RNode) -> tuple[int, ...]:
    out: list[int] = []
    n: RNode | None = node
    while n is not None and n.parent is not None:
        out.append(n.pos)
        n = n.parent
    return tuple(reversed(out))
