"""The views' fast paths give exactly the sizes and views of the plain walk (issue 14).

``_measure._flat_size`` measures small shallow containers with one orjson call instead of a
Python step per node. These tests pin that it is a pure optimisation: every size it reports is
the canonical size, and a view built with it is byte-identical to one built without it, over
random boards, contracts, budgets and board changes.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slateboard.blueprint import compile_blueprint
from slateboard.kernel.canonical import JSON, canonical_str
from slateboard.views import _measure, build_view
from slateboard.views._cache import _Scope
from slateboard.views._costs import Costs, FillMemo, make_item_handle
from slateboard.views._measure import Meter, _flat_size

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5),
    max_leaves=30,
)


def _costs(summary_chars: int) -> Costs:
    """The prices of a fill with a huge budget and the given summary length (views._costs)."""
    return Costs(Meter(10**9), 10**6, summary_chars, FillMemo(), _Scope(None, 10**6))


def _slow(value: JSON, limit: int) -> int:
    """The plain walk (the fast path switched off) on a fresh meter."""
    meter = Meter(10**9)
    saved = _measure._flat_size
    _measure._flat_size = lambda *_: None
    try:
        return meter.size(value, limit)
    finally:
        _measure._flat_size = saved


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(1, 600))
def test_meter_size_is_exact_within_the_limit_and_over_it_otherwise(value: JSON, limit: int) -> None:
    exact = len(canonical_str(value))
    got = Meter(10**9).size(value, limit)
    if exact <= limit:
        assert got == exact
    else:
        assert got > limit
    slow = _slow(value, limit)
    assert (got <= limit) == (slow <= limit)
    if exact <= limit:
        assert slow == got


def test_flat_size_applies_to_entries_and_declines_what_it_must() -> None:
    entry: dict[str, JSON] = {"id": "e1", "author": "é", "references": ["e0"], "content": "x\n" * 10, "n": 1.5}
    nodes, size = _flat_size(entry, 10_000, 10_000) or (0, 0)
    assert (nodes, size) == (7, len(canonical_str(entry)))
    assert _flat_size(entry, 5, 10_000) is None  # strings alone exceed the room: the walk rejects it cheaply
    assert _flat_size(entry, 10_000, 6) is None  # over the work left: the walk trips the cap where it must
    assert _flat_size({"a": {"b": {"c": 1}}}, 10_000, 10_000) is None  # three levels deep: walked
    assert _flat_size({"a": (1, 2)}, 10_000, 10_000) is None  # not JSON: walked
    # a long list (or a long list inside a record) that cannot fit the room is declined, not encoded
    assert _flat_size([1] * 10_000, 100, 10**9) is None
    assert _flat_size({"refs": [1] * 10_000}, 100, 10**9) is None
    assert _flat_size([1] * 40, 100, 10**9) == (41, len(canonical_str([1] * 40)))


def _bp(reads: list[str]) -> Any:
    return compile_blueprint(
        {
            "schema": {"type": "object"},
            "initial_state": {},
            "workers": {"w": {"reads": reads, "writes": ["/public/-"], "view_budget": 1000}},
        }
    )


entries = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=6),
        "author": st.sampled_from(["alpha", "beta", "gämma"]),
        "references": st.lists(st.text(max_size=4), max_size=3),
        "content": texts,
    },
    optional={"meta": json_values},
)
boards = st.fixed_dictionaries({"task": texts, "public": st.lists(entries, max_size=25), "other": json_values})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    boards,
    st.lists(st.tuples(st.integers(0, 30), entries), max_size=4),
    st.sampled_from([["/**"], ["/task", "/public"], ["/public/*/content", "/other/**"]]),
    st.integers(2, 3000),
)
def test_views_with_the_fast_path_are_byte_identical_to_plain_walks(
    board: dict[str, Any], changes: list[tuple[int, dict[str, Any]]], reads: list[str], budget: int
) -> None:
    bp = _bp(reads)
    state: dict[str, Any] = board
    for version, (pos, entry) in enumerate([(0, None), *changes]):
        if entry is not None:  # the board changes in place, as the kernel changes it
            public = state["public"]
            if public and pos % 2:
                public[pos % len(public)] = entry
            else:
                public.append(entry)
        fast = build_view(bp, "w", state, version, budget=budget)
        saved = _measure._flat_size
        _measure._flat_size = lambda *_: None
        try:
            slow = build_view(bp, "w", state, version, budget=budget)
        finally:
            _measure._flat_size = saved
        assert fast.text == slow.text and fast.hash == slow.hash
        assert fast.size <= budget


@pytest.mark.parametrize("n", [10, 400])
def test_a_classic_board_view_is_identical_with_and_without_the_fast_path(n: int) -> None:
    bp = _bp(["/task", "/public"])
    state = {
        "task": "t",
        "public": [
            {"id": f"e{i}", "author": "a", "references": [f"e{i - 1}"], "content": "c" * 200, "kind": "k"}
            for i in range(n)
        ],
    }
    fast = build_view(bp, "w", state, 1, budget=100_000)
    saved = _measure._flat_size
    _measure._flat_size = lambda *_: None
    try:
        slow = build_view(bp, "w", state, 1, budget=100_000)
    finally:
        _measure._flat_size = saved
    assert fast.text == slow.text


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.text(max_size=8), min_size=1, max_size=4),
    st.lists(st.one_of(st.text(max_size=70), st.integers()), min_size=1, max_size=40),
    st.integers(0, 200),
    st.data(),
)
def test_range_cost_is_the_rendered_size_of_the_range_handle(
    path: list[str], ids: list[str | int], summary: int, data: st.DataObject
) -> None:
    from slateboard.views._measure import json_size
    from slateboard.views._region import find, region_root

    state: dict[str, Any] = {}
    node: Any = state
    for token in path[:-1]:
        node = node.setdefault(token, {})
        if not isinstance(node, dict):
            return
    node[path[-1]] = [{"id": i, "x": 1} if data.draw(st.booleans()) else i for i in ids]
    bp = _bp(["/**"])
    root = region_root(state, bp.workers["w"].reads)
    from slateboard.kernel.pointer import escape_token, parse_pointer

    coll = find(root, parse_pointer("/" + "/".join(escape_token(t) for t in path)))
    assert coll is not None
    costs = _costs(summary)
    a = data.draw(st.integers(0, len(ids) - 1))
    b = data.draw(st.integers(a + 1, len(ids)))
    handle, size = costs.range_handle(coll, a, b)
    assert size == costs.range_cost(coll, a, b) == json_size(handle.to_json())


def _reference_range_summary(costs: Any, node: Any, a: int, b: int) -> str | None:
    """The range summary as first written: name all of a range's ends, then check them."""
    from slateboard.views._measure import shorten

    if costs.summary_chars <= 0:
        return None
    names: list[str | None] = []
    for pos in sorted({a, a + 1, b - 1}):
        if pos < b:
            if not node.is_list:
                names.append(node.member_token(pos))
            else:
                name = node.member_at(pos).handle_id()
                names.append(None if name == node.member_token(pos) else name)
    if not all(name is not None for name in names):
        return None
    shown = [name for name in names if name is not None]
    text = shown[0] if b - a == 1 else f"{shown[0]}, {shown[1]}" if b - a == 2 else f"{shown[0]} … {shown[-1]}"
    return shorten(text, min(costs.summary_chars, 48))


ids = st.one_of(st.text(max_size=6), st.integers(-3, 30), st.booleans(), st.none())
members = st.one_of(st.integers(), st.fixed_dictionaries({"x": st.integers()}, optional={"id": ids}))


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(st.lists(members, min_size=1, max_size=30), st.dictionaries(texts, members, min_size=1, max_size=30)),
    st.sampled_from([["/**"], ["/items/*/x"], ["/items/*/id", "/items/*/x"], ["/items/*"]]),
    st.integers(0, 200),
    st.data(),
)
def test_range_summaries_and_member_ids_match_the_plain_reference(
    items: Any, reads: list[str], summary: int, data: st.DataObject
) -> None:
    """The short-circuiting range summary and member_handle_id (no node built) give exactly
    what naming every end through a built member gave, readable or structural, with or
    without ids (including ids equal to their index, empty, or not strings/integers)."""
    from slateboard.views._region import find, region_root

    state: dict[str, Any] = {"items": items}
    bp = _bp(reads)
    root = region_root(state, bp.workers["w"].reads)
    coll = find(root, ("items",))
    if coll is None or not coll.count():
        return
    n = coll.count()
    built = data.draw(st.sets(st.integers(0, n - 1)))  # some members built first, as a build does
    for pos in built:
        coll.member_at(pos)
    for pos in range(n):
        assert coll.member_handle_id(pos) == coll.member_at(pos).handle_id()
    costs = _costs(summary)
    for _ in range(5):
        a = data.draw(st.integers(0, n - 1))
        b = data.draw(st.integers(a + 1, n))
        want = _reference_range_summary(costs, coll, a, b)
        assert costs.range_summary(coll, a, b, costs.kept_list(coll)) == want
        handle, size = costs.range_handle(coll, a, b)
        assert handle.summary == want and size == costs.range_cost(coll, a, b)


def test_a_range_whose_second_member_is_unnamed_has_no_summary() -> None:
    from slateboard.views._region import find, region_root

    state: dict[str, Any] = {"items": [{"id": "a"}, 5, {"id": "c"}, {"id": "d"}, {"id": 4}]}
    bp = _bp(["/**"])
    root = region_root(state, bp.workers["w"].reads)
    coll = find(root, ("items",))
    assert coll is not None
    costs = _costs(120)
    assert costs.range_summary(coll, 0, 4, costs.kept_list(coll)) is None  # "a", unnamed, ..., "d"
    assert costs.range_summary(coll, 0, 1, costs.kept_list(coll)) == "a"
    assert costs.range_summary(coll, 2, 4, costs.kept_list(coll)) == "c, d"
    assert costs.range_summary(coll, 2, 5, costs.kept_list(coll)) is None  # id 4 at index 4 is a plain index
    assert costs.range_summary(coll, 2, 4, costs.kept_list(coll)) == _reference_range_summary(costs, coll, 2, 4)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_a_member_pointer_built_from_its_parent_is_format_pointer_of_its_tokens(value: JSON) -> None:
    from slateboard.kernel.pointer import format_pointer
    from slateboard.views._region import region_root

    bp = _bp(["/**"])
    root = region_root({"a~/b": value}, bp.workers["w"].reads)
    assert root is not None
    stack = [root]
    while stack:
        node = stack.pop()
        assert node.pointer == format_pointer(node.tokens)
        if node.container:
            stack.extend(node.members())


def test_the_remembered_writable_part_follows_the_blueprint_and_stays_bounded(monkeypatch: Any) -> None:
    from slateboard.views import _build

    def bp(writes: list[str]) -> Any:
        return compile_blueprint(
            {
                "schema": {"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "string"}}},
                "initial_state": {},
                "workers": {"w": {"reads": ["/**"], "writes": writes, "view_budget": 1000}},
            }
        )

    monkeypatch.setattr(_build, "_WRITABLE", {})
    monkeypatch.setattr(_build, "_WRITABLE_MAX", 2)
    first, second, third = bp(["/a/-"]), bp(["/b"]), bp(["/a/-", "/b"])
    for _ in range(2):  # the second round is served from the table: the same views
        for blueprint, paths in ((first, ["/a/-"]), (second, ["/b"]), (third, ["/a/-", "/b"])):
            view = build_view(blueprint, "w", {"a": [], "b": "x"}, 1)
            assert [w["path"] for w in view.writable] == paths
            assert len(_build._WRITABLE) <= 2


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([["/**"], ["/items/*/x"], ["/items/*/id", "/items/*/x"], ["/items/*"]]))
def test_skeleton_size_is_the_rendered_size_of_the_bare_item_handle(value: JSON, reads: list[str]) -> None:
    from slateboard.views._measure import json_size
    from slateboard.views._region import region_root

    bp = _bp(reads)
    state: dict[str, Any] = {"items": value, 'i~/é\\"\n': [{"id": "a/b~\u2028"}, {"id": 7, "x": [1]}]}
    root = region_root(state, bp.workers["w"].reads)
    if root is None:
        return
    costs = _costs(0)
    stack = list(root.members())
    while stack:
        node = stack.pop()
        assert costs.skeleton_size(node) == json_size(make_item_handle(node, 0, None).to_json())
        if node.container:
            stack.extend(node.members())
