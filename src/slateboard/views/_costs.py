"""What each way of showing a region node costs, in characters of the rendered view (views._fill).

A node is shown in full (its data entries), as an item handle, or inside a range handle of its
collection. ``Costs`` prices each exactly, before anything is rendered, and builds the handles
themselves: the fill compares a change's exact cost with the space left, so the running size of
the view stays exact (``_STRICT`` in views._build checks it on every test build).

Guarantees: ``full_cost`` is the exact length of the node's data entries (or None when over the
limit asked); ``range_cost(node, a, b)`` equals ``len`` of the canonical JSON of
``range_handle(node, a, b)[0]``; ``skeleton_size(node)`` that of the bare item handle, a lower
bound of ``item_handle(node)[1]``. Every result depends only on the node's content and the
summary length, so it is computed once per build (``FillMemo``), or once per kept scope for the
members of a readable array (``views._cache._ListMemo``, carried to the next build by a
ViewCache).
"""

from __future__ import annotations

from ..kernel.canonical import JSON
from ..kernel.pointer import Tokens
from ._cache import _ListMemo, _Scope
from ._measure import Meter, canonical_prefix, json_size, shorten, str_size
from ._model import Handle
from ._region import RNode

# "Not looked up yet", compared by identity: None is a valid answer in both tables.
_UNNAMED = "\0not named yet"  # a member named by an equal string only makes the look-up run again
_NOT_LOOKED_UP = _ListMemo()  # in FillMemo.kept_lists, where None means "not a readable array"

RangeKey = tuple[Tokens, int, int, int]
"""A range of a collection, with the summary length it is priced at: (tokens, start, stop, chars)."""


class FillMemo:
    """The results one build computes once and shares between its attempts (one attempt per
    degradation level, each with its own summary length); all keyed by typed tuples.

    Readable arrays keep theirs in the scope's array memos instead (``kept_lists``), which a
    ViewCache carries to the next build; everything here is dropped with the build.
    """

    __slots__ = ("item_handles", "kept_lists", "member_names", "range_handles", "range_sizes", "required")

    def __init__(self) -> None:
        self.range_sizes: dict[RangeKey, int] = {}
        """range_cost of each range priced."""
        self.range_handles: dict[RangeKey, tuple[Handle, int]] = {}
        """range_handle (and its size) of each range rendered."""
        self.item_handles: dict[tuple[Tokens, int], tuple[Handle, int]] = {}
        """item_handle (and its size) per node tokens and summary length."""
        self.member_names: dict[tuple[Tokens, int], str | None] = {}
        """The summary name of a collection's member, per collection tokens and position."""
        self.kept_lists: dict[Tokens, _ListMemo | None] = {}
        """The scope's array memo of each collection looked up (None: not a readable array)."""
        self.required: dict[Tokens, frozenset[str]] = {}
        """The schema-required member names of each object (views._order.Priorities)."""


class Costs:
    """The prices of one attempt: its meter, budget and summary length (see module)."""

    __slots__ = ("budget", "last_kept", "last_node", "memo", "meter", "pointer_sizes", "scope", "summary_chars")

    def __init__(self, meter: Meter, budget: int, summary_chars: int, memo: FillMemo, scope: _Scope) -> None:
        self.meter = meter
        self.budget = budget
        self.summary_chars = summary_chars
        """The longest summary a handle carries (0: none)."""
        self.memo = memo
        self.scope = scope
        self.pointer_sizes = scope.pointer_sizes  # a function of the tokens alone: kept by the scope
        # The last node kept_list answered for, and its answer: a promotion asks about the same
        # collection three to five times in a row (its ranges, then its member's facts), and
        # an identity test is cheaper than hashing the tokens each time.
        self.last_node: RNode | None = None
        self.last_kept: _ListMemo | None = None

    # -- kept results ---------------------------------------------------------------------
    def kept_list(self, node: RNode) -> _ListMemo | None:
        """The scope's memo of ``node`` when it is a readable array (kept across builds by a
        ViewCache), else None (its results stay in this build's memo)."""
        if node is self.last_node:
            return self.last_kept
        kept = self._kept_list(node)
        self.last_node = node
        self.last_kept = kept
        return kept

    def _kept_list(self, node: RNode) -> _ListMemo | None:
        tokens = node.tokens
        # A sentinel, not KeyError: compiled, every raised exception builds a traceback.
        hit = self.memo.kept_lists.get(tokens, _NOT_LOOKED_UP)
        if hit is not _NOT_LOOKED_UP:
            return hit
        kept = self.scope.list_memo(tokens) if node.readable and node.is_list else None
        self.memo.kept_lists[tokens] = kept
        return kept

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
        parent_kept = self.kept_list(parent) if parent is not None else None
        if parent_kept is not None:
            hints[key] = parent_kept.member_facts(node.pos, value, self.scope.budget)
        elif type(value) is list and node.readable:
            hint = hints[key] = self.scope.list_hint(node.tokens, hints)
            self.meter.walks[key] = hint.walk

    # -- full -------------------------------------------------------------------------------
    def full_cost(self, node: RNode, limit: int) -> tuple[int, int] | None:
        """(entries, characters) of showing ``node`` in full, or None when over ``limit``.

        An entry ``"pointer":value`` costs the pointer's string size, one colon and the value's
        size; the commas between entries are the fill's to count (Fill.total)."""
        if node.readable:  # the common case, one anchor: the node itself (no generator)
            self.meter.work += 1
            key_chars = self.pointer_size(node) + 1
            room = limit - key_chars
            if room < 1 or self.meter.exhausted:
                return None
            self._hint(node)
            size = self.meter.size(node.value, room)
            return None if size > room else (1, key_chars + size)
        entries = chars = 0
        for anchor in node.anchors():
            self.meter.work += 1
            key_chars = str_size(anchor.pointer) + 1
            room = limit - chars - key_chars
            if room < 1 or self.meter.exhausted:
                return None
            self._hint(anchor)
            size = self.meter.size(anchor.value, room)
            if size > room:
                return None
            chars += key_chars + size
            entries += 1
        return entries, chars

    def pointer_size(self, node: RNode) -> int:
        """``str_size(node.pointer)``. An array member's is its array's (kept by the scope) plus
        ``/`` and the index's digits, which JSON never escapes: no pointer string to build and
        encode for every member looked at, most of which are never shown."""
        parent = node.parent
        if parent is not None and type(parent.value) is list:
            size = self.pointer_sizes.get(parent.tokens)
            if size is None:
                size = self.pointer_sizes[parent.tokens] = str_size(parent.pointer)
            return size + 1 + len(node.tokens[-1])
        return str_size(node.pointer)

    # -- ranges -----------------------------------------------------------------------------
    def range_handle(self, node: RNode, a: int, b: int) -> tuple[Handle, int]:
        """The range handle for members ``a`` to ``b - 1`` of ``node`` and its size."""
        kept = self.kept_list(node)
        if kept is None:
            key = (node.tokens, a, b, self.summary_chars)
            hit = self.memo.range_handles.get(key)
        else:
            kept_key = (a, b, self.summary_chars)
            hit = kept.rhandles.get(kept_key)
        if hit is not None:
            return hit
        ident = f"[{a}:{b}]"
        summary = self.range_summary(node, a, b, kept)
        handle = Handle(f"{node.pointer}#{ident}", node.pointer, ident, summary=summary, items=b - a)
        out = (handle, self.range_cost(node, a, b))
        if kept is None:
            self.memo.range_handles[key] = out
        else:
            kept.put_rhandle(kept_key, out)
            if b - 1 > kept.hi:
                kept.hi = b - 1
        return out

    def range_cost(self, node: RNode, a: int, b: int) -> int:
        """The size of range_handle(node, a, b), by arithmetic instead of rendering it.

        Hand-counted for speed: the builder prices a range handle on every promotion (hundreds
        per view) but renders only the ranges left at the end, so pricing must not build and
        encode a handle each time. The rendered form is
        ``{"handle":P#I,"id":I,"items":N,"pointer":P[,"summary":S]}`` (keys sorted); ``#`` and
        the digits, brackets and colon of ``I`` need no escaping, so the handle string costs the
        pointer's string size plus ``1 + len(I)``. tests/views/test_views_speed.py pins this to
        the rendered length (hypothesis).
        """
        kept = self.kept_list(node)
        if kept is None:
            key = (node.tokens, a, b, self.summary_chars)
            hit = self.memo.range_sizes.get(key)
        else:
            kept_key = (a, b, self.summary_chars)
            hit = kept.ranges.get(kept_key)
        if hit is not None:
            return hit
        pointer = self.pointer_sizes.get(node.tokens)
        if pointer is None:
            pointer = self.pointer_sizes[node.tokens] = str_size(node.pointer)
        ident = len(str(a)) + len(str(b)) + 3  # "[a:b]" with its quotes
        # {"handle":H,"id":I,"items":N,"pointer":P}: braces, four keys with colons, three commas
        size = 2 + 9 + (pointer + 1 + ident) + 1 + 5 + (ident + 2) + 1 + 8 + len(str(b - a)) + 1 + 10 + pointer
        summary = self.range_summary(node, a, b, kept)
        if summary is not None:
            size += 1 + 10 + str_size(summary)  # ,"summary":S
        if kept is None:
            self.memo.range_sizes[key] = size
        else:
            kept.put_range(kept_key, size)
            if b - 1 > kept.hi:
                kept.hi = b - 1
        return size

    def range_summary(self, node: RNode, a: int, b: int, kept: _ListMemo | None) -> str | None:
        """A range's summary: its first and last members' names (None if any of the first two
        or the last is unnamed); ``kept``: ``kept_list(node)``. Names are looked up first to
        last and the lookup stops at the first unnamed one: on a list of plain items (no
        ``id``) that is the range's start, which the builder's ranges share, so pricing a range
        costs one memo hit instead of naming its newest member on every promotion."""
        if self.summary_chars <= 0:
            return None
        first = self._name(node, a, kept)
        if first is None:  # the common case of plain items: no tuple or list to build
            return None
        names: list[str] = [first]
        for pos in (a + 1, b - 1) if b - a > 2 else range(a + 1, b):
            name = self._name(node, pos, kept)
            if name is None:
                return None
            names.append(name)
        text = names[0] if b - a == 1 else f"{names[0]}, {names[1]}" if b - a == 2 else f"{names[0]} … {names[-1]}"
        return shorten(text, min(self.summary_chars, 48))

    def _name(self, node: RNode, pos: int, kept: _ListMemo | None) -> str | None:
        """The name of member ``pos`` (see _member_name), looked up once; ``kept``: ``kept_list(node)``."""
        if kept is not None:
            hit = kept.names.get(pos, _UNNAMED)
            if hit is not _UNNAMED:
                return hit
            name = _member_name(node, pos)
            kept.put_name(pos, name)
            if pos > kept.hi:
                kept.hi = pos
            return name
        key = (node.tokens, pos)
        hit = self.memo.member_names.get(key, _UNNAMED)
        if hit is not _UNNAMED:  # ranges share their ends: name each member once
            return hit
        name = self.memo.member_names[key] = _member_name(node, pos)
        return name

    # -- item handles -----------------------------------------------------------------------
    def item_handle(self, node: RNode) -> tuple[Handle, int]:
        """The item handle of ``node`` (a collection's member) and its size."""
        parent = node.parent
        assert parent is not None
        kept = self.kept_list(parent)
        if kept is None:
            key = (node.tokens, self.summary_chars)
            hit = self.memo.item_handles.get(key)
        else:  # a readable array's member: kept per index and summary length (budget: the scope's)
            by_summary = kept.item_table(node.pos)
            hit = by_summary.get(self.summary_chars)
            if node.pos > kept.hi:
                kept.hi = node.pos
        if hit is not None:
            return hit
        full = self.full_cost(node, self.budget)
        size: int | str = full[1] if full is not None else f">{self.budget}"
        handle = make_item_handle(node, size, self._summary(node))
        out = (handle, json_size(handle.to_json()))
        if kept is None:
            self.memo.item_handles[key] = out
        else:
            by_summary[self.summary_chars] = out
        return out

    def skeleton_size(self, node: RNode) -> int:
        """The size of ``make_item_handle(node, 0, None)`` (the least an item handle can take),
        by arithmetic instead of building and encoding the handle.

        Hand-counted for speed: the builder prices it for every member that does not fit in
        full, most of which never get a handle. The rendered form is ``{"handle":H,"id":I
        [,"items":N],"path":Q,"pointer":P,"size":0}`` (keys sorted) with ``H`` = ``P#I``; JSON
        escapes each character on its own, so ``H`` costs the string sizes of ``P`` and ``I``
        less one (two quotes shared, one ``#``). tests/views/test_views_speed.py pins this to
        the rendered length (hypothesis).
        """
        parent = node.parent
        assert parent is not None
        pointer = self.pointer_size(parent)
        ident = str_size(node.handle_id())
        # braces, then "handle":H ,"id":I ,"path":Q ,"pointer":P ,"size":0
        size = (
            2 + 9 + (pointer + ident - 1) + 1 + 5 + ident + 1 + 7 + self.pointer_size(node) + 1 + 10 + pointer + 1 + 8
        )
        if node.container:
            size += 1 + 8 + len(str(node.count()))  # ,"items":N
        return size

    def _summary(self, node: RNode) -> str | None:
        """An item handle's summary: the start of the node's canonical JSON (its anchors' for a
        structural node), at most ``summary_chars`` long."""
        limit = self.summary_chars
        if limit <= 0:
            return None
        value: JSON
        if node.readable:
            value = node.value
            if isinstance(value, str):
                return shorten(value, limit)
        else:
            value = {}
            length = 0
            for anchor in node.anchors():
                value[anchor.pointer] = anchor.value
                length += len(anchor.pointer) + 3
                if length > limit:
                    break
        text, longer = canonical_prefix(value, limit)
        return shorten(text + ("…" if longer else ""), limit)


def make_item_handle(node: RNode, size: int | str, summary: str | None) -> Handle:
    """The item handle of ``node`` (a collection's member) with the given size and summary."""
    parent = node.parent
    assert parent is not None
    ident = node.handle_id()
    items = node.count() if node.container else None
    return Handle(f"{parent.pointer}#{ident}", parent.pointer, ident, node.pointer, summary, size, items)


def _member_name(node: RNode, pos: int) -> str | None:
    """How a range summary names a member: its key, or its id (None for a plain index)."""
    if not node.is_list:
        return node.member_token(pos)
    name = node.member_handle_id(pos)
    return None if name == node.member_token(pos) else name
