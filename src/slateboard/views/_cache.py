"""What one view build can hand to the next: measured sizes, names and handles (issue 14).

A board's views are rebuilt after every committed change, and consecutive states differ in a few
paths (an appended entry, a changed field), yet each build measured and named the same members
again. ``ViewCache`` keeps those results from one build to the next, keyed by *path*
(the kernel changes the state in place, so an object's identity says nothing about its
content), and forgets what a committed change may have touched (``ViewCache.changed``).

What is kept, and what each entry depends on (so what must forget it):

* for each **readable array** of a worker's region (``_ListMemo``, keyed by the array's tokens):
  per member index, the member's flat-size facts (``Facts``, a tuple of ints: nodes, size,
  characters of its strings, nesting; what ``_measure._flat_size`` would find) and running sums
  of them (``_Sizes``: a function of the members' content and the budget alone, so kept once per
  board and budget and shared by its workers' memos), its range-summary name and its item
  handles (per worker); per range ``(a, b)``, the range handle and its size (per worker). A member entry depends only on
  the member's content (its position is its key, its pointer a function of the tokens); a range
  entry on the members it names (``a``, ``a + 1``, ``b - 1``, or all of a range of at most two);
  nothing depends on the array's other content or its length. Readability is a function of the
  tokens for a given contract, which is why all of it is kept per worker.
* pointer sizes per collection tokens (a function of the tokens alone, never stale; one table
  per board).

Invalidation (``_Scope.invalidate``), for each changed path ``C`` of a committed decision (the
kernel's rebased events: final paths, a dropped effect always lies below a reported one): every
array memo at or below ``C`` is dropped; for an array memo above ``C``, the member ``C`` lies in
is dropped (with the ranges naming it); an array insert or delete at index ``k`` of ``Q`` also
drops the members from ``k`` on of ``Q``'s memo (they shifted) and every array memo below a
member of ``Q`` from ``k`` on. A change of the root, a skipped version or a pending decision
(see ``StepEngine.view``) clears everything. The shared sizes are invalidated once, by the same
rules, and a worker's memo also forgets the members it is told of in the sizes it holds, so sizes
a pruned table let go stay right for the memos still holding them. Nothing else is kept: priorities, region shape,
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

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

import orjson

from ..kernel.canonical import JSON
from ..kernel.pointer import Tokens, is_array_index
from ._measure import NEVER, OVER, _flat_size, scalar_size
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


Facts = tuple[int, int, int, int]
"""Flat-size facts of one JSON value, ``(nodes, size, chars, depth)``: a tuple of ints, which the
garbage collector stops tracking (a board keeps a few per step, for as long as it lives).
Read by ``_measure.told`` (a meter's hint), which answers exactly what ``_flat_size`` would:

* ``depth >= 0`` (known): ``nodes`` and ``chars`` are the node count and total string length
  ``_flat_size`` adds up, ``size`` the exact canonical size, ``depth`` 0 for a scalar, 1 for a
  container of scalars, 2 for a container with containers of scalars;
* ``NEVER`` (depth -1): a value ``_flat_size`` never measures (deeper, or not plain JSON);
* ``(0, bound, 0, OVER)``: strings and nodes alone exceed ``bound`` (only measured that far):
  declined at any room up to ``bound``, measured afresh above it.
"""


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
        return (1, size, len(value) if kind is str else 0, 0)
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
            return (0, bound, 0, OVER)
    try:
        raw = orjson.dumps(value)
    except TypeError:
        return NEVER
    return (nodes, len(raw) if raw.isascii() else len(raw.decode("utf-8")), chars, depth)


class _Sizes:
    """The measured sizes of one array's members: a function of their content and the bound
    alone, so one board's workers share it (``ViewCache``) whatever their contracts."""

    __slots__ = ("facts", "hi", "prefix")

    def __init__(self) -> None:
        self.facts: dict[int, Facts] = {}
        # Running sums (nodes, chars, size, deepest) of the facts of members 0..i, for a leading
        # run of members with known facts: _ListHint adds up a long array from where they end.
        self.prefix: list[tuple[int, int, int, int]] = []
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
        """Forget member ``i`` (its content changed)."""
        if i > self.hi:
            return
        del self.prefix[i:]
        self.facts.pop(i, None)

    def drop_from(self, k: int) -> None:
        """Forget members ``k`` and after (they shifted)."""
        if k > self.hi:
            return
        del self.prefix[k:]
        for i in [i for i in self.facts if i >= k]:
            del self.facts[i]
        self.hi = k - 1

    def prune(self) -> None:
        """Bound the table's size (emptying it only costs recomputation)."""
        if len(self.facts) > MAX_MEMBERS:
            self.facts.clear()
        if len(self.prefix) > MAX_MEMBERS:
            self.prefix.clear()


_NOTHING: Mapping[Any, Any] = MappingProxyType({})
"""The table of a ``_ListMemo`` that nothing was written to: one read-only empty mapping shared
by all of them (most memos never name a member or price a range), replaced by a dict of its own
on the first write (``_ListMemo.put_*``)."""


class _ListMemo:
    """What is kept about one readable array of a worker's region (see the module docstring):
    its members' sizes (``sizes``, shared by the board's workers; ``facts`` and ``prefix`` are
    its tables, never rebound) and this worker's names and handles. Those four tables are read
    directly and written through ``put_*`` / ``item_table``: until the first write each is the
    shared empty ``_NOTHING`` (a board keeps a memo per readable array for as long as it
    lives, and most never fill them)."""

    __slots__ = ("facts", "hi", "items", "names", "prefix", "ranges", "rhandles", "sizes")

    def __init__(self, sizes: _Sizes | None = None) -> None:
        self.sizes = sizes if sizes is not None else _Sizes()
        self.facts = self.sizes.facts
        self.prefix = self.sizes.prefix
        self.names: Mapping[int, str | None] = _NOTHING
        self.items: Mapping[int, dict[int, tuple[Handle, int]]] = _NOTHING  # index -> summary limit -> handle
        self.ranges: Mapping[tuple[int, int, int], int] = _NOTHING  # (a, b, summary limit) -> size
        self.rhandles: Mapping[tuple[int, int, int], tuple[Handle, int]] = _NOTHING
        self.hi = -1  # no entry of this worker's tables involves an index above this

    def put_name(self, pos: int, name: str | None) -> None:
        """Keep member ``pos``'s name."""
        if self.names is _NOTHING:
            self.names = {}
        _writable(self.names)[pos] = name

    def put_range(self, key: tuple[int, int, int], size: int) -> None:
        """Keep the size of range handle ``key`` (a, b, summary limit)."""
        if self.ranges is _NOTHING:
            self.ranges = {}
        _writable(self.ranges)[key] = size

    def put_rhandle(self, key: tuple[int, int, int], out: tuple[Handle, int]) -> None:
        """Keep range handle ``key`` (a, b, summary limit) and its size."""
        if self.rhandles is _NOTHING:
            self.rhandles = {}
        _writable(self.rhandles)[key] = out

    def item_table(self, pos: int) -> dict[int, tuple[Handle, int]]:
        """The item handles of member ``pos`` by summary limit (created empty)."""
        if self.items is _NOTHING:
            self.items = {}
        return _writable(self.items).setdefault(pos, {})

    def member_facts(self, pos: int, value: JSON, bound: int) -> Facts:
        """The facts of member ``pos`` (whose value is ``value``), computed once per board."""
        return self.sizes.member_facts(pos, value, bound)

    def drop_member(self, i: int) -> None:
        """Forget member ``i`` and the ranges that name it (its content changed)."""
        # The shared sizes too: this memo may hold them after the board's table let them go.
        self.sizes.drop_member(i)
        if i > self.hi:
            return
        if self.names:
            _writable(self.names).pop(i, None)
        if self.items:
            _writable(self.items).pop(i, None)
        self._drop_ranges(lambda a, b: (a <= i < b) if b - a <= 2 else i in (a, a + 1, b - 1))

    def drop_from(self, k: int) -> None:
        """Forget members ``k`` and after, and the ranges naming any (they shifted)."""
        self.sizes.drop_from(k)
        if k > self.hi:
            return
        for table in (self.names, self.items):
            if table:
                for i in [i for i in table if i >= k]:
                    del _writable(table)[i]
        self._drop_ranges(lambda a, b: b - 1 >= k)
        self.hi = k - 1

    def _drop_ranges(self, hit: Any) -> None:
        for table in (self.ranges, self.rhandles):
            if table:
                for key in [key for key in table if hit(key[0], key[1])]:
                    del _writable(table)[key]

    def prune(self) -> None:
        """Bound the memo's size (emptying a table only costs recomputation)."""
        self.sizes.prune()
        if len(self.names) > MAX_MEMBERS:
            self.names = _NOTHING
        if len(self.items) > MAX_MEMBERS:
            self.items = _NOTHING
        if len(self.ranges) > MAX_RANGES or len(self.rhandles) > MAX_RANGES:
            self.ranges = _NOTHING
            self.rhandles = _NOTHING


_K = TypeVar("_K")
_V = TypeVar("_V")


def _writable(table: Mapping[_K, _V]) -> dict[_K, _V]:
    """A memo table that was written to (a dict of its own, never ``_NOTHING``)."""
    assert type(table) is dict
    return table


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
            if known[3] < 0:
                return
            seen += known[1] + 1
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
            k_nodes, k_size, k_chars, k_depth = known
            if k_depth < 0:
                if k_depth == OVER and room > bound:
                    return _flat_size(node, room, work_left)
                return None  # a third level, not JSON, or over the room on its own
            if i == len(prefix):
                prefix.append((nodes - 1 + k_nodes, chars + k_chars, size - (1 + len(node)) + k_size,
                               max(k_depth, prefix[-1][3] if prefix else 0)))  # fmt: skip
            if k_depth > 1:
                self._members(node, room)
                return None  # a third level below the array
            nodes += k_nodes
            chars += k_chars
            size += k_size
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
            if known[3] < 0:
                return None
            last = prefix[-1] if prefix else (0, 0, 0, 0)
            prefix.append((last[0] + known[0], last[1] + known[2], last[2] + known[1], max(last[3], known[3])))
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
                assert known[3] >= 0
                flat[id(child)] = (known[0], known[1])
        return size, nodes


class _Scope:
    """One worker's kept results, for one contract and one budget; the sizes it measures and
    its pointer sizes live in tables shared with the board's other workers (``ViewCache``)."""

    __slots__ = ("budget", "contract", "kept", "lists", "pointer_sizes", "sizes")

    def __init__(
        self,
        contract: object,
        budget: int,
        kept: bool = False,
        sizes: dict[Tokens, _Sizes] | None = None,
        pointer_sizes: dict[Tokens, int] | None = None,
    ) -> None:
        self.contract = contract
        self.budget = budget
        self.kept = kept
        """True when a ViewCache carries it to later builds (else it lives for one build)."""
        self.lists: dict[Tokens, _ListMemo] = {}
        self.sizes: dict[Tokens, _Sizes] = sizes if sizes is not None else {}
        """The members' sizes of each readable array, at this budget (shared by the board's workers)."""
        self.pointer_sizes: dict[Tokens, int] = pointer_sizes if pointer_sizes is not None else {}
        """The JSON string size of each collection's pointer (a function of the tokens alone)."""

    def list_memo(self, tokens: Tokens) -> _ListMemo:
        """The memo of the readable array at ``tokens`` (created empty, with the board's sizes)."""
        memo = self.lists.get(tokens)
        if memo is None:
            sizes = self.sizes.get(tokens)
            if sizes is None:
                sizes = self.sizes[tokens] = _Sizes()
            memo = self.lists[tokens] = _ListMemo(sizes)
        return memo

    def list_hint(self, tokens: Tokens, hints: dict[int, Any] | None = None) -> _ListHint:
        """The ``Meter`` hint for the readable array at ``tokens`` measured whole (``hints``:
        the meter's, told its members' facts when the walk will measure them one by one)."""
        return _ListHint(self.list_memo(tokens), self.budget, hints)

    def invalidate(self, tokens: Tokens, shifts: bool) -> None:
        """Forget what a change at ``tokens`` may have made stale in this worker's memos (see
        the module docstring; the shared sizes are the ViewCache's to invalidate, once);
        ``shifts``: an array insert or delete there moved the later members."""
        _invalidate(self.lists, tokens, shifts)

    def prune(self) -> None:
        """Bound the scope's size (and the shared tables')."""
        if len(self.lists) > MAX_LISTS:
            self.lists.clear()
        for memo in self.lists.values():
            memo.prune()
        if len(self.sizes) > MAX_LISTS:
            self.sizes.clear()  # a memo still holding its sizes invalidates them itself
        for sizes in self.sizes.values():
            sizes.prune()
        if len(self.pointer_sizes) > MAX_POINTERS:
            self.pointer_sizes.clear()


class _Forgets(Protocol):
    def drop_member(self, i: int) -> None: ...

    def drop_from(self, k: int) -> None: ...


_M = TypeVar("_M", bound=_Forgets)


def _invalidate(lists: dict[Tokens, _M], tokens: Tokens, shifts: bool) -> None:
    """Forget in ``lists`` (array memos by tokens) what a change at ``tokens`` may have made
    stale (see the module docstring); ``shifts``: an array insert or delete there moved the
    later members. The same function of the tokens for every table, so a worker's memo and
    the shared sizes it holds are dropped together."""
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

    __slots__ = ("_pointers", "_scopes", "_sizes", "version")

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}
        # What does not depend on the worker, kept once for all of them: members' sizes per
        # budget (the bound they are measured to), and pointer sizes.
        self._sizes: dict[int, dict[Tokens, _Sizes]] = {}
        self._pointers: dict[Tokens, int] = {}
        self.version: int | None = None
        """The state version the kept results describe (None: none yet)."""

    def clear(self) -> None:
        """Forget everything (the state was replaced or changed in an unknown way)."""
        self._scopes.clear()
        self._sizes.clear()
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
                self._sizes.clear()
                return
            shifts = event.kind in ("insert", "delete")
            for scope in scopes:
                scope.invalidate(tokens, shifts)
            for table in self._sizes.values():
                _invalidate(table, tokens, shifts)

    def scope(self, worker: str, contract: object, budget: int, version: int) -> _Scope:
        """The kept results of ``worker``'s views (new when its contract or budget changed), at
        ``version`` (everything is forgotten first when the cache describes another one)."""
        if self.version != version:
            self.clear()
            self.version = version
        scope = self._scopes.get(worker)
        if scope is None or scope.contract is not contract or scope.budget != budget:
            sizes = self._sizes.get(budget)
            if sizes is None:
                sizes = self._sizes[budget] = {}
            scope = self._scopes[worker] = _Scope(contract, budget, True, sizes, self._pointers)
            used = {s.budget for s in self._scopes.values()}
            for unused in [b for b in self._sizes if b not in used]:
                del self._sizes[unused]  # no worker measures to that bound any more
        return scope
