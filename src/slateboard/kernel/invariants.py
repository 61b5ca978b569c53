"""Evaluating invariants on exactly the nodes a patch touched.

An invariant is attached to a location pattern. After a patch, the nodes to check are those
matching the pattern that are either an ancestor-or-self of a changed path (changed inside)
or lie inside a subtree the patch put in place. ``oldSelf`` is the node's value before the
patch at the same concrete path, captured before applying (only for invariants that use it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .canonical import JSON
from .patch import Effect, Op
from .pointer import Pattern, Tokens, format_pointer, is_array_index

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint, CompiledInvariant

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class InvariantFailure:
    """An invariant that does not hold: which one, at which node, and why."""

    index: int
    name: str
    path: str
    reason: str


def get(state: JSON, tokens: Tokens) -> JSON:
    """The node at ``tokens`` or the _MISSING sentinel."""
    node = state
    for t in tokens:
        if isinstance(node, dict):
            if t not in node:
                return _MISSING
            node = node[t]
        elif isinstance(node, list):
            if not is_array_index(t) or int(t) >= len(node):
                return _MISSING
            node = node[int(t)]
        else:
            return _MISSING
    return node


def expand(state: JSON, tokens: Tokens, prefix: Tokens = ()) -> Iterator[Tokens]:
    """Concrete paths of existing nodes matching pattern ``tokens`` (``*`` = any member)."""
    if not tokens or tokens == ("**",):
        yield prefix
        return
    head, rest = tokens[0], tokens[1:]
    node = get(state, prefix)
    if isinstance(node, dict):
        keys = list(node) if head == "*" else ([head] if head in node else [])
    elif isinstance(node, list):
        if head == "*":
            keys = [str(i) for i in range(len(node))]
        else:
            keys = [head] if is_array_index(head) and int(head) < len(node) else []
    else:
        keys = []
    for k in keys:
        yield from expand(state, rest, (*prefix, k))


def _evaluate(inv: CompiledInvariant, state: JSON, path: Tokens, old: JSON) -> str | None:
    value = get(state, path)
    if value is _MISSING:
        return None
    had_old = old is not _MISSING
    if inv.func is not None:
        from ..blueprint.compile import InvariantContext

        try:
            return inv.func(InvariantContext(format_pointer(path), value, old if had_old else None, had_old, state))
        except Exception as exc:  # a buggy user invariant rejects, it does not crash the kernel
            return f"invariant raised {type(exc).__name__}: {exc}"
    expr = inv.expr
    assert expr is not None
    if expr.uses("oldSelf") and not had_old:
        return None  # transition rules only apply to nodes that existed before
    ctx: dict[str, Any] = {"self": value}
    if expr.uses("oldSelf"):
        ctx["oldSelf"] = old
    if expr.uses("root"):
        ctx["root"] = state
    result = expr.test(ctx)
    if result.error is not None:
        return f"could not be evaluated: {result.error}"
    if result.value is True:
        return None
    return inv.message or f"rule {expr.source!r} is false"


def check_all_invariants(bp: CompiledBlueprint, state: JSON) -> list[InvariantFailure]:
    """Check every invariant on every matching node (used for initial states)."""
    out = []
    for inv in bp.all_invariants:
        for path in expand(state, inv.pattern.tokens):
            reason = _evaluate(inv, state, path, _MISSING)
            if reason is not None:
                out.append(InvariantFailure(inv.index, inv.name, format_pointer(path), reason))
    return out


def _prefix_matches(pattern: Pattern, tokens: Tokens) -> bool:
    pt = pattern.tokens[:-1] if pattern.deep else pattern.tokens
    return all(a == "*" or a == b for a, b in zip(pt, tokens, strict=False))


def snapshot_old(bp: CompiledBlueprint, state: JSON, ops: list[Op]) -> dict[Tokens, JSON]:
    """Before applying, copy the old values that oldSelf-using invariants may need."""
    users = [inv for inv in bp.all_invariants if inv.uses_old]
    if not users:
        return {}
    snaps: dict[Tokens, JSON] = {}
    for op in ops:
        if op.op == "test":
            continue
        for tokens in (op.tokens, op.from_tokens) if op.from_tokens is not None else (op.tokens,):
            for inv in users:
                pt = inv.pattern.tokens
                n = min(len(pt), len(tokens))
                if not _prefix_matches(inv.pattern, tokens[:n]):
                    continue
                key = tokens[:n]
                if key not in snaps:
                    node = get(state, key)
                    if node is not _MISSING:
                        snaps[key] = copy.deepcopy(node)
    return snaps


def _old_at(snaps: dict[Tokens, JSON], path: Tokens) -> JSON:
    if path in snaps:
        return snaps[path]
    for k in range(len(path) - 1, -1, -1):
        base = path[:k]
        if base in snaps:
            return get(snaps[base], path[k:])
    return _MISSING


def check_touched(
    bp: CompiledBlueprint, state: JSON, effects: list[Effect], snaps: dict[Tokens, JSON]
) -> list[InvariantFailure]:
    """Check the invariants of every node the effects touched (see module docstring)."""
    invariants = bp.all_invariants
    if not invariants:
        return []
    out: list[InvariantFailure] = []
    seen: set[tuple[int, Tokens]] = set()
    for eff in effects:
        epath = eff.path
        for inv in invariants:
            pt = inv.pattern.tokens
            if inv.pattern.deep:
                pt = pt[:-1]
            if len(pt) <= len(epath):
                if len(pt) == len(epath) and eff.kind == "delete":
                    continue
                if not _prefix_matches(inv.pattern, epath[: len(pt)]):
                    continue
                targets: Iterator[Tokens] = iter((epath[: len(pt)],))
            else:
                if eff.kind == "delete" or not _prefix_matches(inv.pattern, epath):
                    continue
                targets = expand(state, pt[len(epath) :], epath)
            for path in targets:
                if (inv.index, path) in seen:
                    continue
                seen.add((inv.index, path))
                reason = _evaluate(inv, state, path, _old_at(snaps, path))
                if reason is not None:
                    out.append(InvariantFailure(inv.index, inv.name, format_pointer(path), reason))
    return out
