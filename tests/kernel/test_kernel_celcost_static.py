"""The CEL cost estimate computed once for expressions no value can change (``CostModel.static``)
is the number the full walk over the values gives, for any values."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from slateboard.kernel.cel import compile_cel
from slateboard.kernel.celcost import CostModel

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.sampled_from("abc"), inner, max_size=4),
    max_leaves=30,
)
_atom = st.sampled_from(["self", "self.a", "root.b", "value", "1", "'x'", "self.a.b", "root['c']"])


@st.composite
def _expr(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["atom", "in_list", "in_var", "and", "cmp", "size", "all"] if depth < 3 else ["atom"]))
    if kind == "atom":
        return draw(_atom)
    if kind == "in_list":
        items = draw(st.lists(st.sampled_from(["'a'", "'b'", "1", "self"]), max_size=5))
        return f"{draw(_expr(depth + 1))} in [{', '.join(items)}]"
    if kind == "in_var":
        return f"{draw(_expr(depth + 1))} in {draw(_atom)}"
    if kind == "and":
        return f"({draw(_expr(depth + 1))}) && ({draw(_expr(depth + 1))})"
    if kind == "cmp":
        return f"{draw(_expr(depth + 1))} == {draw(_expr(depth + 1))}"
    if kind == "size":
        return f"size({draw(_atom)}) > 0"
    return f"{draw(_atom)}.all(x, {draw(_expr(depth + 1))})"


@given(_expr(), _json, _json, _json)
def test_static_estimate_equals_the_full_walk(source: str, this: Any, root: Any, value: Any) -> None:
    model = CostModel(source, 1)
    variables = {"self": this, "root": root, "value": value}
    full = model._walk(variables) if model.loops else 1  # the estimate before the shortcut
    assert model.estimate(variables) == full
    if model.static is not None:
        assert "all(" not in source  # a comprehension always depends on the values
        assert compile_cel(source).estimate(variables) == full


def test_membership_in_a_list_literal_is_static() -> None:
    model = CostModel("self.author in ['alpha', 'beta', 'gamma']", 0)
    assert model.static is not None
    assert model.static == model._walk({"self": {"author": "alpha"}})
    assert CostModel("self.author in root.names", 0).static is None
    assert CostModel("root.items.all(x, x > 0)", 1).static is None
