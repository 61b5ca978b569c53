"""How many invocations of a board may run at once without one making another stale.

Two workers cannot conflict when neither writes a path the other reads or writes: then no
commit of one ever changes what the other's proposal was based on, so running them concurrently
never produces a stale rejection (and never a re-queue or lost work). ``default_parallelism``
is the parallelism a blueprint's contracts allow: every worker at once when all pairs are
independent, else one at a time (a runner's ``parallel`` bound is global, not per pair).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

__all__ = ["conflict_map", "conflicting_workers", "default_parallelism", "patterns_overlap"]

_ANY_ONE = ("*", "-")


def patterns_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when pointer patterns ``a`` and ``b`` (token lists) may address the same node, or
    one a node inside the other's (a change to either then concerns the other). ``*`` and
    ``-`` (an appended item) match any one token, ``**`` any rest."""
    for t, u in zip(a, b, strict=False):
        if t == "**" or u == "**":
            return True
        if t != u and t not in _ANY_ONE and u not in _ANY_ONE:
            return False
    return True  # one is a prefix of the other: ancestor and descendant


def _touches(writes: Sequence[Sequence[str]], other: Sequence[Sequence[str]]) -> bool:
    return any(patterns_overlap(w, o) for w in writes for o in other)


def conflicting_workers(blueprint: Any) -> list[tuple[str, str]]:
    """Pairs of workers of a compiled blueprint that may conflict: one writes a path the other
    reads or writes (in blueprint order; retention system workers included)."""
    contracts = blueprint.workers
    out: list[tuple[str, str]] = []
    for a, b in combinations(list(contracts), 2):
        ca, cb = contracts[a], contracts[b]
        wa, wb = [p.tokens for p in ca.writes], [p.tokens for p in cb.writes]
        ra, rb = [p.tokens for p in ca.reads], [p.tokens for p in cb.reads]
        if _touches(wa, [*rb, *wb]) or _touches(wb, [*ra, *wa]):
            out.append((a, b))
    return out


def conflict_map(blueprint: Any) -> dict[str, frozenset[str]]:
    """For each worker of a compiled blueprint, the workers it may conflict with (one writes a
    path the other reads or writes), itself included when its own writes touch what it reads or
    writes (two invocations of it, e.g. with different bindings, would then race). A runner with
    ``parallel="auto"`` starts an invocation only while no invocation of a worker in its set is
    in flight, so concurrency never produces a stale proposal from a contract overlap."""
    contracts = blueprint.workers
    out: dict[str, set[str]] = {name: set() for name in contracts}
    for name, c in contracts.items():
        w, r = [p.tokens for p in c.writes], [p.tokens for p in c.reads]
        if _touches(w, [*r, *w]):
            out[name].add(name)
    for a, b in conflicting_workers(blueprint):
        out[a].add(b)
        out[b].add(a)
    return {name: frozenset(others) for name, others in out.items()}


def default_parallelism(blueprint: Any) -> int:
    """The number of workers when no two of them can conflict (``conflicting_workers`` is
    empty), else 1."""
    return max(1, len(blueprint.workers)) if not conflicting_workers(blueprint) else 1
