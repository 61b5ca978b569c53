"""Faster forms of kernel helpers give exactly what the plain forms give (issue 14):
``nesting_depth``'s one-pass scan, and ``check_json_value``'s pointers written only on error."""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slateboard.kernel.jsonvalue import JsonLimits, JsonValueError, check_json_value, nesting_depth, over_limits

_OLD_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_OLD_BRACKETS = re.compile(r"[\[\]{}]")
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}


def _reference_depth(text: str) -> int:
    """The two-pass definition: strip strings, then take the deepest running bracket count."""
    brackets = _OLD_BRACKETS.findall(_OLD_STRING.sub("", text))
    return max(0, max(accumulate(map(_DELTA.__getitem__, brackets)), default=0))


@given(st.text(alphabet='[]{}"\\ab,:\n', max_size=200))
def test_nesting_depth_equals_the_two_pass_definition(text: str) -> None:
    assert nesting_depth(text) == _reference_depth(text)


@pytest.mark.parametrize(
    ("text", "depth"),
    [('{"a": "[[[", "b": [1]}', 2), ('"\\"[" [', 1), ("[[]]]]", 2), ('["\\', 1), ("", 0), ("}}", 0)],
)
def test_nesting_depth_examples(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


@given(st.text(alphabet='[]{}"\\ab,:\n', max_size=40), st.integers(min_value=0, max_value=6))
def test_over_limits_skips_the_scan_only_when_the_brackets_cannot_reach_the_limit(text: str, max_depth: int) -> None:
    """The bracket-count shortcut gives the scan's verdict: over the limit exactly when the
    nesting (brackets inside strings not counted) is deeper than max_depth + 1."""
    limits = JsonLimits(max_depth=max_depth)
    fault = over_limits(text, limits)
    deep = nesting_depth(text) > max_depth + 1
    assert (fault is not None) == deep
    if deep:
        assert fault == f"value nests deeper than {max_depth} levels ({nesting_depth(text)} brackets deep)"


def test_over_limits_counts_brackets_inside_strings_only_as_a_bound() -> None:
    """Many brackets inside one string are text, not nesting: within the limit."""
    assert over_limits('{"a": "' + "[" * 50 + '"}', JsonLimits(max_depth=2)) is None
    assert (
        over_limits("[" * 5 + "]" * 5, JsonLimits(max_depth=2)) == "value nests deeper than 2 levels (5 brackets deep)"
    )


def _escape(token: str | int) -> str:
    return token.replace("~", "~0").replace("/", "~1") if isinstance(token, str) else str(token)


_keys = st.text(alphabet="ab~/", max_size=3)
_bad = st.sampled_from([float("nan"), float("inf"), 1 << 70, object(), {1: 2}])
_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.integers(-3, 3) | st.text(max_size=2) | _bad,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


def _first_fault(value: Any, limits: JsonLimits, where: str = "") -> str | None:
    """The pointer check_json_value names, found with pointers written out eagerly (the old way)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        node, at, depth = stack.pop()
        if depth > limits.max_depth:
            return at
        if node is None or isinstance(node, (bool, str)):
            continue
        if isinstance(node, int):
            if not -(1 << limits.max_int_bits) <= node < 1 << limits.max_int_bits:
                return at
        elif isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                return at
        elif isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return at
                stack.append((child, f"{at}/{_escape(key)}", depth + 1))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                stack.append((child, f"{at}/{i}", depth + 1))
        else:
            return at
    return None


@given(_values, st.sampled_from(["", "/base/x~1y"]))
def test_check_json_value_names_the_same_pointer(value: Any, base: str) -> None:
    limits = JsonLimits(max_bytes=10**6, max_depth=3)
    expected = _first_fault(value, limits, base)
    if expected is None:
        check_json_value(value, limits, base)
        return
    with pytest.raises(JsonValueError) as info:
        check_json_value(value, limits, base)
    assert info.value.path == expected
