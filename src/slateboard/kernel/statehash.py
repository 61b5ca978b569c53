"""Incremental content hash of the board state.

The state hash is a function of the state's value only (equal states hash equal, whatever
path led to them), so the circuit policy can spot cycles and replay can check every version.
Recomputing SHA-256 over the canonical JSON of a large state at every commit would cost
O(size of state); instead large containers are hashed from an additive accumulator of their
members' terms (a multiset hash in the style of AdHash), so changing one member updates only
the containers on its path, while small subtrees are hashed directly over their canonical JSON.

Definition, for a value ``v`` with ``nodes(v)`` JSON nodes (scalars and containers):
  nodes(v) <= SMALL: H(b"b" + canonical(v))
  object:            (len * T_o + sum_k H(b"k" + canonical(k) + h(v[k]))) mod 2**256
  array:             (len * T_a + sum_i H(b"i" + str(i) + h(v[i]))) mod 2**256
with H = SHA-256 and T_o, T_a fixed SHA-256 tags. Array inserts and deletes away from the end re-weigh the later items.
The additive combination is a practical content hash for cycle detection and replay checks;
tamper evidence comes from the records' own SHA-256 hash chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .canonical import JSON, canonical_bytes
from .patch import Applied, Effect

SMALL = 48
"""Subtrees with at most this many JSON nodes are hashed as one canonical-JSON blob."""

_MOD = 1 << 256
_TAG_A = int.from_bytes(hashlib.sha256(b"slateboard/array").digest(), "big")
_TAG_O = int.from_bytes(hashlib.sha256(b"slateboard/object").digest(), "big")
_sha = hashlib.sha256
_from_bytes = int.from_bytes


def _h(data: bytes) -> int:
    return _from_bytes(_sha(data).digest(), "big")


class _Node:
    """Hash mirror of one large container: member mirrors, accumulator, node count, hash."""

    __slots__ = ("acc", "children", "count", "h", "is_list", "last")

    def __init__(self, is_list: bool) -> None:
        self.is_list = is_list
        self.acc = 0
        self.h = 0
        self.count = 1
        self.children: Any = [] if is_list else {}
        self.last: tuple[str | int, int, int] | None = None  # (slot, child hash, term) cache

    def seal(self) -> None:
        # Linear in the accumulator: no extra SHA-256 per level; every parent term re-hashes it.
        self.h = (self.acc + len(self.children) * (_TAG_A if self.is_list else _TAG_O)) % _MOD


# A small subtree is mirrored as (hash, node count); a large container as a _Node.
Mirror = _Node | tuple[int, int]


def _hc(m: Mirror) -> tuple[int, int]:
    return (m.h, m.count) if isinstance(m, _Node) else m


@lru_cache(maxsize=4096)
def _key_bytes(key: str) -> bytes:
    return b"k" + canonical_bytes(key)


def _term_key(key: str, child: int) -> int:
    return _h(_key_bytes(key) + child.to_bytes(32, "big"))


def _term_index(i: int, child: int) -> int:
    return _h(b"i" + str(i).encode() + child.to_bytes(32, "big"))


def _count(value: JSON, limit: int) -> int:
    """Number of JSON nodes in ``value``, stopping early once it exceeds ``limit``."""
    if not isinstance(value, (dict, list)):
        return 1
    total = 1
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            total += 1
            if isinstance(child, (dict, list)) and child:
                stack.append(child)
        if total > limit:
            return total
    return total


def build(value: JSON) -> Mirror:
    """Build the hash mirror of a value (O(size of value))."""
    if not isinstance(value, (dict, list)):
        return (_h(b"b" + canonical_bytes(value)), 1)
    n = _count(value, SMALL)
    if n <= SMALL:
        return (_h(b"b" + canonical_bytes(value)), n)
    node = _Node(isinstance(value, list))
    acc = 0
    count = 1
    if isinstance(value, dict):
        for k, v in value.items():
            m = build(v)
            node.children[k] = m
            h, c = _hc(m)
            acc += _term_key(k, h)
            count += c
    else:
        for i, v in enumerate(value):
            m = build(v)
            node.children.append(m)
            h, c = _hc(m)
            acc += _term_index(i, h)
            count += c
    node.acc = acc % _MOD
    node.count = count
    node.seal()
    return node


def value_hash(value: JSON) -> str:
    """The state-hash definition applied to one value, as hex (O(size of value))."""
    return _hc(build(value))[0].to_bytes(32, "big").hex()


def state_hash(state: JSON) -> str:
    """The hash of a whole state, computed from scratch (O(size of state))."""
    return value_hash(state)


def _get(value: JSON, token: str) -> JSON:
    return value[int(token)] if isinstance(value, list) else value[token]


class StateHasher:
    """Keeps the hash of a mutable state current as effects are applied to it.

    Every change it makes is pushed onto the caller's undo log, so a rejected or aborted
    patch leaves the mirror exactly as it was.
    """

    def __init__(self, state: JSON) -> None:
        self._root: Mirror = build(state)
        self._hex_for = -1
        self._hex = ""

    @property
    def hexdigest(self) -> str:
        """The current state hash, hex."""
        h = _hc(self._root)[0]
        if h != self._hex_for:
            self._hex_for, self._hex = h, h.to_bytes(32, "big").hex()
        return self._hex

    def observe(self, applied: Applied, effects: list[Effect]) -> None:
        """Patch observer (see apply_ops): update the mirror; undo steps join the patch's log."""
        for effect in effects:
            self.apply_effect(applied.root, effect, applied.undo_log)

    def apply_effect(self, state: JSON, eff: Effect, undo: list[Callable[[], None]]) -> None:
        """Update the mirror for one effect that has just been applied to ``state``."""
        old_root = self._root

        def restore_root() -> None:
            self._root = old_root

        if eff.kind == "root":
            undo.append(restore_root)
            self._root = build(state)
            return
        # Walk down the mirror along the effect's parent path (which exists in ``state`` right
        # after the op). If a small (blob) subtree is reached, the change lies inside it:
        # rebuild that subtree from its current value.
        chain: list[tuple[_Node, str | int, JSON]] = []
        mirror: Mirror = self._root
        value = state
        tokens = eff.parent
        depth = 0
        while depth < len(tokens) and isinstance(mirror, _Node):
            key: str | int = int(tokens[depth]) if mirror.is_list else tokens[depth]
            chain.append((mirror, key, value))
            mirror = mirror.children[key]
            value = _get(value, tokens[depth])
            depth += 1
        before = _hc(mirror)  # taken now: a large container is updated in place below
        if isinstance(mirror, _Node):
            new: Mirror = self._member_effect(mirror, value, eff, undo)
        else:
            new = build(value)
        self._propagate(chain, new, before, undo)

    def _propagate(
        self,
        chain: list[tuple[_Node, str | int, JSON]],
        new: Mirror,
        before: tuple[int, int],
        undo: list[Callable[[], None]],
    ) -> None:
        """Replace each ancestor's slot for the changed child, bottom-up, re-deciding blob/tree.

        ``before`` is the changed child's (hash, count) before the change.
        """
        old_root = self._root
        for node, key, value in reversed(chain):
            old = node.children[key]
            oh, oc = before
            before = _hc(node)
            nh, nc = _hc(new)
            saved = (node.acc, node.h, node.count)
            node.children[key] = new
            term = _term_index if node.is_list else _term_key
            # The same slot usually changes again at the next commit: reuse its last term.
            last = node.last
            old_term = last[2] if last is not None and last[0] == key and last[1] == oh else term(key, oh)  # type: ignore[arg-type]
            new_term = term(key, nh)  # type: ignore[arg-type]
            node.last = (key, nh, new_term)
            node.acc = (node.acc - old_term + new_term) % _MOD
            node.count += nc - oc
            node.seal()
            undo.append(_restore_slot(node, key, old, saved))
            new = node if node.count > SMALL else build(value)
        if new is not self._root:  # the root mirror changed identity (small state, or a new blob)

            def restore_root() -> None:
                self._root = old_root

            undo.append(restore_root)
            self._root = new

    def _member_effect(self, parent: _Node, value: JSON, eff: Effect, undo: list[Callable[[], None]]) -> Mirror:
        """Apply a set/insert/delete to a large container's member slot; return its new mirror."""
        saved = (parent.acc, parent.h, parent.count)
        children = parent.children
        if not parent.is_list:
            key = eff.key
            assert isinstance(key, str)
            old = children.get(key)
            acc = parent.acc
            if old is not None:
                oh, oc = _hc(old)
                acc -= _term_key(key, oh)
                parent.count -= oc
            if eff.kind == "delete":
                del children[key]
            else:
                m = build(value[key])
                children[key] = m
                mh, mc = _hc(m)
                acc += _term_key(key, mh)
                parent.count += mc
            parent.acc = acc % _MOD

            def restore_dict() -> None:
                if old is None:
                    children.pop(key, None)
                else:
                    children[key] = old
                parent.acc, parent.h, parent.count = saved

            undo.append(restore_dict)
        else:
            i = eff.key
            assert isinstance(i, int)
            if eff.kind == "set":
                old_item = children[i]
                m = build(value[i])
                children[i] = m
                (oh, oc), (mh, mc) = _hc(old_item), _hc(m)
                parent.acc = (parent.acc - _term_index(i, oh) + _term_index(i, mh)) % _MOD
                parent.count += mc - oc
                undo.append(_restore_slot(parent, i, old_item, saved))
            else:
                acc = parent.acc
                for j in range(i, len(children)):
                    acc -= _term_index(j, _hc(children[j])[0])
                if eff.kind == "insert":
                    m = build(value[i])
                    children.insert(i, m)
                    parent.count += _hc(m)[1]

                    def restore_insert() -> None:
                        children.pop(i)
                        parent.acc, parent.h, parent.count = saved

                    undo.append(restore_insert)
                else:
                    removed = children.pop(i)
                    parent.count -= _hc(removed)[1]

                    def restore_delete() -> None:
                        children.insert(i, removed)
                        parent.acc, parent.h, parent.count = saved

                    undo.append(restore_delete)
                for j in range(i, len(children)):
                    acc += _term_index(j, _hc(children[j])[0])
                parent.acc = acc % _MOD
        parent.seal()
        return parent if parent.count > SMALL else build(value)


def _restore_slot(node: _Node, key: str | int, old: Mirror, saved: tuple[int, int, int]) -> Callable[[], None]:
    def restore() -> None:
        node.children[key] = old
        node.acc, node.h, node.count = saved

    return restore


__all__ = ["SMALL", "StateHasher", "state_hash", "value_hash"]
