"""D11 and D12: hostile patches are rejected at a named stage, never as ``internal``, and the
size limit is applied before a patch given as Python objects is walked and re-encoded.

Before: a 5,000-digit array index made ``int()`` raise inside apply (logged as stage
``internal``); a patch of 10**6 ops given as Python objects was walked, serialised and
re-parsed before its size was checked (22.5 s and +1.15 GB; as text: 72 ms).
"""

from __future__ import annotations

from typing import Any

import pytest

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal

ALL_OPS = ["add", "replace", "remove", "test", "move", "copy"]
HUGE = "9" * 5000


def _kernel() -> Kernel:
    return Kernel(
        compile_blueprint(
            {
                "schema": {"type": "object"},
                "initial_state": {"a": [1, 2]},
                "workers": {"w": {"reads": ["/**"], "writes": ["/**"], "ops": ALL_OPS}},
            }
        )
    )


@pytest.mark.parametrize(
    "op",
    [
        {"op": "replace", "path": f"/a/{HUGE}", "value": 1},
        {"op": "add", "path": f"/a/{HUGE}", "value": 1},
        {"op": "remove", "path": f"/a/{HUGE}"},
        {"op": "test", "path": f"/a/{HUGE}", "value": 1},
        {"op": "copy", "from": f"/a/{HUGE}", "path": "/b"},
        {"op": "move", "from": f"/a/{HUGE}", "path": "/b"},
    ],
)
def test_d11_huge_array_index_is_an_apply_rejection(op: dict[str, Any]) -> None:
    kernel = _kernel()
    decision = kernel.submit(Proposal("w", [op]))
    assert decision.stage == "apply", decision.reason
    assert "out of range" in (decision.reason or "")
    assert kernel.state == {"a": [1, 2]}


def test_d12_too_many_python_ops_are_refused_before_they_are_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    import slateboard.kernel.kernel as kernel_module

    encoded: list[int] = []
    real = kernel_module.canonical_str  # type: ignore[attr-defined]  # imported there, patched below

    def counting(value: Any) -> str:
        encoded.append(1)
        return real(value)

    monkeypatch.setattr(kernel_module, "canonical_str", counting)
    kernel = _kernel()
    ops = [{"op": "test", "path": "/a/0", "value": 1}] * 200_000
    decision = kernel.submit(Proposal("w", ops))
    # Since issue 29 (R9) the op count is checked first, before the size walk.
    assert decision.stage == "ops" and "over the limit" in (decision.reason or "")
    assert encoded == []  # refused from a bound on its size, never serialised whole
