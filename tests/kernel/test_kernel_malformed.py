"""Every malformed or unauthorised proposal is rejected with its stage and a message naming the
path, the state is untouched, and no exception escapes the kernel."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_testkit import Snapshot, canon, claims_blueprint, kernel_settings, make_blueprint

from slateboard.kernel import Kernel, Proposal, Record, canonical_bytes


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def add(path, value, op="add"):
    return [{"op": op, "path": path, "value": value}]


# (id, worker, patch, expected stage, fragments the reason must contain)
MALFORMED = [
    # -- parse: the proposal is not acceptable JSON -----------------------------------------
    ("text-not-json", "writer", '[{"op": "add", ', "parse", ["not valid JSON"]),
    ("text-trailing-garbage", "writer", "[] []", "parse", ["not valid JSON"]),
    ("text-empty", "writer", "", "parse", ["not valid JSON"]),
    ("not-a-list-object", "writer", {"op": "add", "path": "/count", "value": 1}, "parse", ["array", "object"]),
    ("not-a-list-text", "writer", '{"op": "add", "path": "/count", "value": 1}', "parse", ["array"]),
    ("not-a-list-null", "writer", None, "parse", ["array", "null"]),
    ("not-a-list-number", "writer", 3, "parse", ["array", "integer"]),
    ("huge-value-text", "writer", json.dumps(add("/notes/big", "x" * 5000)), "parse", ["over the limit of 4096"]),
    ("huge-value-python", "writer", add("/notes/big", "x" * 5000), "parse", ["over the limit of 4096"]),
    ("deep-value-python", "writer", add("/notes/d", nested_list(20)), "parse", ["/0/value", "deeper than 16"]),
    ("deep-value-text", "writer", json.dumps(add("/notes/d", nested_list(20))), "parse", ["deeper than 16"]),
    ("nan-text", "writer", '[{"op": "add", "path": "/count", "value": NaN}]', "parse", ["NaN"]),
    ("infinity-text", "writer", '[{"op": "add", "path": "/count", "value": Infinity}]', "parse", ["Infinity"]),
    ("minus-infinity-text", "writer", '[{"op": "add", "path": "/count", "value": -Infinity}]', "parse", ["Infinity"]),
    (
        "overflowing-float-text",
        "writer",
        '[{"op": "add", "path": "/count", "value": 1e999}]',
        "parse",
        ["/0/value", "inf"],
    ),
    ("nan-python", "writer", add("/count", math.nan), "parse", ["/0/value", "nan"]),
    ("infinity-python", "writer", add("/count", math.inf), "parse", ["/0/value", "inf"]),
    (
        "duplicate-keys",
        "writer",
        '[{"op": "add", "path": "/count", "path": "/secret", "value": 1}]',
        "parse",
        ["duplicate", "'path'"],
    ),
    (
        "int-65-bits-text",
        "writer",
        '[{"op": "add", "path": "/count", "value": 36893488147419103232}]',
        "parse",
        ["wider than 63 bits"],
    ),
    ("int-64-bits-python", "writer", add("/count", 2**64), "parse", ["/0/value", "wider than 63 bits"]),
    (
        "int-huge-digits-text",
        "writer",
        '[{"op":"add","path":"/count","value":' + "9" * 5000 + "}]",
        "parse",
        ["over the limit"],
    ),
    ("invalid-utf8-bytes", "writer", b'[{"op": "add", "path": "/notes/a", "value": "\xff\xfe"}]', "parse", ["UTF-8"]),
    (
        "invalid-utf8-bytearray",
        "writer",
        bytearray(b'[{"op": "add", "path": "/notes/a", "value": "\xc3"}]'),
        "parse",
        ["UTF-8"],
    ),
    (
        "lone-surrogate-escape-text",
        "writer",
        '[{"op": "add", "path": "/notes/a", "value": "\\ud800"}]',
        "parse",
        ["surrogate"],
    ),
    (
        "lone-surrogate-raw-text",
        "writer",
        '[{"op": "add", "path": "/notes/a", "value": "\ud800"}]',
        "parse",
        ["surrogate"],
    ),
    ("lone-surrogate-python", "writer", add("/notes/a", "\udfff"), "parse", ["surrogate"]),
    ("set-value", "writer", add("/notes/a", {1, 2}), "parse", ["/0/value", "set is not a JSON type"]),
    ("tuple-value", "writer", add("/notes/a", ("x", "y")), "parse", ["/0/value", "tuple is not a JSON type"]),
    ("tuple-patch", "writer", ({"op": "add", "path": "/count", "value": 1},), "parse", ["tuple is not a JSON type"]),
    ("tuple-op", "writer", [("add", "/count", 1)], "parse", ["/0", "tuple is not a JSON type"]),
    ("object-value", "writer", add("/notes/a", object()), "parse", ["/0/value", "object is not a JSON type"]),
    ("bytes-value", "writer", add("/notes/a", b"x"), "parse", ["/0/value", "bytes is not a JSON type"]),
    ("int-key", "writer", add("/notes", {1: "x"}, "replace"), "parse", ["/0/value", "object key 1"]),
    ("deep-text-100k", "admin", "[" * 100_000 + "]" * 100_000, "parse", ["over the limit"]),
    # -- ops: the operations are malformed ----------------------------------------------------
    ("op-not-object", "writer", [1], "ops", ["op 0", "must be an object", "integer"]),
    ("op-is-list", "writer", [["add", "/count", 1]], "ops", ["op 0", "array"]),
    ("unknown-op", "writer", [{"op": "frob", "path": "/count"}], "ops", ["'/count'", "unknown op 'frob'"]),
    ("op-not-string", "writer", [{"op": 1, "path": "/count"}], "ops", ["'/count'", "unknown op 1"]),
    ("missing-op", "writer", [{"path": "/count", "value": 1}], "ops", ["'/count'", "missing member 'op'"]),
    ("missing-path", "writer", [{"op": "add", "value": 1}], "ops", ["op 0", "missing member 'path'"]),
    ("missing-value", "writer", [{"op": "add", "path": "/count"}], "ops", ["'/count'", "missing member 'value'"]),
    ("missing-value-test", "writer", [{"op": "test", "path": "/count"}], "ops", ["'/count'", "missing member 'value'"]),
    ("missing-from", "admin", [{"op": "copy", "path": "/count"}], "ops", ["'/count'", "missing member 'from'"]),
    (
        "from-not-string",
        "admin",
        [{"op": "move", "path": "/count", "from": 5}],
        "ops",
        ["'/count'", "'from' must be a string"],
    ),
    ("path-not-string", "writer", [{"op": "add", "path": 5, "value": 1}], "ops", ["op 0", "'path' must be a string"]),
    ("path-null", "writer", [{"op": "add", "path": None, "value": 1}], "ops", ["op 0", "'path' must be a string"]),
    ("bad-escape", "writer", add("/notes/a~2b", "x"), "ops", ["'/notes/a~2b'", "invalid escape"]),
    ("trailing-tilde", "writer", add("/notes/a~", "x"), "ops", ["'/notes/a~'", "invalid escape"]),
    (
        "bad-escape-in-from",
        "admin",
        [{"op": "copy", "path": "/notes/b", "from": "/notes/~9"}],
        "ops",
        ["'from'", "'/notes/~9'"],
    ),
    ("no-leading-slash", "writer", add("count", 1), "ops", ["'count'", "start with '/'"]),
    (
        "move-into-own-child",
        "admin",
        [{"op": "move", "from": "/claims", "path": "/claims/0"}],
        "ops",
        ["'/claims/0'", "own child"],
    ),
    ("empty-patch", "writer", [], "ops", ["no operations"]),
    ("empty-patch-text", "writer", "[]", "ops", ["no operations"]),
    (
        "too-many-ops",
        "writer",
        [{"op": "test", "path": "/count", "value": 0}] * 9,
        "ops",
        ["9 operations", "limit of 8"],
    ),
    (
        "op-not-granted",
        "writer",
        [{"op": "remove", "path": "/count"}],
        "ops",
        ["'/count'", "'remove' is not allowed", "'writer'"],
    ),
    (
        "op-not-granted-move",
        "writer",
        [{"op": "move", "from": "/count", "path": "/count"}],
        "ops",
        ["'move' is not allowed"],
    ),
    # -- authorise: who may do what -----------------------------------------------------------
    ("unknown-worker", "ghost", add("/count", 1), "authorise", ["unknown worker 'ghost'"]),
    ("unauthorised-path", "writer", add("/secret", "x", "replace"), "authorise", ["'/secret'", "may not write"]),
    ("unauthorised-root", "writer", add("", {}, "replace"), "authorise", ["may not write"]),
    (
        "unauthorised-subpath",
        "writer",
        add("/claims/0/text", "x", "replace"),
        "authorise",
        ["'/claims/0/text'", "may not write"],
    ),
    (
        "append-only-pattern-is-not-an-index",
        "writer",
        add("/claims/0", {"text": "x", "status": "open"}),
        "authorise",
        ["'/claims/0'"],
    ),
    (
        "test-unreadable",
        "writer",
        [{"op": "test", "path": "/secret", "value": "s"}],
        "authorise",
        ["'/secret'", "may not read"],
    ),
    # -- apply: pointers that do not resolve --------------------------------------------------
    (
        "index-out-of-range",
        "admin",
        add("/claims/5", {"text": "x", "status": "open"}),
        "apply",
        ["'/claims/5'", "out of range"],
    ),
    ("replace-out-of-range", "admin", add("/claims/1/status", "done", "replace"), "apply", ["'/claims/1'"]),
    (
        "replace-at-dash",
        "admin",
        add("/claims/-", {"text": "x", "status": "open"}, "replace"),
        "apply",
        ["'/claims/-'", "'-'"],
    ),
    ("remove-at-dash", "admin", [{"op": "remove", "path": "/claims/-"}], "apply", ["'/claims/-'", "'-'"]),
    ("test-at-dash", "admin", [{"op": "test", "path": "/claims/-", "value": 1}], "apply", ["'/claims/-'", "'-'"]),
    ("dash-in-the-middle", "admin", add("/claims/-/status", "done"), "apply", ["'/claims/-/status'", "'-'"]),
    ("non-numeric-index", "admin", add("/claims/x/status", "done", "replace"), "apply", ["'/claims/x'", "'x'"]),
    (
        "leading-zero-index",
        "admin",
        add("/claims/00/status", "done", "replace"),
        "apply",
        ["'/claims/00'", "leading zeros"],
    ),
    (
        "leading-zero-index-01",
        "admin",
        add("/claims/01", {"text": "x", "status": "open"}),
        "apply",
        ["'/claims/01'", "'01'"],
    ),
    ("negative-index", "admin", add("/claims/-1", {"text": "x", "status": "open"}), "apply", ["'/claims/-1'"]),
    ("missing-parent", "admin", add("/nope/deeper", 1), "apply", ["'/nope'", "does not exist"]),
    ("child-of-scalar", "admin", add("/count/x", 1), "apply", ["'/count/x'", "integer"]),
    ("replace-missing-member", "admin", add("/notes/zz", "x", "replace"), "apply", ["'/notes/zz'", "does not exist"]),
    ("remove-root", "admin", [{"op": "remove", "path": ""}], "apply", ["whole state"]),
    (
        "move-from-missing",
        "admin",
        [{"op": "move", "from": "/nope", "path": "/secret"}],
        "apply",
        ["'/nope'", "does not exist"],
    ),
    # -- preconditions: failed tests ----------------------------------------------------------
    (
        "test-fails",
        "writer",
        [{"op": "test", "path": "/count", "value": 1}],
        "preconditions",
        ["'/count'", "expected 1, got 0"],
    ),
    (
        "test-string-vs-number",
        "writer",
        [{"op": "test", "path": "/count", "value": "0"}],
        "preconditions",
        ["'/count'"],
    ),
    (
        "test-bool-vs-number",
        "writer",
        [{"op": "test", "path": "/count", "value": False}],
        "preconditions",
        ["'/count'"],
    ),
    # -- schema: well-formed, authorised, but the state would be invalid ----------------------
    ("wrong-type", "writer", add("/count", "x", "replace"), "schema", ["/count", "integer"]),
    ("float-not-integer", "writer", add("/count", 1.5, "replace"), "schema", ["/count", "integer"]),
    ("bool-not-integer", "writer", add("/count", True, "replace"), "schema", ["/count", "integer"]),
    ("enum", "writer", add("/claims/0/status", "maybe", "replace"), "schema", ["/claims/0/status"]),
    ("missing-required", "writer", add("/claims/-", {"text": "x"}), "schema", ["/claims/1", "status"]),
    ("additional-property", "admin", add("/claims/0/extra", 1), "schema", ["/claims/0/extra"]),
    ("root-additional-property", "admin", add("/zzz", 1), "schema", ["/zzz"]),
    ("remove-required", "admin", [{"op": "remove", "path": "/claims/0/status"}], "schema", ["/claims/0", "status"]),
    ("remove-required-root", "admin", [{"op": "remove", "path": "/claims"}], "schema", ["claims"]),
    (
        "max-items",
        "writer",
        [{"op": "add", "path": "/claims/-", "value": {"text": "x", "status": "open"}}] * 5,
        "schema",
        ["/claims", "5"],
    ),
    ("note-not-string", "writer", add("/notes/a", 3), "schema", ["/notes/a", "string"]),
    ("root-replaced-by-array", "admin", add("", [], "replace"), "schema", ["object"]),
]


@pytest.mark.parametrize(
    ("worker", "patch", "stage", "fragments"),
    [c[1:] for c in MALFORMED],
    ids=[c[0] for c in MALFORMED],
)
def test_malformed_proposal_is_rejected_with_stage_and_path(worker, patch, stage, fragments):
    k = Kernel(claims_blueprint())
    before = Snapshot.of(k)
    decision = k.submit(Proposal(worker, patch))  # must not raise
    rec = decision.record
    assert rec.outcome == "rejected", rec.reason
    assert rec.stage == stage, rec.reason
    for fragment in fragments:
        assert fragment in (rec.reason or ""), f"{fragment!r} not in {rec.reason!r}"
    after = Snapshot.of(k)
    assert (after.state, after.hash, after.version) == (before.state, before.hash, before.version)
    assert rec.state_before == rec.state_after == before.hash
    assert after.seq == before.seq + 1 and after.last_hash == rec.hash
    # the record is loggable: canonical bytes, a valid chain hash, and it round-trips
    assert rec.hash == rec.compute_hash()
    assert Record.from_bytes(rec.to_bytes()) == rec
    assert not decision.events


def test_deeply_nested_python_patch_100k_levels_is_rejected():
    k = Kernel(make_blueprint({"type": "object"}, {}))
    before = Snapshot.of(k)
    d = k.submit(Proposal("admin", [{"op": "add", "path": "/a", "value": nested_list(100_000)}]))
    assert (d.record.outcome, d.stage) == ("rejected", "parse")
    assert "deeper than 64" in (d.reason or "")
    assert Snapshot.of(k).state == before.state


def test_deeply_nested_text_100k_levels_within_the_byte_limit_is_rejected():
    k = Kernel(make_blueprint({"type": "object"}, {}))  # default limit: 1 MiB
    text = '[{"op":"add","path":"/a","value":' + "[" * 100_000 + "]" * 100_000 + "}]"
    d = k.submit(Proposal("admin", text))
    assert (d.record.outcome, d.stage) == ("rejected", "parse")
    assert k.state == {}


def test_cyclic_python_value_is_rejected():
    cyc: list[Any] = []
    cyc.append(cyc)
    k = Kernel(claims_blueprint())
    d = k.submit(Proposal("admin", [{"op": "add", "path": "/notes/a", "value": cyc}]))
    assert (d.record.outcome, d.stage) == ("rejected", "parse")
    assert d.record.to_bytes()


@pytest.mark.parametrize("form", ["bytes", "bytearray", "str"])
def test_valid_text_bytes_and_bytearray_proposals_are_accepted(form):
    text = '[{"op": "add", "path": "/notes/k", "value": "caf\u00e9"}]'
    raw = {"bytes": text.encode(), "bytearray": bytearray(text.encode()), "str": text}[form]
    k = Kernel(claims_blueprint())
    d = k.submit(Proposal("writer", raw))
    assert d.accepted, d.reason
    assert k.state["notes"] == {"k": "café"}
    assert json.loads(d.record.patch or "") == json.loads(text)


def test_byte_limit_counts_utf8_bytes_for_python_patches_too():
    """The limit is in bytes: the same patch must get the same verdict as text and as a list."""
    patch = [{"op": "add", "path": "/notes/k", "value": "é" * 2100}]  # ~2150 characters, ~4250 bytes
    as_text = Kernel(claims_blueprint()).submit(Proposal("writer", json.dumps(patch, ensure_ascii=False)))
    assert (as_text.record.outcome, as_text.stage) == ("rejected", "parse")
    as_list = Kernel(claims_blueprint()).submit(Proposal("writer", patch))
    assert (as_list.record.outcome, as_list.stage) == ("rejected", "parse"), (
        f"a Python patch of {len(canonical_bytes(patch))} UTF-8 bytes passed a 4096-byte limit"
    )


def test_state_depth_stays_bounded():
    """Patch depth is limited, but adds at deep paths must not let the state outgrow it:
    a state deeper than canonical JSON can encode breaks hashing, snapshots and replay."""
    k = Kernel(make_blueprint({"type": "object"}, {}, limits={"max_depth": 16}))
    path = "/a"
    value: object = 0
    for _ in range(14):
        value = {"x": value}
    for _ in range(30):  # each accepted patch would add 14 levels
        d = k.submit(Proposal("admin", [{"op": "add", "path": path, "value": value}]))
        if not d.accepted:
            assert d.stage is not None
            break
        path += "/x" * 14
    canonical_bytes(k.state)  # raises CanonicalError ("Recursion limit reached") when the state is too deep


@pytest.mark.parametrize(
    "field",
    [
        {"event": {1, 2}},
        {"meta": {"when": object()}},
    ],
    ids=["set-event", "object-meta"],
)
def test_non_json_proposal_metadata_does_not_escape(field):
    k = Kernel(claims_blueprint())
    before = Snapshot.of(k)
    d = k.submit(Proposal("writer", add("/count", 1, "replace"), **field))  # must not raise
    rec = d.record
    assert rec.to_bytes() and rec.hash == rec.compute_hash()
    if not d.accepted:
        assert Snapshot.of(k).state == before.state


# -- fuzz ------------------------------------------------------------------------------------

json_ish = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=8),
        st.sampled_from(
            ["add", "remove", "replace", "move", "copy", "test", "/count", "/notes/a", "/claims/-", "", "/"]
        ),
        st.binary(max_size=4),
        st.just(()),
        st.frozensets(st.integers(), max_size=2),
    ),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.tuples(kids, kids),
        st.dictionaries(st.sampled_from(["op", "path", "value", "from", "x"]), kids, max_size=4),
        st.dictionaries(st.integers(), kids, max_size=1),
        st.fixed_dictionaries(
            {
                "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope"]),
                "path": st.sampled_from(
                    ["/count", "/notes/a", "/claims/-", "/claims/0/status", "", "/secret", "/x~", 3]
                ),
            },
            optional={"value": kids, "from": st.sampled_from(["/count", "/claims/0", "/notes", "", 1])},
        ),
    ),
    max_leaves=12,
)

texts = st.one_of(
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60),
    st.text(alphabet=st.sampled_from('[]{}",:0123456789.eE-+truefalsn \\u/~\ud800\udc00é'), max_size=80),
    st.builds(
        lambda v: json.dumps(v),
        st.lists(
            st.fixed_dictionaries(
                {
                    "op": st.sampled_from(["add", "test"]),
                    "path": st.sampled_from(["/count", "/notes/a"]),
                    "value": st.integers(-3, 3),
                }
            ),
            max_size=3,
        ),
    ),
)


@given(
    st.one_of(json_ish, texts, st.binary(max_size=80), st.builds(bytearray, st.binary(max_size=40))),
    st.sampled_from(["writer", "admin", "ghost"]),
)
@kernel_settings(400)
def test_fuzz_anything_never_escapes_and_rejections_change_nothing(patch, worker):
    k = Kernel(claims_blueprint())
    before = Snapshot.of(k)
    d = k.submit(Proposal(worker, patch))
    rec = d.record
    assert rec.outcome in ("accepted", "rejected", "noop")
    assert rec.hash == rec.compute_hash()
    rec.to_bytes()
    if rec.outcome != "accepted":
        after = Snapshot.of(k)
        assert (after.state, after.hash, after.version) == (before.state, before.hash, before.version)
        assert rec.stage is not None or rec.outcome == "noop"
        assert rec.stage != "internal", rec.reason
    else:
        assert k.version == before.version + 1
        assert k.state_hash != before.hash
    json.loads(canon(k.state))
