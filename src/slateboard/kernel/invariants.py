"""Invariants, and evaluating them on exactly the nodes a patch touched.

An invariant is attached to a location pattern. After a patch, the nodes to check are those
matching the pattern that are either an ancestor-or-self of a changed path (changed inside)
or lie inside a subtree the patch put in place. ``oldSelf`` is the node's value before the
patch at the same concrete path, captured before applying (only for invariants that use it).

``CompiledInvariant`` (a CEL rule or a Python callable at a location) and ``InvariantContext``
(what a Python invariant sees) are defined here, in the kernel, because the kernel is what
evaluates them; the blueprint compiles its ``invariants`` section into them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .canonical import JSON
from .cel import BUDGET_EXCEEDED, CelExpr, SharedContext
from .patch import Effect
from .pointer import MISSING, Pattern, Tokens, expand, format_pointer, is_array_index, resolve


@dataclass(frozen=True, slots=True)
class InvariantContext:
    """What a Python-registered invariant sees: the node, its old value, its path, the state."""

    path: str
    value: JSON
    old: JSON
    had_old: bool
    state: JSON


PythonInvariant = Callable[[InvariantContext], "str | None"]
"""A Python invariant: None when the node is acceptable, else the reason it is not."""


@dataclass(frozen=True, slots=True)
class CompiledInvariant:
    """An invariant at a schema location pattern: CEL or a Python callable."""

    index: int
    name: str
    pattern: Pattern
    message: str | None
    expr: CelExpr | None = None
    func: PythonInvariant | None = None
    check: str | None = None

    @property
    def uses_old(self) -> bool:
        """True when the check needs the node's previous value."""
        return self.func is not None or (self.expr is not None and self.expr.uses("oldSelf"))

    @property
    def uses_root(self) -> bool:
        """True when the check needs the whole state (costs O(size of state))."""
        return self.func is not None or (self.expr is not None and self.expr.uses("root"))

    @property
    def check_every(self) -> bool:
        """True when every commit re-checks every matching node, not only the touched ones."""
        if self.check is not None:
            return self.check == "every"
        return self.uses_root


class HasInvariants(Protocol):
    """Anything that lists its invariants (a compiled blueprint does)."""

    @property
    def all_invariants(self) -> Sequence[CompiledInvariant]: ...


@dataclass(frozen=True, slots=True)
class InvariantFailure:
    """An invariant that does not hold: which one, at which node, and why."""

    index: int
    name: str
    path: str
    reason: str


def _evaluate(
    inv: CompiledInvariant, state: JSON, path: Tokens, old: JSON, shared: _RootContext | None = None
) -> str | None:
    value = resolve(state, path)
    if value is MISSING:
        return None
    had_old = old is not MISSING
    if inv.func is not None:
        try:
            return inv.func(InvariantContext(format_pointer(path), value, old if had_old else None, had_old, state))
        except Exception as exc:  # a buggy user invariant rejects, it does not crash the kernel
            return f"invariant raised {type(exc).__name__}: {exc}"
    expr = inv.expr
    assert expr is not None
    if expr.uses("oldSelf") and not had_old:
        return None  # transition rules only apply to nodes that existed before
    if shared is not None and expr.uses("root"):
        ctx = shared.get()
        ctx.set("self", value)
        if expr.uses("oldSelf"):
            ctx.set("oldSelf", old)
        result = expr.test(ctx)
    else:
        plain: dict[str, Any] = {"self": value}
        if expr.uses("oldSelf"):
            plain["oldSelf"] = old
        if expr.uses("root"):
            plain["root"] = state
        result = expr.test(plain)
    if result.over_budget and result.error is not None:
        # Deterministic (an estimate from the state, not a clock), so it replays like any rejection.
        return result.error.replace(BUDGET_EXCEEDED, f"{BUDGET_EXCEEDED} in invariant {inv.name!r}", 1)
    if result.error is not None:
        return f"could not be evaluated: {result.error}"
    if result.value is True:
        return None
    return inv.message or f"rule {expr.source!r} is false"


class _RootContext:
    """The state converted to CEL at most once, on first use, for all root-reading rules of one
    check (conversion costs O(size of state) and the state does not change during a check)."""

    def __init__(self, state: JSON) -> None:
        self.state = state
        self._ctx: SharedContext | None = None

    def get(self) -> SharedContext:
        if self._ctx is None:
            self._ctx = SharedContext({"root": self.state})
        return self._ctx


def check_all_invariants(bp: HasInvariants, state: JSON) -> list[InvariantFailure]:
    """Check every invariant on every matching node (used for initial states)."""
    out = []
    shared = _RootContext(state)
    for inv in bp.all_invariants:
        for path in expand(state, inv.pattern.tokens):
            reason = _evaluate(inv, state, path, MISSING, shared)
            if reason is not None:
                out.append(InvariantFailure(inv.index, inv.name, format_pointer(path), reason))
    return out


def _prefix_matches(pattern: Pattern, tokens: Tokens) -> bool:
    pt = pattern.tokens[:-1] if pattern.deep else pattern.tokens
    return all(a == "*" or a == b for a, b in zip(pt, tokens, strict=False))


def touched_targets(bp: HasInvariants, state: JSON, effects: list[Effect]) -> list[tuple[CompiledInvariant, Tokens]]:
    """The (invariant, concrete node) pairs a patch requires checking, in a stable order.

    ``effects`` are the rebased effects (paths as in the final state). A node is checked when
    it matches the invariant's location and was changed inside, or lies in a subtree the patch
    put in place. Invariants that read ``root`` (and Python invariants) are checked on every
    matching node, since any change may affect them, unless the blueprint says ``check: touched``.
    """
    out: list[tuple[CompiledInvariant, Tokens]] = []
    seen: set[tuple[int, Tokens]] = set()

    def add(inv: CompiledInvariant, path: Tokens) -> None:
        if (inv.index, path) not in seen:
            seen.add((inv.index, path))
            out.append((inv, path))

    for inv in bp.all_invariants:
        if not effects:
            break
        if inv.check_every:
            for path in expand(state, inv.pattern.tokens):
                add(inv, path)
            continue
        pt = inv.pattern.tokens
        for eff in effects:
            epath = eff.path
            if len(pt) <= len(epath):
                if (len(pt) == len(epath) and eff.kind == "delete") or not _prefix_matches(
                    inv.pattern, epath[: len(pt)]
                ):
                    continue
                add(inv, epath[: len(pt)])
            elif eff.kind != "delete" and _prefix_matches(inv.pattern, epath):
                for path in expand(state, pt[len(epath) :], epath):
                    add(inv, path)
    return out


def pre_patch_path(path: Tokens, raw_effects: list[Effect]) -> Tokens | None:
    """Where the node now at ``path`` was before the patch, following array shifts backwards
    through the raw (unrebased) effects; None when the patch created it (an insert)."""
    tokens = list(path)
    for eff in reversed(raw_effects):
        if eff.kind == "root":
            return tuple(tokens)
        if eff.kind not in ("insert", "delete"):
            continue
        parent = eff.parent
        n = len(parent)
        if len(tokens) <= n or tuple(tokens[:n]) != parent or not is_array_index(tokens[n]):
            continue
        k, j = int(tokens[n]), int(eff.key)  # type: ignore[arg-type]
        if eff.kind == "insert":
            if k == j:
                return None
            if k > j:
                tokens[n] = str(k - 1)
        elif k >= j:
            tokens[n] = str(k + 1)
    return tuple(tokens)


def evaluate_targets(
    targets: list[tuple[CompiledInvariant, Tokens]], state: JSON, old: dict[Tokens, JSON]
) -> list[InvariantFailure]:
    """Evaluate each (invariant, node); ``old`` maps nodes to their pre-patch values."""
    out: list[InvariantFailure] = []
    shared = _RootContext(state)
    for inv, path in targets:
        reason = _evaluate(inv, state, path, old.get(path, MISSING), shared)
        if reason is not None:
            out.append(InvariantFailure(inv.index, inv.name, format_pointer(path), reason))
    return out
