"""The proposal schema is cached per blueprint digest and worker, and only while its inputs hold:
the same targets give the same schema without rebuilding it; a changed target, a new id, a new
blueprint or a state value an ``x-refers-to`` node lists gives a new one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from slateboard.blueprint import compile_blueprint
from slateboard.workers.constrain import PATCH_KEY, _schema, proposal_schema

NOTES: dict[str, Any] = {
    "schema": {
        "type": "object",
        "properties": {
            "notes": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 50}},
            "pick": {"type": "string", "x-refers-to": "/notes/*"},
        },
    },
    "initial_state": {"notes": []},
    "workers": {"w": {"reads": ["/notes"], "writes": ["/notes/-"], "ops": ["add"]}, "p": {"writes": ["/pick"]}},
}


def test_same_targets_reuse_the_schema_and_callers_cannot_corrupt_it() -> None:
    bp = compile_blueprint(NOTES)
    _schema.clear_caches()
    first = proposal_schema(bp, "w", {"notes": ["a"]}, handles=["/notes"])
    assert first is not None and len(_schema._cache) == 1
    popped = first.schema.pop("properties")  # a caller taking the schema apart (as reply_schema pops $defs)
    second = proposal_schema(bp, "w", {"notes": ["a", "b"]}, handles=["/notes"])  # same target: /notes/-
    assert second is not None and len(_schema._cache) == 1
    assert second.schema["properties"] == popped
    assert second.schema["properties"][PATCH_KEY]["items"]["properties"]["path"] == {"enum": ["/notes/-"]}


def test_a_changed_target_a_full_container_or_another_blueprint_is_not_a_hit() -> None:
    bp = compile_blueprint(NOTES)
    _schema.clear_caches()
    assert proposal_schema(bp, "w", {"notes": []}) is not None
    assert proposal_schema(bp, "w", {"notes": ["a", "b", "c"]}) is None  # maxItems reached: no append
    other = compile_blueprint({**NOTES, "schema": {**NOTES["schema"], "properties": {
        **NOTES["schema"]["properties"], "notes": {"type": "array", "items": {"type": "integer"}}}}})  # fmt: skip
    derived = proposal_schema(other, "w", {"notes": []})
    assert derived is not None
    value = derived.schema["properties"][PATCH_KEY]["items"]["properties"]["value"]
    assert value["type"] == "integer"
    assert len(_schema._cache) == 2


def test_values_referred_to_in_the_state_are_never_served_from_the_cache() -> None:
    bp = compile_blueprint(NOTES)
    _schema.clear_caches()

    def offered(state: dict[str, Any]) -> Any:
        derived = proposal_schema(bp, "p", state)
        assert derived is not None
        return derived.schema["properties"][PATCH_KEY]["items"]["properties"]["value"]

    assert offered({"notes": ["x"]}) == {"enum": ["x"]}
    assert offered({"notes": ["x", "y"]}) == {"enum": ["x", "y"]}
    assert len(_schema._cache) == 0


def test_the_views_handles_are_added_to_a_cached_schema_not_baked_into_it() -> None:
    bp = compile_blueprint(NOTES)
    _schema.clear_caches()
    first = proposal_schema(bp, "w", {"notes": ["a"]}, handles=["/notes#[0:1]"])
    second = proposal_schema(bp, "w", {"notes": ["a", "b"]}, handles=["/notes#[0:2]"])
    bare = proposal_schema(bp, "w", {"notes": ["a", "b"]})
    assert first is not None and second is not None and bare is not None and len(_schema._cache) == 1
    assert first.schema["properties"]["expand"]["items"] == {"enum": ["/notes#[0:1]"]}
    assert second.schema["properties"]["expand"]["items"] == {"enum": ["/notes#[0:2]"]}
    assert "expand" not in bare.schema["properties"]


# -- a cached schema equals a fresh derivation on any state ---------------------------------------
VARIED: dict[str, Any] = {
    "schema": {
        "type": "object",
        "properties": {
            "notes": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 20}},
            "log": {"type": "array", "items": {"type": "object", "properties": {"t": {"type": "string"}}}},
            "tagged": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            "status": {"enum": ["open", "done", "dropped"]},
            "flag": {"type": "boolean"},
            "fixed": {"const": 1},
            "answer": {"type": "string"},
            "meta": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "integer"}},
            "obj": {"type": "object", "properties": {"inner": {"type": "integer"}}},
        },
    },
    "initial_state": {},
    "workers": {
        "appender": {"writes": ["/notes/-", "/log/-"], "ops": ["add"]},
        "setter": {"writes": ["/status", "/flag", "/fixed", "/answer"], "ops": ["add", "replace", "remove"]},
        "mapper": {"writes": ["/meta/k", "/obj/inner", "/meta/-"], "ops": ["add", "replace", "remove", "test"]},
        "ids": {"writes": ["/tagged/-"], "ops": ["add"]},
        "wild": {"writes": ["/meta/*", "/notes/0"], "ops": ["add", "replace"]},
    },
}

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["open", "done", "x", ""]))
_value = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["k", "inner", "t", "id"]), inner, max_size=3), max_leaves=6)  # fmt: skip
_state = st.dictionaries(
    st.sampled_from(["notes", "log", "tagged", "status", "flag", "fixed", "answer", "meta", "obj"]), _value, max_size=9
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_state, min_size=1, max_size=6), st.sampled_from(list(VARIED["workers"])), st.booleans())
def test_a_cached_schema_equals_a_fresh_derivation(states: list[dict[str, Any]], worker: str, test_op: bool) -> None:
    """Whatever the states (also ones the schema rejects), a schema served from the cache is
    exactly what a derivation with an empty cache gives for that state, its targets included
    (a hit used to return the targets of the state that filled the cache)."""
    bp = compile_blueprint(VARIED)
    for state in states:
        served = proposal_schema(bp, worker, state, include_test=test_op, handles=["/notes"])
        saved = _schema._cache.copy()
        _schema.clear_caches()
        fresh = proposal_schema(bp, worker, state, include_test=test_op, handles=["/notes"])
        _schema._cache = saved
        if fresh is None:
            assert served is None
            continue
        assert served is not None
        assert (served.schema, served.targets, served.ops, served.truncated, served.paths, served.defs) == (
            fresh.schema, fresh.targets, fresh.ops, fresh.truncated, fresh.paths, fresh.defs
        )  # fmt: skip


def test_a_hit_returns_this_states_targets() -> None:
    """Two states with the same offers but different targets (``/meta/k`` is a target while
    ``/meta`` exists, though a full map offers no add there): the second is served from the
    cache and lists its own targets."""
    bp = compile_blueprint(VARIED)
    _schema.clear_caches()
    full = proposal_schema(bp, "mapper", {"meta": {"a": 1, "b": 2}, "obj": {}})
    bare = proposal_schema(bp, "mapper", {"obj": {}})
    assert full is not None and bare is not None and len(_schema._cache) == 1
    assert full.schema == bare.schema
    assert [t.path for t in full.targets] == ["/meta/k", "/obj/inner"]
    assert [t.path for t in bare.targets] == ["/obj/inner"]
