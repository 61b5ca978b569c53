"""RFC 6902 operations: checking their shape and applying them in place with an undo log.

The kernel applies a candidate patch to the live state and keeps an undo log, which is
observably the same as applying it to a copy (nothing else runs between apply and the
commit-or-undo decision) but costs O(size of the patch) instead of O(size of the state).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError, detached
from .canonical import JSON, JSONValue
from .jsonvalue import json_equal, type_name
from .pointer import PointerError, Tokens, _parse_pointer, format_pointer, is_array_index

OPS = ("add", "remove", "replace", "move", "copy", "test")
DEFAULT_ALLOWED_OPS = frozenset({"add", "replace", "test"})


@dataclass(slots=True)
class Op:
    """One checked patch operation with its pointers already parsed (treat as read-only; not
    frozen because frozen dataclasses are slow to build on the replay hot path)."""

    index: int
    op: str
    path: str
    tokens: Tokens
    value: JSON = None
    from_path: str | None = None
    from_tokens: Tokens | None = None

    def to_json(self) -> dict[str, JSONValue]:
        """The operation as an RFC 6902 object."""
        out: dict[str, JSON] = {"op": self.op, "path": self.path}
        if self.op in ("add", "replace", "test"):
            out["value"] = self.value
        if self.from_path is not None:
            out["from"] = self.from_path
        return out


class OpError(UsageError, ValueError):
    """A malformed operation; ``index`` is its position in the patch."""

    def __init__(self, index: int, path: str | None, reason: str) -> None:
        where = f"op {index}" + (f" at {path!r}" if path is not None else "")
        super().__init__(f"{where}: {reason}")
        self.index = index
        self.path = path
        self.reason = reason


def check_ops(patch: JSON) -> list[Op]:
    """Turn a parsed patch into checked operations, or raise OpError for the first bad one.

    Checks: the patch is a list of objects, ``op`` is one of RFC 6902's six, ``path`` (and
    ``from`` for move/copy) are valid pointers, ``value`` is present where required. Unknown
    members are ignored, as RFC 6902 requires.
    """
    if not isinstance(patch, list):
        raise OpError(-1, None, f"a patch must be a JSON array of operations, got {type_name(patch)}")
    ops: list[Op] = []
    for i, raw in enumerate(patch):
        if not isinstance(raw, dict):
            raise OpError(i, None, f"an operation must be an object, got {type_name(raw)}")
        name = raw.get("op")
        path = raw.get("path")
        if "op" not in raw:
            raise OpError(i, path if isinstance(path, str) else None, "missing member 'op'")
        if name not in OPS:
            raise OpError(
                i,
                path if isinstance(path, str) else None,
                f"unknown op {name!r}; expected one of {', '.join(OPS)}",
            )
        if "path" not in raw:
            raise OpError(i, None, f"{name}: missing member 'path'")
        if not isinstance(path, str):
            raise OpError(i, None, f"{name}: 'path' must be a string, got {type_name(path)}")
        try:
            tokens = _parse_pointer(path)  # path is known to be a str here
        except PointerError as exc:
            raise detached(OpError(i, path, str(exc))) from None
        value: JSON = None
        if name in ("add", "replace", "test"):
            if "value" not in raw:
                raise OpError(i, path, f"{name}: missing member 'value'")
            value = raw["value"]
        from_path: str | None = None
        from_tokens: Tokens | None = None
        if name in ("move", "copy"):
            if "from" not in raw:
                raise OpError(i, path, f"{name}: missing member 'from'")
            raw_from = raw["from"]  # checked before it is typed: compiled code checks types on assignment
            if not isinstance(raw_from, str):
                raise OpError(i, path, f"{name}: 'from' must be a string, got {type_name(raw_from)}")
            from_path = raw_from
            try:
                from_tokens = _parse_pointer(from_path)
            except PointerError as exc:
                raise detached(OpError(i, path, f"'from': {exc}")) from None
            if name == "move" and tokens[: len(from_tokens)] == from_tokens and tokens != from_tokens:
                raise OpError(i, path, f"move: cannot move {from_path!r} into its own child")
        ops.append(Op(i, name, path, tokens, value, from_path, from_tokens))
    return ops


class ApplyError(UsageError, ValueError):
    """An operation could not be applied; names the op, its path, and expected/got details."""

    def __init__(self, op: Op, reason: str, *, stage: Literal["apply", "preconditions"] = "apply") -> None:
        super().__init__(f"op {op.index} ({op.op} {op.path!r}): {reason}")
        self.op = op
        self.reason = reason
        self.stage = stage


@dataclass(slots=True)
class Effect:
    """What one applied operation did to one container, for hashing, events and staleness.

    ``kind`` is ``set`` (a key/index now holds a new value), ``insert`` (a list grew at
    ``key``), ``delete`` (a key/index was removed) or ``root`` (the whole state was replaced).
    """

    parent: Tokens
    key: str | int | None
    kind: str
    op: Op
    appended: bool = False

    @property
    def path(self) -> Tokens:
        """Concrete tokens of the affected node."""
        return self.parent if self.key is None else (*self.parent, str(self.key))


@dataclass(slots=True)
class Applied:
    """The outcome of applying a patch in place: new root, effects, and how to undo it."""

    root: JSON
    effects: list[Effect] = field(default_factory=list)
    undo_log: list[Callable[[], None]] = field(default_factory=list)
    observer: Callable[[Applied, list[Effect]], None] | None = None

    def emit(self, effect: Effect) -> None:
        """Record an effect and tell the observer while the state matches it exactly."""
        self.effects.append(effect)
        if self.observer is not None:
            self.observer(self, [effect])

    def undo(self) -> None:
        """Restore the state exactly as it was before the patch (in reverse order)."""
        while self.undo_log:
            self.undo_log.pop()()


_MISSING: Any = object()


def rebase(effects: list[Effect]) -> list[Effect]:
    """The effects as seen in the final state: paths shifted by later array inserts/deletes,
    and effects superseded by a later replace/remove of the same node or an ancestor dropped.

    Validation, invariants and events must use these; the raw effects describe each op at the
    moment it ran (``[add /a/0 X, add /a/0 Y]`` leaves X at ``/a/1``, not ``/a/0``).
    """
    live: list[tuple[list[str], Effect]] = []
    for new in effects:
        if new.kind == "root":
            live = [([], new)]
            continue
        npath = new.path
        n = len(new.parent)
        kept: list[tuple[list[str], Effect]] = []
        cancelled = False
        for path, eff in live:
            if (
                new.kind in ("set", "delete")
                and tuple(path[: len(npath)]) == npath
                # An array member deleted earlier is not what a later op at its index touches:
                # that is the next sibling, shifted into place, and the array still shrank.
                and not (eff.kind == "delete" and isinstance(eff.key, int) and tuple(path) == npath)
            ):
                if eff.kind == "insert" and tuple(path) == npath:
                    # The array still grew: an item inserted and then replaced is an insert (of
                    # the new value); inserted and then deleted, the array is as it was.
                    if new.kind == "set":
                        new = Effect(new.parent, new.key, "insert", new.op, eff.appended)
                    else:
                        cancelled = True
                continue  # that node was replaced or removed afterwards
            # Only an array insert or delete (an int key) shifts its later siblings: deleting a
            # key of an object whose other keys look like indexes ("0") shifts nothing.
            if (
                new.kind in ("insert", "delete")
                and isinstance(new.key, int)
                and len(path) > n
                and tuple(path[:n]) == new.parent
                and is_array_index(path[n])
            ):
                k, j = int(path[n]), new.key
                if new.kind == "insert" and j <= k:
                    path[n] = str(k + 1)
                elif new.kind == "delete" and j < k:
                    path[n] = str(k - 1)
            kept.append((path, eff))
        if not cancelled:
            kept.append((list(npath), new))
        live = kept
    out: list[Effect] = []
    for path, eff in live:
        if eff.kind == "root" or tuple(path) == eff.path:
            out.append(eff)
            continue
        parent = tuple(path[:-1])
        key: str | int = int(path[-1]) if isinstance(eff.key, int) else path[-1]
        out.append(Effect(parent, key, eff.kind, eff.op, eff.appended))
    return out


def _resolve(root: JSON, tokens: Tokens, op: Op, what: str = "path") -> JSON:
    node = root
    for depth, token in enumerate(tokens):
        if isinstance(node, dict):
            if token not in node:
                raise ApplyError(op, f"{what} {format_pointer(tokens[: depth + 1])!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, tokens, depth, op, allow_end=False)]
        else:
            raise ApplyError(
                op,
                f"{what} {format_pointer(tokens[: depth + 1])!r}: parent is a {type_name(node)}, "
                "not an object or array",
            )
    return node


_MAX_INDEX_DIGITS = 18
"""Digits of the longest array index worth converting (no array has 10**18 items)."""


def _index(node: list[JSON], token: str, tokens: Tokens, depth: int, op: Op, *, allow_end: bool) -> int:
    where = format_pointer(tokens[: depth + 1])
    if token == "-":
        if allow_end:
            return len(node)
        raise ApplyError(op, f"{where!r}: '-' (end of array) is only valid as the last segment of add")
    if not is_array_index(token):
        raise ApplyError(
            op,
            f"{where!r}: array index must be a non-negative integer without leading zeros, got {token!r}",
        )
    if len(token) > _MAX_INDEX_DIGITS:
        # Out of range for any array, and int() refuses text over 4,300 digits: say so here
        # instead of letting a ValueError surface as an internal error (D11).
        raise ApplyError(op, f"{where!r}: index of {len(token)} digits out of range (array has {len(node)} items)")
    i = int(token)
    limit = len(node) if allow_end else len(node) - 1
    if i > limit:
        raise ApplyError(op, f"{where!r}: index {i} out of range (array has {len(node)} items)")
    return i


Observer = Callable[["Applied", list[Effect]], None]


def apply_ops(root: JSON, ops: list[Op], observer: Observer | None = None) -> Applied:
    """Apply ``ops`` to ``root`` in place, recording effects and an undo log.

    ``observer`` is called after each effect (a move has two) while the state matches it
    exactly (later ops may shift indices); it may push its own undo steps onto
    ``applied.undo_log``. On ApplyError everything has already been undone, so the caller
    sees no partial change. A failed ``test`` raises ApplyError with ``stage='preconditions'``.
    """
    result = Applied(root, observer=observer)
    try:
        for op in ops:
            _apply_one(result, op)
    except ApplyError:
        result.undo()
        raise
    return result


def _apply_one(res: Applied, op: Op) -> None:
    if op.op == "test":
        got = _resolve(res.root, op.tokens, op)
        if not json_equal(got, op.value):
            raise ApplyError(
                op,
                f"test failed: expected {_short(op.value)}, got {_short(got)}",
                stage="preconditions",
            )
        return
    if op.op == "add":
        _add(res, op, op.tokens, op.value)
    elif op.op == "replace":
        _replace(res, op)
    elif op.op == "remove":
        _remove(res, op, op.tokens)
    elif op.op == "copy":
        assert op.from_tokens is not None
        value = copy.deepcopy(_resolve(res.root, op.from_tokens, op, "from"))
        _add(res, op, op.tokens, value)
    elif op.op == "move":
        assert op.from_tokens is not None
        if op.from_tokens == op.tokens:
            _resolve(res.root, op.tokens, op, "from")
            return
        value = _remove(res, op, op.from_tokens)
        _add(res, op, op.tokens, value)


def _parent(res: Applied, op: Op, tokens: Tokens) -> JSON:
    parent = _resolve(res.root, tokens[:-1], op)
    if not isinstance(parent, (dict, list)):
        raise ApplyError(
            op,
            f"parent {format_pointer(tokens[:-1]) or '/'!r} is a {type_name(parent)}, not an object or array",
        )
    return parent


def _set_root(res: Applied, op: Op, value: JSON) -> None:
    old = res.root
    res.root = value

    def undo() -> None:
        res.root = old

    res.undo_log.append(undo)
    res.emit(Effect((), None, "root", op))


def _add(res: Applied, op: Op, tokens: Tokens, value: JSON) -> None:
    if not tokens:
        _set_root(res, op, value)
        return
    parent = _parent(res, op, tokens)
    key = tokens[-1]
    if isinstance(parent, dict):
        old = parent.get(key, _MISSING)
        parent[key] = value
        if old is _MISSING:
            res.undo_log.append(lambda: parent.pop(key))
        else:
            res.undo_log.append(lambda: parent.__setitem__(key, old))
        res.emit(Effect(tokens[:-1], key, "set", op))
    else:
        i = _index(parent, key, tokens, len(tokens) - 1, op, allow_end=True)
        appended = i == len(parent)
        parent.insert(i, value)
        res.undo_log.append(lambda: parent.pop(i))
        res.emit(Effect(tokens[:-1], i, "insert", op, appended=appended))


def _replace(res: Applied, op: Op) -> None:
    tokens = op.tokens
    if not tokens:
        _set_root(res, op, op.value)
        return
    parent = _parent(res, op, tokens)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise ApplyError(op, f"path {op.path!r} does not exist (replace needs an existing member; use add)")
        old = parent[key]
        parent[key] = op.value
        res.undo_log.append(lambda: parent.__setitem__(key, old))
        res.emit(Effect(tokens[:-1], key, "set", op))
    else:
        i = _index(parent, key, tokens, len(tokens) - 1, op, allow_end=False)
        old_item = parent[i]
        parent[i] = op.value
        res.undo_log.append(lambda: parent.__setitem__(i, old_item))
        res.emit(Effect(tokens[:-1], i, "set", op))


def _remove(res: Applied, op: Op, tokens: Tokens) -> JSON:
    if not tokens:
        raise ApplyError(op, "cannot remove the whole state")
    parent = _parent(res, op, tokens)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise ApplyError(op, f"path {format_pointer(tokens)!r} does not exist")
        old = parent.pop(key)
        res.undo_log.append(lambda: parent.__setitem__(key, old))
        res.emit(Effect(tokens[:-1], key, "delete", op))
        return old
    i = _index(parent, key, tokens, len(tokens) - 1, op, allow_end=False)
    old_item = parent.pop(i)
    res.undo_log.append(lambda: parent.insert(i, old_item))
    res.emit(Effect(tokens[:-1], i, "delete", op))
    return old_item


def _short(value: JSON, limit: int = 80) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
