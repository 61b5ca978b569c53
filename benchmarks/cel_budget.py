"""CEL evaluation budget (issue 20, D19): time per commit of an invariant with seven nested
``.all()`` over the board's list, with the budget (the default ``limits.cel_budget``) and
without it (the same compiled invariant with ``budget=None``: what every commit cost before).

With the budget the commit is rejected at stage ``invariants`` ("CEL evaluation budget exceeded
in invariant 'deep'") from the estimate, without running the expression; without it the Rust
evaluator runs items^7 iterations.

    python benchmarks/cel_budget.py [--items 10] [--commits 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal

RULE = "self.notes.all(a, " * 7 + "true" + ")" * 7


def measure(items: int, commits: int, *, budget: bool) -> tuple[float, str]:
    """Mean ms per commit replacing ``/notes`` with ``items`` integers, and the last outcome."""
    compiled = compile_blueprint(
        {
            "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "integer"}}}},
            "initial_state": {"notes": []},
            "workers": {"a": {"reads": ["/**"], "writes": ["/**"]}},
            "invariants": [{"name": "deep", "at": "", "rule": RULE}],
            "limits": {"cel_nesting": 7},
        }
    )
    if not budget:
        inv = compiled.invariants[0]
        assert inv.expr is not None
        compiled.invariants = [dataclasses.replace(inv, expr=dataclasses.replace(inv.expr, budget=None))]
    kernel = Kernel(compiled)
    outcome = ""
    start = time.perf_counter()
    for i in range(commits):
        decision = kernel.submit(Proposal("a", [{"op": "replace", "path": "/notes", "value": list(range(items + i))}]))
        outcome = f"{decision.record.outcome} {decision.stage or ''} {decision.reason or ''}".strip()
    return (time.perf_counter() - start) / commits * 1000, outcome


def main() -> None:
    """Print both figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--commits", type=int, default=2)
    args = parser.parse_args()
    for budget in (False, True):
        ms, outcome = measure(args.items, args.commits, budget=budget)
        label = "default budget" if budget else "no budget     "
        print(f"{label}: {ms:9.2f} ms/commit  ({outcome})")


if __name__ == "__main__":
    main()
