"""A blueprint's guards, checked when it is accepted (``compile_blueprint``).

What the models cannot check: one of ``function``/``model`` per guard, unique names, known
workers, a judge's instruction and verdict type (``ok: bool`` required, ``reason`` a string),
the model string's form, a function reference's form and concrete context pointers. Whether a
function can be imported is checked when the guards are built (``slateboard.guards``): a stored
board replays and verifies on a machine that cannot import it, because replay never calls it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..kernel.guardstage import GuardTerms
from ..kernel.pointer import PointerError, parse_pointer
from ._model_strings import bad_model_string
from .models import Blueprint, GuardSpec

__all__ = ["guard_issues", "guard_terms"]


def guard_terms(guards: Iterable[GuardSpec]) -> tuple[GuardTerms, ...]:
    """What the kernel reads of each guard (``kernel.guardstage.GuardTerms``), in order."""
    return tuple(GuardTerms(g.name, frozenset(g.workers), g.shares_reason) for g in guards)


def guard_issues(bp: Blueprint) -> list[tuple[str, str]]:
    """(path inside the blueprint, message) for every problem of ``bp.guards``."""
    issues: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, g in enumerate(bp.guards):
        where = f"/guards/{i}"
        if g.name in seen:
            issues.append((f"{where}/name", f"duplicate guard name {g.name!r}"))
        seen.add(g.name)
        if (g.function is None) == (g.model is None):
            issues.append((where, "a guard has either a function or a model (a judge), exactly one"))
        if g.function is not None and (g.function.count(":") != 1 or "" in g.function.partition(":")[::2]):
            issues.append(
                (f"{where}/function", f"bad function reference {g.function!r}: expected 'package.module:function'")
            )
        if g.model is not None:
            if (bad := bad_model_string(g.model)) is not None:
                issues.append((f"{where}/model", bad))
            if not g.instruction.strip():
                issues.append((f"{where}/instruction", "a model judge needs an instruction (what it checks)"))
            if g.verdict.get("ok") != "bool":
                issues.append((f"{where}/verdict", "a verdict type needs 'ok: bool' (whether the patch passes)"))
            if "reason" in g.verdict and g.verdict["reason"] != "str":
                issues.append((f"{where}/verdict/reason", "'reason' of a verdict is a string ('reason: str')"))
        for j, pointer in enumerate(g.context):
            try:
                tokens = parse_pointer(pointer)
            except PointerError as exc:
                issues.append((f"{where}/context/{j}", str(exc)))
                continue
            if "*" in tokens or "-" in tokens or "**" in tokens:
                issues.append((f"{where}/context/{j}", f"context pointer {pointer!r} must be concrete (no '*' or '-')"))
        for j, worker in enumerate(g.workers):
            if worker not in bp.workers:
                known = ", ".join(sorted(bp.workers)) or "none"
                issues.append((f"{where}/workers/{j}", f"unknown worker {worker!r} (workers: {known})"))
    return issues
