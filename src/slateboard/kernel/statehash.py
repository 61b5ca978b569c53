"""Incremental content hash of the board state.

The state hash is a function of the state's value only (equal states hash equal, whatever
path led to them), so the circuit policy can spot cycles and replay can check every version.
Recomputing SHA-256 over the canonical JSON of a large state at every commit would cost
O(size of state); instead each container's hash is built from an additive accumulator of its
children's terms (a multiset hash in the style of AdHash), so changing one member updates
only the containers on its path. Leaves are hashed over their canonical JSON.

Definition, for a node ``v``:
  scalar: H(b"v" + canonical(v))
  object: H(b"o" + len + sum_k H(b"k" + canonical(k) + h(v[k])) mod 2**256)
  array:  H(b"a" + len + sum_i H(b"i" + str(i) + h(v[i])) mod 2**256)
with H = SHA-256. Array inserts and deletes away from the end re-weigh the later items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .canonical import JSON, canonical_bytes
from .patch import Applied, Effect
from .pointer import Tokens

_MOD = 1 << 256
_sha = hashlib.sha256


def _h(data: bytes) -> int:
    return int.from_bytes(_sha(data).digest(), "big")


class _Node:
    """Hash mirror of one container: accumulated child terms, child hashes, own hash."""

    __slots__ = ("acc", "children", "h", "is_list")

    def __init__(self, is_list: bool) -> None:
        self.is_list = is_list
        self.acc = 0
        self.h = 0
        self.children: Any = [] if is_list else {}

    def seal(self) -> None:
        n = len(self.children)
        tag = b"a" if self.is_list else b"o"
        self.h = _h(tag + n.to_bytes(8, "big") + self.acc.to_bytes(32, "big"))


Mirror = _Node | int


def _child_hash(m: Mirror) -> int:
    return m if isinstance(m, int) else m.h


def _term_key(key: str, child: int) -> int:
    return _h(b"k" + canonical_bytes(key) + child.to_bytes(32, "big"))


def _term_index(i: int, child: int) -> int:
    return _h(b"i" + str(i).encode() + child.to_bytes(32, "big"))


def build(value: JSON) -> Mirror:
    """Build the hash mirror of a value (O(size of value))."""
    if isinstance(value, dict):
        node = _Node(False)
        acc = 0
        for k, v in value.items():
            m = build(v)
            node.children[k] = m
            acc += _term_key(k, _child_hash(m))
        node.acc = acc % _MOD
        node.seal()
        return node
    if isinstance(value, list):
        node = _Node(True)
        acc = 0
        for i, v in enumerate(value):
            m = build(v)
            node.children.append(m)
            acc += _term_index(i, _child_hash(m))
        node.acc = acc % _MOD
        node.seal()
        return node
    return _h(b"v" + canonical_bytes(value))


def value_hash(value: JSON) -> str:
    """The state-hash definition applied to one value, as hex (O(size of value))."""
    return _child_hash(build(value)).to_bytes(32, "big").hex()


class StateHasher:
    """Keeps the hash of a mutable state current as effects are applied to it.

    ``apply`` returns an undo callable so a prepared-but-aborted commit leaves no trace.
    """

    def __init__(self, state: JSON) -> None:
        self._root: Mirror = build(state)

    @property
    def hexdigest(self) -> str:
        """The current state hash, hex."""
        return _child_hash(self._root).to_bytes(32, "big").hex()

    def observe(self, applied: Applied, effects: list[Effect]) -> None:
        """Patch observer (see apply_ops): update the mirror; undo steps join the patch's log."""
        for effect in effects:
            self.apply_effect(applied.root, effect, applied.undo_log)

    def apply_effect(self, state: JSON, eff: Effect, undo: list[Callable[[], None]]) -> None:
        """Update the mirror for one effect that has just been applied to ``state``."""
        if eff.kind == "root":
            old_root = self._root
            self._root = build(state)

            def restore_root() -> None:
                self._root = old_root

            undo.append(restore_root)
            return
        # Walk to the parent container in both trees, remembering the chain for propagation.
        chain: list[tuple[_Node, str | int]] = []
        mirror: Mirror = self._root
        for token in eff.parent:
            assert isinstance(mirror, _Node)
            key: str | int = int(token) if mirror.is_list else token
            chain.append((mirror, key))
            mirror = mirror.children[key]
        # Deletes need no value; sets and inserts read it now, while state matches this effect.
        value = state
        if eff.kind != "delete":
            for token in eff.parent:
                value = value[int(token)] if isinstance(value, list) else value[token]
        assert isinstance(mirror, _Node)
        parent = mirror
        saved = [(n, n.acc, n.h) for n, _ in chain] + [(parent, parent.acc, parent.h)]
        if parent.is_list:
            self._list_effect(parent, value, eff, undo)
        else:
            self._dict_effect(parent, value, eff, undo)
        parent.seal()
        # Propagate the new hash upwards: replace each ancestor's term for the changed child.
        child_old = saved[-1][2]
        child_new = parent.h
        for node, key in reversed(chain):
            old_h = node.h
            if node.is_list:
                assert isinstance(key, int)
                delta = _term_index(key, child_new) - _term_index(key, child_old)
            else:
                assert isinstance(key, str)
                delta = _term_key(key, child_new) - _term_key(key, child_old)
            node.acc = (node.acc + delta) % _MOD
            node.seal()
            child_old, child_new = old_h, node.h

        def restore_accs() -> None:
            for n, acc, h in saved:
                n.acc, n.h = acc, h

        undo.append(restore_accs)

    @staticmethod
    def _dict_effect(parent: _Node, value: dict[str, JSON], eff: Effect, undo: list[Callable[[], None]]) -> None:
        key = eff.key
        assert isinstance(key, str)
        children: dict[str, Mirror] = parent.children
        old = children.get(key)
        if old is not None:
            parent.acc -= _term_key(key, _child_hash(old))
        if eff.kind == "delete":
            del children[key]
        else:
            new = build(value[key])
            children[key] = new
            parent.acc += _term_key(key, _child_hash(new))
        parent.acc %= _MOD

        def restore() -> None:
            if old is None:
                children.pop(key, None)
            else:
                children[key] = old

        undo.append(restore)

    @staticmethod
    def _list_effect(parent: _Node, value: list[JSON], eff: Effect, undo: list[Callable[[], None]]) -> None:
        i = eff.key
        assert isinstance(i, int)
        children: list[Mirror] = parent.children
        if eff.kind == "set":
            old = children[i]
            new = build(value[i])
            children[i] = new
            parent.acc = (parent.acc - _term_index(i, _child_hash(old)) + _term_index(i, _child_hash(new))) % _MOD
            undo.append(lambda: children.__setitem__(i, old))
            return
        # insert/delete shift every later index: remove their old terms, add the new ones.
        acc = parent.acc
        for j in range(i, len(children)):
            acc -= _term_index(j, _child_hash(children[j]))
        if eff.kind == "insert":
            children.insert(i, build(value[i]))
            undo.append(lambda: _discard(children.pop(i)))
        else:
            removed = children.pop(i)
            undo.append(lambda: children.insert(i, removed))
        for j in range(i, len(children)):
            acc += _term_index(j, _child_hash(children[j]))
        parent.acc = acc % _MOD


def state_hash(state: JSON) -> str:
    """The hash of a whole state, computed from scratch (O(size of state))."""
    return value_hash(state)


__all__ = ["StateHasher", "Tokens", "state_hash", "value_hash"]


def _discard(_: object) -> None:
    """Adapter so value-returning undo steps fit the Callable[[], None] log."""
