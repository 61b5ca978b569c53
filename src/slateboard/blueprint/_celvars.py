"""The variables each kind of CEL expression in a blueprint is given, and the ones it names but
is not given: such an expression compiles, then errs at every evaluation (a rule that never
fires, an invariant that refuses every proposal with its details withheld), so ``compile``
reports it as a blueprint issue instead."""

from __future__ import annotations

import re

from ..kernel.cel import CelCompileError, CelExpr, compile_cel

__all__ = [
    "INVARIANT_VARIABLES",
    "RULE_VARIABLES",
    "STATE_VARIABLES",
    "compile_in_context",
    "unbound_issue",
    "unknown_variables",
]

STATE_VARIABLES = frozenset({"state"})
"""What ``done``, ``fail`` and a stage's ``enter``/``exit`` see: the committed state."""
RULE_VARIABLES = frozenset({"event", "value", "state", "bindings"})
"""What a rule's ``when`` sees (``scheduling.rules``)."""
INVARIANT_VARIABLES = frozenset({"self", "oldSelf", "root"})
"""What an invariant sees (``kernel.invariants``): the node, its previous value, the whole state."""

# The variable a comprehension binds (``x`` in ``items.all(x, ...)``, ``k, v`` in two-variable forms).
_BOUND = re.compile(
    r"\b(?:all|exists|exists_one|map|filter|transformList|transformMap)\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)


def unknown_variables(expr: CelExpr, names: frozenset[str]) -> list[str]:
    """The variables ``expr`` names that its context does not give it (comprehension variables
    are its own), sorted; empty when the variable list could not be read."""
    if not expr.variables_known:
        return []
    bound = {n for m in _BOUND.finditer(expr.source) for n in m.groups() if n}
    return sorted(v for v in expr.variables if v not in names and v not in bound)


def unbound_issue(expr: CelExpr, names: frozenset[str]) -> str | None:
    """The blueprint issue of ``expr`` naming variables its context (``names``) does not give it
    (unbound, it errs at every evaluation), or None."""
    unknown = unknown_variables(expr, names)
    if not unknown:
        return None
    seen = ", ".join(repr(n) for n in unknown)
    return f"CEL uses {seen}, not a variable here (it sees {', '.join(sorted(names))})"


def compile_in_context(
    text: str | None, names: frozenset[str], *, budget: int | None, max_nesting: int
) -> tuple[CelExpr | None, str | None]:
    """``text`` compiled (None when absent or when it does not compile) and the blueprint issue
    it raises, if any: it does not compile, or it names a variable ``names`` does not give it."""
    if text is None:
        return None, None
    try:
        expr = compile_cel(text, budget=budget, max_nesting=max_nesting)
    except CelCompileError as exc:
        return None, f"CEL does not compile: {exc}"
    return expr, unbound_issue(expr, names)
