"""The state hash: a function of the value only (not of key order or history), and different
values hash differently."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_testkit import Snapshot, canon, kernel_settings, make_blueprint, small_json, submit

from slateboard.kernel import Kernel, Proposal, canonical_bytes, state_hash
from slateboard.kernel.statehash import SMALL, StateHasher, value_hash


def test_key_insertion_order_does_not_matter():
    a = {"x": 1, "y": {"p": [1, 2], "q": None}}
    b = {"y": {"q": None, "p": [1, 2]}, "x": 1}
    assert list(a) != list(b)
    assert state_hash(a) == state_hash(b)
    assert StateHasher(a).hexdigest == StateHasher(b).hexdigest == state_hash(a)


def test_history_does_not_matter():
    """Two different patch sequences reaching the same value give the same hash."""
    bp = make_blueprint({"type": "object"}, {})
    k1, k2 = Kernel(bp), Kernel(bp)
    patch: Any  # the two loops below spell their patches differently
    for patch in (
        [{"op": "add", "path": "/b", "value": []}],
        [{"op": "add", "path": "/b/-", "value": 2}],
        [{"op": "add", "path": "/b/0", "value": 1}],
        [{"op": "add", "path": "/a", "value": {"z": 0}}],
        [{"op": "add", "path": "/tmp", "value": 9}],
    ):
        assert submit(k1, "admin", patch).accepted
    for patch in (
        [{"op": "add", "path": "/a", "value": {"z": 5, "w": 1}}],
        [{"op": "replace", "path": "/a/z", "value": 0}, {"op": "remove", "path": "/a/w"}],
        [{"op": "add", "path": "/b", "value": [1, 2]}],
        [{"op": "add", "path": "/tmp", "value": 9}],
    ):
        assert submit(k2, "admin", patch).accepted
    assert k1.state == k2.state
    assert k1.state_hash == k2.state_hash == state_hash(k1.state)
    # and going back to an earlier value gives back its hash
    h_before = k1.state_hash
    assert submit(k1, "admin", [{"op": "add", "path": "/c", "value": 1}]).accepted
    assert k1.state_hash != h_before
    assert submit(k1, "admin", [{"op": "remove", "path": "/c"}]).accepted
    assert k1.state_hash == h_before


DISTINCT: list[Any] = [
    {},
    [],
    None,
    0,
    False,
    "",
    "0",
    1,
    1.5,
    True,
    [1, 2],
    [2, 1],
    [[1], [2]],
    [[1, 2]],
    [1, [2]],
    {"a": 1},
    {"a": "1"},
    {"a": [1]},
    {"a": {"b": 1}},
    {"a.b": 1},
    {"ab": 1},
    {"a": 1, "b": 2},
    {"a": 2, "b": 1},
    {"a": None},
    {"": 1},
    [None],
    [{}],
    [[]],
    {"a": []},
    {"a": {}},
    ["a", "b"],
    ["ab"],
    {"0": 1},
    [1],
]


def test_distinct_values_hash_differently():
    hashes = [state_hash(v) for v in DISTINCT]
    assert len(set(hashes)) == len(DISTINCT)


@given(small_json(10), small_json(10))
@kernel_settings(200)
def test_hash_equal_iff_canonical_json_equal(a, b):
    assert (state_hash(a) == state_hash(b)) is (canonical_bytes(a) == canonical_bytes(b))
    assert value_hash(a) == state_hash(a)


@given(small_json(10))
@kernel_settings(200)
def test_hash_is_independent_of_key_order(value):
    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    assert state_hash(reverse(value)) == state_hash(value)
    assert state_hash(json.loads(json.dumps(value))) == state_hash(value)


@pytest.mark.parametrize("value", DISTINCT)
def test_hash_is_hex_sha256_sized_and_stable(value):
    h = state_hash(value)
    assert len(h) == 64 and int(h, 16) >= 0
    assert state_hash(json.loads(canon(value))) == h


# -- the incremental hasher on states large enough for the additive (non-blob) form ---------

LEAF = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "", "é"]), st.none(), st.booleans(), st.just(1.5))
BIG_VALUES = st.recursive(
    LEAF,
    lambda kids: st.one_of(
        st.lists(kids, max_size=8), st.dictionaries(st.sampled_from(list("abcdefgh")), kids, max_size=8)
    ),
    max_leaves=50,
)


SMALL_VALUES = small_json(4)


def _pointers(value, prefix=""):
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _pointers(v, f"{prefix}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _pointers(v, f"{prefix}/{i}")
        out.append(f"{prefix}/-")
    return out


@given(st.dictionaries(st.sampled_from(list("xyz")), BIG_VALUES, min_size=1, max_size=3), st.data())
@kernel_settings(50)
def test_incremental_hash_matches_scratch_across_the_blob_threshold(initial, data):
    """Random patches on states of up to a few hundred nodes, crossing SMALL in both directions;
    after every accepted, rejected and aborted proposal the hash equals the scratch hash."""
    k = Kernel(make_blueprint({"type": "object"}, initial))
    assert k.state_hash == state_hash(k.state)
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        ptrs = _pointers(k.state)
        ops = []
        for _ in range(data.draw(st.integers(1, 3), label="ops")):
            name = data.draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "add", "remove"]), label="op")
            op = {"op": name, "path": data.draw(st.sampled_from(ptrs[1:] or ptrs), label="path")}
            if name in ("add", "replace"):
                op["value"] = data.draw(SMALL_VALUES if data.draw(st.integers(0, 3), label="big?") != 2 else BIG_VALUES)
            if name in ("move", "copy"):
                op["from"] = data.draw(st.sampled_from(ptrs[1:] or ptrs), label="from")
            ops.append(op)
        before = Snapshot.of(k)
        abort = data.draw(st.booleans(), label="abort?")
        d = k.prepare(Proposal("admin", ops))
        if abort:
            k.abort(d)
            assert Snapshot.of(k) == before
        else:
            k.commit(d)
            if not d.accepted:
                assert Snapshot.of(k).state == before.state and k.state_hash == before.hash
        assert k.state_hash == state_hash(k.state), f"after {ops} ({d.record.outcome}/{d.stage})"


def _nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


@pytest.mark.parametrize("container", ["list", "dict"])
def test_incremental_hash_when_a_container_crosses_the_blob_threshold(container):
    inner = list(range(SMALL - 2)) if container == "list" else {f"k{i}": i for i in range(SMALL - 2)}
    k = Kernel(make_blueprint({"type": "object"}, {"deep": {"c": inner}}))
    path = "/deep/c/-" if container == "list" else "/deep/c/new"
    seen = []
    for step in range(6):  # grow across SMALL, one node at a time, then shrink back
        op = {"op": "add", "path": path.replace("new", f"n{step}"), "value": step} if step < 3 else None
        if op is None:
            last = f"/deep/c/{len(k.state['deep']['c']) - 1}" if container == "list" else f"/deep/c/n{5 - step}"
            op = {"op": "remove", "path": last}
        assert submit(k, "admin", [op]).accepted
        seen.append(_nodes(k.state["deep"]["c"]))
        assert k.state_hash == state_hash(k.state), f"step {step}: {seen}"
    assert min(seen) <= SMALL < max(seen)  # really crossed it
    assert k.state_hash == state_hash({"deep": {"c": inner}})
