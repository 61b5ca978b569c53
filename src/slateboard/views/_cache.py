"""What one view build can hand to the next: measured sizes, names and handles (issue 14).

A board's views are rebuilt after every committed change, and consecutive states differ in a few
paths (an appended entry, a changed field), yet each build measured and named the same members
again. ``ViewCache`` keeps those results from one build to the next, per worker, keyed by *path*
(the kernel changes the state in place, so an object's identity says nothing about its
content), and forgets what a committed change may have touched (``ViewCache.changed``).

What is kept, and what each entry depends on (so what must forget it):

* for each **readable array** of a worker's region (``_ListMemo``, keyed by the array's tokens):
  per member index, the member's flat-size facts (``Known``: nodes, size, characters of its
  strings, nesting; what ``_measure._flat_size`` would find), its range-summary name and its item
  handles; per range ``(a, b)``, the range handle and its size. A member entry depends only on
  the member's content (its position is its key, its pointer a function of the tokens); a range
  entry on the members it names (``a``, ``a + 1``, ``b - 1``, or all of a range of at most two);
  nothing depends on the array's other content or its length. Readability is a function of the
  tokens for a given contract, which is why all of it is kept per worker.
* pointer sizes per collection tokens (a function of the tokens alone, never stale).

Invalidation (``_Scope.invalidate``), for each changed path ``C`` of a committed decision (the
kernel's rebased events: final paths, a dropped effect always lies below a reported one): every
array memo at or below ``C`` is dropped; for an array memo above ``C``, the member ``C`` lies in
is dropped (with the ranges naming it); an array insert or delete at index ``k`` of ``Q`` also
drops the members from ``k`` on of ``Q``'s memo (they shifted) and every array memo below a
member of ``Q`` from ``k`` on. A change of the root, a skipped version or a pending decision
(see ``StepEngine.view``) clears everything. Nothing else is kept: priorities, region shape,
counts and the fill itself are computed afresh at each build, so a view built with a cache is
byte-identical to one built without (tests/views/test_views_cache.py checks it on random patches).

Sizes enter the build through ``Meter.hints`` and ``Meter.walks`` (by object identity, valid for
that one build): a hint answers exactly what ``_flat_size(node, room, work_left)`` would, a walk
what ``Meter._walk`` finds for an array of nested records that fits (with the same work and the
same member sizes noted), so the meter's results and its work count, hence the work cap, are
unchanged. An array measured whole is added up from kept running sums of its leading members
(``_ListMemo.prefix``, cut back from a changed or shifted member on), so a board that grew by
one entry costs that entry, not the whole board.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import orjson

from ..kernel.canonical import JSON
from ..kernel.pointer import Tokens, is_array_index
from ._measure import _flat_size, scalar_size
from ._model import Handle

__all__ = ["ViewCache"]

MAX_MEMBERS = 8192
"""A per-member table of one array memo is emptied past this many entries (bounds memory)."""
MAX_RANGES = 512
"""The range tables of one array memo are emptied past this many entries (bounds the scans)."""
MAX_LISTS = 64
"""A worker's array memos are all dropped past this many arrays."""
MAX_POINTERS = 4096
"""The pointer-size table is emptied past this many entries."""

_SCALARS = (str, int, float, bool, type(None))

FlatResult = tuple[int, int] | None


class Known:
    """Flat-size facts of one JSON value: what ``_flat_size`` finds, whatever the room.

    ``nodes`` and ``chars`` are the node count and total string length ``_flat_size`` adds up,
    ``size`` the exact canonical size, ``depth`` 0 for a scalar, 1 for a container of scalars, 2
    for a container with containers of scalars. ``_flat_size(value, room, work_left)`` is
    ``(nodes, size)`` when ``chars + nodes <= room`` and ``nodes <= work_left`` (it checks them
    after each member and they only grow, so the final sums decide; an empty container is never
    checked), else None.
    """

    __slots__ = ("chars", "depth", "nodes", "size")

    def __init__(self, nodes: int, size: int, chars: int, depth: int) -> None:
        self.nodes = nodes
        self.size = size
        self.chars = chars
        self.depth = depth

    def __call__(self, node: JSON, room: int, work_left: int) -> FlatResult:
        # _flat_size checks after each member: an empty container passes unchecked.
        if self.nodes > 1 and (self.chars + self.nodes > room or self.nodes > work_left):
            return None
        return self.nodes, self.size


class _Never:
    """A value ``_flat_size`` never measures: deeper than two levels, or not plain JSON."""

    __slots__ = ()

    def __call__(self, node: JSON, room: int, work_left: int) -> FlatResult:
        return None


class _Over:
    """A value whose strings and nodes alone exceed ``bound``: ``_flat_size`` declines it at any
    room up to ``bound`` (only measured that far, which keeps measuring O(bound))."""

    __slots__ = ("bound",)

    def __init__(self, bound: int) -> None:
        self.bound = bound

    def __call__(self, node: JSON, room: int, work_left: int) -> FlatResult:
        if room <= self.bound:
            return None
        assert isinstance(node, (dict, list))
        return _flat_size(node, room, work_left)


NEVER = _Never()
Facts = Known | _Never | _Over


def facts(value: JSON, bound: int) -> Facts:
    """The flat-size facts of ``value``, looking at no more than about ``bound`` characters."""
    kind = type(value)
    if kind is not dict and kind is not list:
        if kind not in _SCALARS:
            return NEVER
        try:
            size = scalar_size(value)
        except (TypeError, orjson.JSONEncodeError):
            return NEVER
        return Known(1, size, len(value) if kind is str else 0, 0)
    nodes = 1
    chars = 0
    depth = 1
    for child in value.values() if kind is dict else value:
        nodes += 1
        ckind = type(child)
        if ckind is str:
            chars += len(child)
        elif ckind is dict or ckind is list:
            depth = 2
            for leaf in child.values() if ckind is dict else child:
                nodes += 1
                if type(leaf) is str:
                    chars += len(leaf)
                elif type(leaf) not in _SCALARS:
                    return NEVER
        elif ckind not in _SCALARS:
            return NEVER
        if chars + nodes > bound:
            return _Over(bound)
    try:
        raw = orjson.dumps(value)
    except TypeError:
        return NEVER
    return Known(nodes, len(raw) if raw.isascii() else len(raw.decode("utf-8")), chars, depth)


class _ListMemo:
    """What is kept about one readable array of a worker's region (see the module docstring)."""

    __slots__ = ("facts", "hi", "items", "names", "prefix", "ranges", "rhandles")

    def __init__(self) -> None:
        self.facts: dict[int, Facts] = {}
        # Running sums (nodes, chars, size, deepest) of the facts of members 0..i, for a leading
        # run of members with Known facts: _ListHint adds up a long array from where they end.
        self.prefix: list[tuple[int, int, int, int]] = []
        self.names: dict[int, str | None] = {}
        self.items: dict[int, dict[int, tuple[Handle, int]]] = {}  # index -> summary limit -> handle
        self.ranges: dict[tuple[int, int, int], int] = {}  # (a, b, summary limit) -> size
        self.rhandles: dict[tuple[int, int, int], tuple[Handle, int]] = {}
        self.hi = -1  # no entry involves an index above this

    def member_facts(self, pos: int, value: JSON, bound: int) -> Facts:
        """The facts of member ``pos`` (whose value is ``value``), computed once."""
        known = self.facts.get(pos)
        if known is None:
            known = self.facts[pos] = facts(value, bound)
            if pos > self.hi:
                self.hi = pos
        return known

    def drop_member(self, i: int) -> None:
        """Forget member ``i`` and the ranges that name it (its content changed)."""
        if i > self.hi:
            return
        del self.prefix[i:]
        self.facts.pop(i, None)
        self.names.pop(i, None)
        self.items.pop(i, None)
        self._drop_ranges(lambda a, b: (a <= i < b) if b - a <= 2 else i in (a, a + 1, b - 1))

    def drop_from(self, k: int) -> None:
        """Forget members ``k`` and after, and the ranges naming any (they shifted)."""
        if k > self.hi:
            return
        del self.prefix[k:]
        for table in (self.facts, self.names, self.items):
            for i in [i for i in table if i >= k]:
                del table[i]
        self._drop_ranges(lambda a, b: b - 1 >= k)
        self.hi = k - 1

    def _drop_ranges(self, hit: Any) -> None:
        for table in (self.ranges, self.rhandles):
            for key in [key for key in table if hit(key[0], key[1])]:
                del table[key]

    def prune(self) -> None:
        """Bound the memo's size (emptying a table only costs recomputation)."""
        if len(self.facts) > MAX_MEMBERS:
            self.facts.clear()
        if len(self.prefix) > MAX_MEMBERS:
            self.prefix.clear()
        if len(self.names) > MAX_MEMBERS:
            self.names.clear()
        if len(self.items) > MAX_MEMBERS:
            self.items.clear()
        if len(self.ranges) > MAX_RANGES or len(self.rhandles) > MAX_RANGES:
            self.ranges.clear()
            self.rhandles.clear()


class _ListHint:
    """``_flat_size`` of a readable array from its members' facts (kept per index), stopping
    where ``_flat_size`` stops: the sums it checks only grow, so the first member past the room
    decides, and members after it are never looked at. The kept running sums of the leading
    members stand for them (their last sums pass the checks exactly when every earlier one
    does), so an array that grew by a few members costs those few."""

    __slots__ = ("bound", "hints", "memo")

    def __init__(self, memo: _ListMemo, bound: int, hints: dict[int, Any] | None = None) -> None:
        self.memo = memo
        self.bound = bound
        self.hints = hints

    def _members(self, node: list[JSON], room: int) -> None:
        """A member two levels deep makes the array three: the walk then measures members one
        by one, the last first, until past the room; tell the meter (``hints``) their facts."""
        if self.hints is None:
            return
        seen = 0
        for i in range(len(node) - 1, -1, -1):
            child = node[i]
            known = self.memo.member_facts(i, child, self.bound)
            if type(child) is dict or type(child) is list:
                self.hints[id(child)] = known
            if type(known) is not Known:
                return
            seen += known.size + 1
            if seen > room:
                return  # the walk stops here (at the latest)

    def __call__(self, node: JSON, room: int, work_left: int) -> FlatResult:
        assert isinstance(node, list)
        memo, bound = self.memo, self.bound
        table = memo.facts
        nodes = 1
        chars = 0
        size = 1 + len(node) if node else 2  # brackets and commas
        prefix = memo.prefix
        start = min(len(prefix), len(node))
        if start:
            pn, pc, ps, deepest = prefix[start - 1]
            if deepest > 1:
                self._members(node, room)
                return None  # a third level below the array
            nodes += pn
            chars += pc
            size += ps
            if chars + nodes > room or nodes > work_left:
                return None
        for i in range(start, len(node)):
            child = node[i]
            known = table.get(i)
            if known is None:
                known = memo.member_facts(i, child, bound)
            if type(known) is not Known:
                if type(known) is _Over and room > bound:
                    return _flat_size(node, room, work_left)
                return None  # a third level, not JSON, or over the room on its own
            if i == len(prefix):
                prefix.append((nodes - 1 + known.nodes, chars + known.chars, size - (1 + len(node)) + known.size,
                               max(known.depth, prefix[-1][3] if prefix else 0)))  # fmt: skip
            if known.depth > 1:
                self._members(node, room)
                return None  # a third level below the array
            nodes += known.nodes
            chars += known.chars
            size += known.size
            if chars + nodes > room or nodes > work_left:
                return None
        return nodes, size

    def walk(self, node: JSON, limit: int, work_left: int, flat: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
        """What ``Meter._walk`` finds for the array when it fits: ``(size, nodes)``, or None to
        walk it. The walk measures a three-level array member by member; when the exact size
        is within ``limit`` every room check on the way passes (each member's strings and nodes
        are at most its size, and each step's room is ``limit`` less what came before) and when
        the nodes are within ``work_left`` the cap never trips, so it ends with that size,
        exact, having counted every node once and noted each container member's flat size in
        ``flat`` (the meter's table; done here too)."""
        assert isinstance(node, list)
        memo, bound = self.memo, self.bound
        prefix = memo.prefix
        for i in range(len(prefix), len(node)):
            if prefix and prefix[-1][2] + 1 + len(node) > limit:
                return None  # already over the limit: measuring further members cannot help
            known = memo.facts.get(i)
            if known is None:
                known = memo.member_facts(i, node[i], bound)
            if type(known) is not Known:
                return None
            last = prefix[-1] if prefix else (0, 0, 0, 0)
            prefix.append(
                (last[0] + known.nodes, last[1] + known.chars, last[2] + known.size, max(last[3], known.depth))
            )
        if not node or len(prefix) < len(node):
            return None
        nodes, _, size, _ = prefix[len(node) - 1]
        size += 1 + len(node)
        nodes += 1
        if size > limit or nodes > work_left:
            return None
        for i, child in enumerate(node):
            if type(child) is dict or type(child) is list:
                known = memo.member_facts(i, child, bound)  # kept, unless pruned since
                assert type(known) is Known
                flat[id(child)] = (known.nodes, known.size)
        return size, nodes


class _Scope:
    """One worker's kept results, for one contract and one budget."""

    __slots__ = ("budget", "contract", "kept", "lists", "pointer_sizes")

    def __init__(self, contract: object, budget: int, kept: bool = False) -> None:
        self.contract = contract
        self.budget = budget
        self.kept = kept
        """True when a ViewCache carries it to later builds (else it lives for one build)."""
        self.lists: dict[Tokens, _ListMemo] = {}
        self.pointer_sizes: dict[Tokens, int] = {}
        """The JSON string size of each collection's pointer (a function of the tokens alone)."""

    def list_memo(self, tokens: Tokens) -> _ListMemo:
        """The memo of the readable array at ``tokens`` (created empty)."""
        memo = self.lists.get(tokens)
        if memo is None:
            memo = self.lists[tokens] = _ListMemo()
        return memo

    def list_hint(self, tokens: Tokens, hints: dict[int, Any] | None = None) -> _ListHint:
        """The ``Meter`` hint for the readable array at ``tokens`` measured whole (``hints``:
        the meter's, told its members' facts when the walk will measure them one by one)."""
        return _ListHint(self.list_memo(tokens), self.budget, hints)

    def invalidate(self, tokens: Tokens, shifts: bool) -> None:
        """Forget what a change at ``tokens`` may have made stale (see the module docstring);
        ``shifts``: an array insert or delete there moved the later members."""
        lists = self.lists
        n = len(tokens)
        for p in list(lists):
            m = len(p)
            if m >= n:
                if p[:n] == tokens:
                    del lists[p]  # the array itself, or something above it, changed
            elif tokens[:m] == p:
                token = tokens[m]
                if is_array_index(token):
                    lists[p].drop_member(int(token))
                else:
                    del lists[p]
        if not shifts or not n or not is_array_index(tokens[-1]):
            return
        parent, k = tokens[:-1], int(tokens[-1])
        for p in list(lists):
            if p == parent:
                lists[p].drop_from(k)
            elif len(p) > n - 1 and p[: n - 1] == parent:
                token = p[n - 1]
                if not is_array_index(token) or int(token) >= k:
                    del lists[p]  # it lies in a member that moved

    def prune(self) -> None:
        """Bound the scope's size."""
        if len(self.lists) > MAX_LISTS:
            self.lists.clear()
        for memo in self.lists.values():
            memo.prune()
        if len(self.pointer_sizes) > MAX_POINTERS:
            self.pointer_sizes.clear()


class ChangeEvent(Protocol):
    """What ``ViewCache.changed`` reads of a committed event (``kernel.Event`` has it)."""

    @property
    def tokens(self) -> Tokens: ...

    @property
    def kind(self) -> str: ...


class ViewCache:
    """Results of building one board's views that the next build can reuse (see the module).

    Owned by whoever builds the views of one board as its state evolves (the step engine keeps
    one per board) and passed as ``build_view(..., cache=...)``. Its owner must tell it every
    committed change, in order: ``changed(decision.events, version)`` right after a commit, and
    ``clear()`` when the state is replaced (a reload). A build at another version than the last
    one told clears it first, so a change it was not told about (a catch-up from the store) costs
    only the reuse. Guarantee: a view built with a cache is byte-identical (text, handles, hash)
    to the view built without one, as long as the state was only changed in the ways it was told;
    the state must not change while a view is built.
    """

    __slots__ = ("_scopes", "version")

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}
        self.version: int | None = None
        """The state version the kept results describe (None: none yet)."""

    def clear(self) -> None:
        """Forget everything (the state was replaced or changed in an unknown way)."""
        self._scopes.clear()
        self.version = None

    def changed(self, events: Iterable[ChangeEvent], version: int) -> None:
        """A decision was committed: its ``events`` (the kernel's, final paths) made ``version``
        from ``version - 1``. Forgets what they may have touched; clears everything for a root
        change or when the kept results were not of ``version - 1``."""
        if self.version != version - 1:
            self.clear()
            self.version = version
            return
        self.version = version
        scopes = list(self._scopes.values())
        for event in events:
            tokens = tuple(event.tokens)
            if event.kind == "root" or not tokens:
                self._scopes.clear()
                return
            shifts = event.kind in ("insert", "delete")
            for scope in scopes:
                scope.invalidate(tokens, shifts)

    def scope(self, worker: str, contract: object, budget: int, version: int) -> _Scope:
        """The kept results of ``worker``'s views (new when its contract or budget changed), at
        ``version`` (everything is forgotten first when the cache describes another one)."""
        if self.version != version:
            self.clear()
            self.version = version
        scope = self._scopes.get(worker)
        if scope is None or scope.contract is not contract or scope.budget != budget:
            scope = self._scopes[worker] = _Scope(contract, budget, kept=True)
        return scope
