"""Issue 29, R8: the CEL budget counts the work inside iterations, not only the iterations.

On ec36c64 three nested ``.all`` over 60 items (216,000 iterations, about 1.3 million estimated
steps: under the 2 million budget) ran ``contains`` over a 900 KB string at every iteration:
23 s for one proposal, and it was accepted. The estimate now charges one step per
``TEXT_BYTES_PER_STEP`` bytes of string a function or comparison reads, so the proposal is
rejected by budget (stage ``invariants``) from the estimate, before the expression runs. The
test checks the outcome and the estimate, never the wall time; it fails on ec36c64 (accepted).
"""

from __future__ import annotations

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.kernel.cel import BUDGET_EXCEEDED

RULE = "self.items.all(a, self.items.all(b, self.items.all(c, !self.doc.contains('needle'))))"


def _kernel() -> Kernel:
    return Kernel(
        compile_blueprint(
            {
                "schema": {"type": "object"},
                "initial_state": {"items": list(range(60)), "doc": ""},
                "workers": {"w": {"reads": ["/**"], "writes": ["/**"]}},
                "invariants": [{"name": "scan", "at": "", "rule": RULE}],
            }
        )
    )


def test_r8_a_large_string_scanned_in_nested_loops_is_over_budget() -> None:
    kernel = _kernel()
    decision = kernel.submit(Proposal("w", [{"op": "replace", "path": "/doc", "value": "z" * 900_000}]))
    assert (decision.record.outcome, decision.stage) == ("rejected", "invariants")
    assert BUDGET_EXCEEDED in (decision.reason or "")
    assert kernel.state["doc"] == ""


def test_r8_the_same_loops_over_short_strings_still_run() -> None:
    kernel = _kernel()
    expr = kernel.blueprint.all_invariants[0].expr
    assert expr is not None
    small = expr.estimate({"self": {"items": list(range(60)), "doc": "z" * 100}})
    large = expr.estimate({"self": {"items": list(range(60)), "doc": "z" * 900_000}})
    assert small < expr.budget < large  # type: ignore[operator]
    # Charged per byte read at each iteration: 216,000 iterations of 900 KB is far over.
    assert large > 216_000 * 900_000 // 256
    assert kernel.submit(Proposal("w", [{"op": "replace", "path": "/doc", "value": "short text"}])).accepted
