"""The read region of a worker: the part of the state its read contract lets it see.

The region is explored lazily from the root. A node carries the *tails* of the read patterns
still to match below it; a node whose tails contain the empty tail is readable (it and its whole
subtree are inside the contract). Other nodes are *structural*: they lie on the way to readable
nodes, and only members that lead to a readable node are region members. Members are listed in
canonical order (object keys sorted, array items by index), which makes every decision taken
over them independent of dict insertion order. Members of readable containers are created on
demand, so looking at a few items of a large readable collection costs O(those items).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..kernel.canonical import JSON
from ..kernel.pointer import Pattern, Tokens, escape_token, format_pointer, is_array_index

Tails = tuple[Tokens, ...]
READABLE: Tails = ((),)


def _normalise(tails: Iterable[Tokens]) -> Tails:
    tails = tuple(tails)
    if () in tails:
        return READABLE
    return tuple(sorted(set(tails)))


def has_readable(value: JSON, tails: Tails) -> bool:
    """True when some node matching a tail exists below (or at) ``value``."""
    if () in tails:
        return True
    for tail in tails:
        head, rest = tail[0], (tail[1:],)
        if isinstance(value, dict):
            if head == "*":
                if any(has_readable(child, rest) for child in value.values()):
                    return True
            elif head in value and has_readable(value[head], rest):
                return True
        elif isinstance(value, list):
            if head == "*":
                if any(has_readable(child, rest) for child in value):
                    return True
            elif is_array_index(head) and int(head) < len(value) and has_readable(value[int(head)], rest):
                return True
    return False


class RNode:
    """One node of the read region (see module docstring)."""

    __slots__ = ("_cache", "_keys", "_map", "_pointer", "_tails", "parent", "pos", "tails", "tokens", "value")

    def __init__(self, tokens: Tokens, value: JSON, tails: Tails, parent: RNode | None, pos: int) -> None:
        self.tokens = tokens
        self.value = value
        self.tails = tails
        self.parent = parent
        self.pos = pos
        self._map: dict[str, int] | None = None  # structural nodes: member token -> position
        self._keys: list[str] | None = None  # readable objects: sorted keys; structural: member tokens
        self._tails: list[Tails] | None = None  # structural nodes: tails of each member
        self._cache: dict[int, RNode] | None = None  # readable containers: members built so far
        self._pointer: str | None = None

    @property
    def readable(self) -> bool:
        """True when this node and everything below it is inside the read contract."""
        return self.tails is READABLE

    @property
    def pointer(self) -> str:
        """The node's JSON Pointer."""
        if self._pointer is None:
            parent = self.parent
            # A member's pointer extends its parent's (cached) one: O(1 token) per member
            # instead of re-escaping the whole path, the same string format_pointer gives.
            self._pointer = (
                format_pointer(self.tokens) if parent is None else parent.pointer + "/" + escape_token(self.tokens[-1])
            )
        return self._pointer

    @property
    def container(self) -> bool:
        """True for objects and arrays."""
        return isinstance(self.value, (dict, list))

    @property
    def is_list(self) -> bool:
        """True for arrays."""
        return isinstance(self.value, list)

    @property
    def depth(self) -> int:
        """Number of tokens in the node's pointer."""
        return len(self.tokens)

    # -- members ------------------------------------------------------------------------
    def count(self) -> int:
        """Number of region members."""
        if self.readable:
            return len(self.value) if isinstance(self.value, (dict, list)) else 0
        return len(self._scan()[0])

    def member_at(self, pos: int) -> RNode:
        """The region member at canonical position ``pos`` (0 <= pos < count())."""
        if self._cache is None:
            self._cache = {}
        node = self._cache.get(pos)
        if node is None:
            value = self.value
            if not self.readable:
                keys, tails = self._scan()
                key = keys[pos]
                child = value[key] if isinstance(value, dict) else value[int(key)]
                node = RNode((*self.tokens, key), child, tails[pos], self, pos)
            elif isinstance(value, dict):
                key = self._sorted_keys()[pos]
                node = RNode((*self.tokens, key), value[key], READABLE, self, pos)
            else:
                node = RNode((*self.tokens, str(pos)), value[pos], READABLE, self, pos)
            self._cache[pos] = node
        return node

    def members(self) -> Iterator[RNode]:
        """Region members in canonical order."""
        for pos in range(self.count()):
            yield self.member_at(pos)

    def member(self, token: str) -> RNode | None:
        """The region member named ``token``, or None."""
        if self.readable:
            value = self.value
            if isinstance(value, dict):
                if token not in value:
                    return None
                return self.member_at(bisect_left(self._sorted_keys(), token))
            if isinstance(value, list) and is_array_index(token) and int(token) < len(value):
                return self.member_at(int(token))
            return None
        if self._map is None:
            self._map = {key: pos for pos, key in enumerate(self._scan()[0])}
        pos = self._map.get(token)
        return None if pos is None else self.member_at(pos)

    def member_token(self, pos: int) -> str:
        """The token of the member at ``pos`` without building it."""
        if self.readable:
            return self._sorted_keys()[pos] if isinstance(self.value, dict) else str(pos)
        return self._scan()[0][pos]

    def _sorted_keys(self) -> list[str]:
        if self._keys is None:
            assert isinstance(self.value, dict)
            self._keys = sorted(self.value)
        return self._keys

    def _scan(self) -> tuple[list[str], list[Tails]]:
        """Tokens and tails of a structural node's members (RNodes are built on demand)."""
        if self._keys is not None and self._tails is not None:
            return self._keys, self._tails
        value = self.value
        keys: list[str] = []
        tails_of: list[Tails] = []
        self._keys, self._tails = keys, tails_of
        wild = tuple(t[1:] for t in self.tails if t[0] == "*")
        literal: dict[str, list[Tokens]] = {}
        for t in self.tails:
            if t[0] != "*":
                literal.setdefault(t[0], []).append(t[1:])
        candidates: list[tuple[str, JSON]]
        if isinstance(value, dict):
            names = sorted(value) if wild else sorted(k for k in literal if k in value)
            candidates = [(k, value[k]) for k in names]
        elif isinstance(value, list):
            if wild:
                candidates = [(str(i), v) for i, v in enumerate(value)]
            else:
                idx = sorted(int(k) for k in literal if is_array_index(k) and int(k) < len(value))
                candidates = [(str(i), value[i]) for i in idx]
        else:
            return keys, tails_of
        wild_tails = _normalise(wild)
        quick = _quick_check(wild_tails)
        if quick is not None and not literal:  # the common `/x/*/field` case, kept tight
            fields = frozenset(t[0] for t in wild_tails)
            keys.extend(
                k
                for k, c in candidates
                if (not fields.isdisjoint(c) if isinstance(c, dict) else quick(c) if isinstance(c, list) else False)
            )
            tails_of.extend([wild_tails] * len(keys))
            return keys, tails_of
        for key, child in candidates:
            extra = literal.get(key)
            if extra:
                tails = _normalise((*wild, *extra))
                ok = has_readable(child, tails)
            else:
                tails = wild_tails
                ok = quick(child) if quick is not None else has_readable(child, tails)
            if ok:
                keys.append(key)
                tails_of.append(tails)
        return keys, tails_of

    def anchors(self) -> Iterator[RNode]:
        """The topmost readable nodes at or below this node, in canonical order."""
        if self.readable:
            yield self
            return
        for pos in range(self.count()):
            yield from self.member_at(pos).anchors()

    # -- handles ------------------------------------------------------------------------
    def id_field_readable(self) -> bool:
        """True when this node's ``id`` member (if any) is inside the read contract."""
        return _id_readable(self.tails)

    def handle_id(self) -> str:
        """The stable id of this node within its parent (see slateboard.views.Handle)."""
        parent = self.parent
        if parent is not None and isinstance(parent.value, list):
            ident = _id_of(self.value)
            if ident is not None and self.id_field_readable():
                return ident
        return self.tokens[-1] if self.tokens else ""

    def member_handle_id(self, pos: int) -> str:
        """``member_at(pos).handle_id()`` without building the member's node."""
        cache = self._cache
        if cache is not None and pos in cache:
            return cache[pos].handle_id()
        if isinstance(self.value, list):
            if self.readable:
                ident = _id_of(self.value[pos])
                if ident is not None:
                    return ident
            else:
                keys, tails = self._scan()
                ident = _id_of(self.value[int(keys[pos])])
                if ident is not None and _id_readable(tails[pos]):
                    return ident
        return self.member_token(pos)

    def find_member(self, ident: str) -> RNode | None:
        """The region member whose handle id is ``ident`` (an ``id`` field first, then the token)."""
        value = self.value
        if isinstance(value, list):
            if self.readable:
                for i, item in enumerate(value):
                    if _id_of(item) == ident:
                        return self.member_at(i)
            else:
                keys, tails = self._scan()
                for pos, key in enumerate(keys):
                    if _id_of(value[int(key)]) == ident and _id_readable(tails[pos]):
                        return self.member_at(pos)
        return self.member(ident)


def _id_readable(tails: Tails) -> bool:
    return tails is READABLE or any(len(t) == 1 and t[0] in ("*", "id") for t in tails)


def _id_of(value: JSON) -> str | None:
    if not isinstance(value, dict):
        return None
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)) or ident == "":
        return None
    return str(ident)


def _quick_check(tails: Tails) -> Callable[[JSON], bool] | None:
    """A fast has_readable for tails that are all single literal keys (``/x/*/text``)."""
    if not tails or any(len(t) != 1 or t[0] == "*" for t in tails):
        return None
    names = [t[0] for t in tails]

    def check(value: JSON) -> bool:
        if isinstance(value, dict):
            return any(n in value for n in names)
        if isinstance(value, list):
            return any(is_array_index(n) and int(n) < len(value) for n in names)
        return False

    return check


def region_root(state: JSON, patterns: Sequence[Pattern]) -> RNode | None:
    """The root of the read region of ``patterns`` over ``state``; None when it is empty."""
    tails = _normalise(p.tokens[:-1] if p.deep else p.tokens for p in patterns)
    if not tails or not has_readable(state, tails):
        return None
    return RNode((), state, tails, None, 0)


def release(root: RNode | None) -> None:
    """Drop the member tables of every node built below ``root`` once a build is done with them.

    A member points at its parent (``parent``) and the parent holds it in its member table, so a
    built tree is one big reference cycle, which only the cyclic garbage collector could free:
    hundreds of nodes per large view, surviving the young generations and making full
    collections slower as the board grows (issue 14). Emptying the tables leaves only child ->
    parent references, so the nodes are freed by reference counting as soon as the build drops
    them. The nodes must not be used afterwards (their members would be built again).
    """
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        members = node._cache
        if members:
            stack.extend(members.values())
        node._cache = None


def find(root: RNode | None, tokens: Tokens) -> RNode | None:
    """The region node at concrete ``tokens``, or None when it is not in the region."""
    node = root
    for token in tokens:
        if node is None:
            return None
        node = node.member(token)
    return node
