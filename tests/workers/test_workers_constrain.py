"""Contract-constrained decoding: the derived proposal schema admits only patches the kernel
authorises, with values typed by the schema (property-tested against the real kernel)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from workers_testkit import instances, notes_blueprint, rich_blueprint, rich_states

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.views import build_view
from slateboard.workers.constrain import PATCH_KEY, generic_patch_schema, proposal_schema, sketch_state
from slateboard.workers.constrain._targets import write_targets

RICH = rich_blueprint()


def _variants(schema: dict[str, Any]) -> list[dict[str, Any]]:
    items = schema["properties"][PATCH_KEY]["items"]
    return list(items["anyOf"]) if "anyOf" in items else [items]


def _paths(schema: dict[str, Any], op: str) -> set[str]:
    out: set[str] = set()
    for v in _variants(schema):
        if v["properties"]["op"]["const"] == op and "enum" in v["properties"]["path"]:
            out.update(v["properties"]["path"]["enum"])
    return out


def test_append_only_worker_gets_one_exact_op_schema() -> None:
    bp = notes_blueprint()
    derived = proposal_schema(bp, "scribe", bp.initial_state())
    assert derived is not None
    patch = derived.schema["properties"][PATCH_KEY]
    assert patch["minItems"] == 1 and patch["maxItems"] >= 1
    item = patch["items"]
    assert item["properties"]["op"] == {"const": "add"}
    assert item["properties"]["path"] == {"enum": ["/notes/-"]}
    assert item["properties"]["value"]["properties"]["author"] == {"const": "scribe"}
    assert derived.schema["required"] == [PATCH_KEY]
    jsonschema_rs.validator_for(derived.schema)  # a valid schema
    assert jsonschema_rs.validator_for(derived.patch_schema()).is_valid(
        [{"op": "add", "path": "/notes/-", "value": {"text": "x", "author": "scribe"}}]
    )


def test_paths_expand_over_the_current_state() -> None:
    state = {
        "query": "q",
        "claims": [{"text": "a", "status": "open"}, {"text": "b", "status": "open", "score": 3}],
        "scores": {"a/b": 1},
        "meta": {"round": 0},
    }
    derived = proposal_schema(RICH, "editor", state)
    assert derived is not None
    s = derived.schema
    assert _paths(s, "replace") >= {
        "/claims/0/status",
        "/claims/1/status",
        "/claims/1/score",
        "/scores/a~1b",
        "/meta/round",
    }
    assert "/claims/0/score" not in _paths(s, "replace")  # does not exist: add only
    assert {"/claims/0/score", "/claims/-", "/answer", "/meta/note"} <= _paths(s, "add")
    # required members are never removed; optional existing ones may be
    assert "/claims/1/score" in _paths(s, "remove")
    assert "/claims/0/status" not in _paths(s, "remove")
    assert "/meta/round" not in _paths(s, "remove")
    # test ops only on request
    assert not _paths(s, "test")
    with_test = proposal_schema(RICH, "editor", state, include_test=True)
    assert with_test is not None and "/claims/0/status" in _paths(with_test.schema, "test")
    # new keys of the plain map come through a key pattern
    regexes = [v["properties"]["path"]["pattern"] for v in _variants(s) if "pattern" in v["properties"]["path"]]
    assert regexes == ["^/scores/([^/~]|~[01])+$"]
    # values are the schema fragments, with $refs hoisted into self-contained $defs
    jsonschema_rs.validator_for(s)
    text = json.dumps(s)
    assert "#/$defs/claim" not in text


def test_judge_with_default_ops_never_gets_remove_or_new_claims() -> None:
    state = {"query": "q", "claims": [{"text": "a", "status": "open"}], "scores": {}, "meta": {"round": 0}}
    derived = proposal_schema(RICH, "judge", state)
    assert derived is not None
    assert set(derived.ops) <= {"add", "replace"}
    assert _paths(derived.schema, "replace") == {"/claims/0/status"}
    assert _paths(derived.schema, "add") == {"/answer"}


def test_container_bounds_are_respected() -> None:
    full = [{"text": str(i), "status": "open"} for i in range(6)]  # maxItems 6
    state = {"query": "q", "claims": full, "scores": {}, "meta": {"round": 0, "note": None, "done": False}}
    derived = proposal_schema(RICH, "editor", state)
    assert derived is not None
    adds = _paths(derived.schema, "add")
    assert "/claims/-" not in adds  # at maxItems
    assert not any(p.startswith("/meta/") for p in adds)  # meta at maxProperties (no new member)
    state["log"] = ["only"]  # minItems 1: the last item cannot be removed
    derived = proposal_schema(RICH, "editor", state)
    assert derived is not None and "/log/0" not in _paths(derived.schema, "remove")


def test_nothing_to_do_gives_no_schema_and_generic_fallback_exists() -> None:
    bp = compile_blueprint(
        {
            "schema": {"type": "object", "properties": {"items": {"type": "array"}, "x": {"type": "object"}}},
            "workers": {"mover": {"reads": ["/items"], "writes": ["/items/*"], "ops": ["move"]}},
        }
    )
    assert proposal_schema(bp, "mover", {"items": [1]}) is None
    generic = generic_patch_schema(["move", "add"])
    op = generic["properties"][PATCH_KEY]["items"]
    assert op["properties"]["op"] == {"enum": ["add", "move"]} and "from" in op["properties"]


def test_large_collections_stay_bounded() -> None:
    state = {
        "query": "q",
        "claims": [{"text": str(i), "status": "open"} for i in range(6)],
        "scores": {f"k{i}": i % 5 for i in range(500)},
        "meta": {"round": 0},
    }
    derived = proposal_schema(RICH, "editor", state, max_enum=3)
    assert derived is not None
    text = json.dumps(derived.schema)
    assert len(text) < 8000
    pats = {v["properties"]["path"].get("pattern") for v in _variants(derived.schema)}
    assert "^/claims/(0|[1-9][0-9]*)/status$" in pats
    assert "^/scores/([^/~]|~[01])+$" in pats
    assert derived.truncated is False
    # an object with declared properties cannot be described by a key regex: truncated instead
    bp = compile_blueprint(
        {
            "schema": {
                "type": "object",
                "properties": {
                    "o": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "additionalProperties": {"type": "integer"},
                    }
                },
            },
            "workers": {"w": {"writes": ["/o/*"]}},
        }
    )
    state2 = {"o": {"a": "x", **{f"k{i}": i for i in range(50)}}}
    derived2 = proposal_schema(bp, "w", state2, max_enum=5)
    assert derived2 is not None and derived2.truncated
    assert all(len(v["properties"]["path"]["enum"]) <= 5 for v in _variants(derived2.schema))


def test_write_targets_are_covered_by_the_contract() -> None:
    state = {"query": "q", "claims": [{"text": "a", "status": "open"}], "scores": {"x": 1}, "meta": {"round": 1}}
    for worker in RICH.workers:
        contract = RICH.workers[worker]
        for t in write_targets(RICH, worker, state):
            probe = (*t.tokens[:-1], "k") if t.open_key else t.tokens
            assert contract.may_write(probe), (worker, t)


def test_sketch_from_a_view_offers_visible_and_required_paths() -> None:
    state = {"query": "q", "claims": [{"text": "a", "status": "open"}] * 3, "scores": {"x": 1}, "meta": {"round": 1}}
    view = build_view(RICH, "judge", state, 0)
    sketch = sketch_state(RICH, "judge", view.data)
    derived = proposal_schema(RICH, "judge", sketch)
    assert derived is not None
    assert _paths(derived.schema, "replace") == {"/claims/0/status", "/claims/1/status", "/claims/2/status"}
    # a worker that cannot read /claims still gets /claims/- (required array) and /answer
    bp = notes_blueprint()
    blind = sketch_state(bp, "scribe", {})
    assert blind == {"notes": []}


# -- the property: every instance of the derived schema passes parse/ops/authorise and is typed --------
_FORBIDDEN = {"parse", "ops", "authorise"}


@st.composite
def _patches(draw: st.DrawFn, schema: dict[str, Any], hints: list[str]) -> list[dict[str, Any]]:
    variants = _variants(schema)
    n = draw(st.integers(1, schema["properties"][PATCH_KEY]["maxItems"]))
    ops = []
    for _ in range(n):
        v = draw(st.sampled_from(variants))
        props = v["properties"]
        op: dict[str, Any] = {"op": props["op"]["const"]}
        op["path"] = draw(instances(props["path"], schema, key_hint=hints))
        if "value" in props:
            op["value"] = draw(instances(props["value"], schema))
        ops.append(op)
    return ops


@settings(settings.get_profile("workers-ci"), max_examples=300)
@given(data=st.data(), state=rich_states())
def test_every_instance_of_the_derived_schema_is_authorised_and_typed(
    data: st.DataObject, state: dict[str, Any]
) -> None:
    worker = data.draw(st.sampled_from(sorted(RICH.workers)))
    include_test = data.draw(st.booleans())
    max_enum = data.draw(st.sampled_from([2, 24]))
    safe = data.draw(st.booleans())
    derived = proposal_schema(
        RICH,
        worker,
        state,
        include_test=include_test,
        max_enum=max_enum,
        max_ops=3,
        json_safe_strings=safe,
        string_max_length=data.draw(st.sampled_from([None, 5])),
    )
    assume(derived is not None)
    assert derived is not None
    validator = jsonschema_rs.validator_for(derived.schema)
    hints = [t.path for t in derived.targets if not t.open_key]
    patch = data.draw(_patches(derived.schema, hints))
    assume(validator.is_valid({PATCH_KEY: patch}))
    kernel = Kernel(RICH, copy.deepcopy(state))
    decision = kernel.submit(Proposal(worker, patch))
    assert decision.stage not in _FORBIDDEN, (decision.stage, decision.reason, patch)
    # enumerated for its own op: a path listed for ``add`` (a missing member) may also match a
    # ``replace`` pattern, which guarantees no existence
    listed = all(
        any(
            v["properties"]["op"].get("const") == p["op"] and p["path"] in v["properties"]["path"].get("enum", ())
            for v in _variants(derived.schema)
        )
        for p in patch
    )
    if len(patch) == 1 and patch[0]["op"] != "test" and listed:
        # one op on an enumerated path: existence and container bounds are guaranteed too
        assert decision.accepted or decision.record.outcome == "noop", (decision.stage, decision.reason, patch)
    if decision.stage == "schema":
        assert len(patch) > 1, (decision.reason, patch)
        assert any(k in (decision.reason or "") for k in ("Items", "Properties", "items", "properties")), (
            decision.reason
        )


@pytest.mark.parametrize("worker", sorted(RICH.workers))
def test_fragments_accept_exactly_what_the_kernel_schema_accepts(worker: str) -> None:
    """A value the derived schema rejects at an enumerated path is one the kernel rejects too
    (the fragment is the kernel's own, not a looser or stricter approximation)."""
    state = {"query": "q", "claims": [{"text": "a", "status": "open"}], "scores": {"x": 1}, "meta": {"round": 1}}
    derived = proposal_schema(RICH, worker, state)
    assert derived is not None
    validator = jsonschema_rs.validator_for(derived.schema)
    for v in _variants(derived.schema):
        props = v["properties"]
        if "value" not in props or "enum" not in props["path"]:
            continue
        for path in props["path"]["enum"]:
            bad: Any
            for bad in (12345678901, "not-an-enum-value-that-is-long-enough-to-break-limits" * 2, {"zz": []}):
                patch = [{"op": props["op"]["const"], "path": path, "value": bad}]
                if validator.is_valid({PATCH_KEY: patch}):
                    continue
                decision = Kernel(RICH, copy.deepcopy(state)).submit(Proposal(worker, patch))
                assert not decision.accepted, (path, bad)


def test_json_safe_strings_are_a_stricter_schema() -> None:
    state = {"query": "q", "claims": [], "scores": {}, "meta": {"round": 0}}
    derived = proposal_schema(RICH, "editor", state, json_safe_strings=True, string_max_length=50)
    assert derived is not None
    answer = next(v for v in _variants(derived.schema) if v["properties"]["path"].get("enum") == ["/answer"])[
        "properties"
    ]["value"]
    assert answer == {"type": "string", "maxLength": 30, "pattern": '^[^"\\\\\\x00-\\x1f]{0,30}$'}
    validator = jsonschema_rs.validator_for(derived.schema)

    def ok(text: str) -> bool:
        return validator.is_valid({PATCH_KEY: [{"op": "add", "path": "/answer", "value": text}]})

    assert ok("text {braces} 'quotes' ü")
    assert not ok("two\nlines") and not ok('a "quote"') and not ok("back\\slash") and not ok("x" * 31)
    # enums and consts are left alone; strings without a bound get string_max_length
    claim = next(v for v in _variants(derived.schema) if v["properties"]["path"].get("enum") == ["/claims/-"])[
        "properties"
    ]["value"]["properties"]
    assert claim["status"] == {"enum": ["open", "supported", "refuted"]}
    assert claim["text"]["pattern"].endswith("{0,40}$")


def test_nested_and_recursive_refs_are_hoisted_and_self_contained() -> None:
    bp = compile_blueprint(
        {
            "schema": {
                "type": "object",
                "$defs": {
                    "num": {"type": "integer", "maximum": 3},
                    "node": {
                        "type": "object",
                        "required": ["v"],
                        "properties": {
                            "v": {"$ref": "#/$defs/num"},
                            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                        },
                    },
                },
                "properties": {
                    "pair": {
                        "type": "object",
                        "properties": {"a": {"$ref": "#/$defs/num"}, "b": {"$ref": "#/$defs/num"}},
                    },
                    "tree": {"$ref": "#/$defs/node"},
                },
            },
            "initial_state": {"pair": {"a": 1}, "tree": {"v": 0}},
            "workers": {"w": {"writes": ["/pair", "/tree"], "ops": ["replace"]}},
        }
    )
    derived = proposal_schema(bp, "w", bp.initial_state())
    assert derived is not None
    assert derived.defs["ref0"] == {"type": "integer", "maximum": 3}
    text = json.dumps(derived.schema)
    assert "#/$defs/num" not in text and "#/$defs/node" not in text
    validator = jsonschema_rs.validator_for(derived.schema)

    def ok(path: str, value: Any) -> bool:
        return validator.is_valid({PATCH_KEY: [{"op": "replace", "path": path, "value": value}]})

    assert ok("/pair", {"a": 3, "b": 0}) and not ok("/pair", {"a": 4})
    assert ok("/tree", {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]})
    assert not ok("/tree", {"v": 1, "kids": [{"v": 2, "kids": [{"v": 9}]}]})
    for path, value in (("/pair", {"a": 3, "b": 0}), ("/tree", {"v": 1, "kids": [{"v": 2}]})):
        assert Kernel(bp).submit(Proposal("w", [{"op": "replace", "path": path, "value": value}])).accepted


def test_replacements_that_would_be_noops_are_left_out() -> None:
    state = {
        "query": "q",
        "claims": [{"text": "a", "status": "open"}, {"text": "b", "status": "refuted"}],
        "scores": {},
        "meta": {"round": 0, "done": True},
    }
    derived = proposal_schema(RICH, "editor", state)
    assert derived is not None
    values: dict[str, list[Any]] = {}
    for v in _variants(derived.schema):
        props = v["properties"]
        if props["op"]["const"] == "replace" and "enum" in props["path"]:
            for path in props["path"]["enum"]:
                values[path] = props["value"].get("enum", [props["value"].get("const")])
    assert values["/claims/0/status"] == ["supported", "refuted"]
    assert values["/claims/1/status"] == ["open", "supported"]
    assert values["/meta/done"] == [False]
    kept = proposal_schema(RICH, "editor", state, avoid_noops=False)
    assert kept is not None and '"enum": ["open", "supported", "refuted"]' in json.dumps(kept.schema)
