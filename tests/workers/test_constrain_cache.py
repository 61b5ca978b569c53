"""The proposal schema is cached per blueprint digest and worker, and only while its inputs hold:
the same targets give the same schema without rebuilding it; a changed target, a new id, a new
blueprint or a state value an ``x-refers-to`` node lists gives a new one."""

from __future__ import annotations

from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.workers import PATCH_KEY, proposal_schema
from slateboard.workers.constrain import _schema

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
    _schema._cache.clear()
    first = proposal_schema(bp, "w", {"notes": ["a"]}, handles=["/notes"])
    assert first is not None and len(_schema._cache) == 1
    popped = first.schema.pop("properties")  # a caller taking the schema apart (as reply_schema pops $defs)
    second = proposal_schema(bp, "w", {"notes": ["a", "b"]}, handles=["/notes"])  # same target: /notes/-
    assert second is not None and len(_schema._cache) == 1
    assert second.schema["properties"] == popped
    assert second.schema["properties"][PATCH_KEY]["items"]["properties"]["path"] == {"enum": ["/notes/-"]}


def test_a_changed_target_a_full_container_or_another_blueprint_is_not_a_hit() -> None:
    bp = compile_blueprint(NOTES)
    _schema._cache.clear()
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
    _schema._cache.clear()

    def offered(state: dict[str, Any]) -> Any:
        derived = proposal_schema(bp, "p", state)
        assert derived is not None
        return derived.schema["properties"][PATCH_KEY]["items"]["properties"]["value"]

    assert offered({"notes": ["x"]}) == {"enum": ["x"]}
    assert offered({"notes": ["x", "y"]}) == {"enum": ["x", "y"]}
    assert len(_schema._cache) == 0


def test_the_views_handles_are_added_to_a_cached_schema_not_baked_into_it() -> None:
    bp = compile_blueprint(NOTES)
    _schema._cache.clear()
    first = proposal_schema(bp, "w", {"notes": ["a"]}, handles=["/notes#[0:1]"])
    second = proposal_schema(bp, "w", {"notes": ["a", "b"]}, handles=["/notes#[0:2]"])
    bare = proposal_schema(bp, "w", {"notes": ["a", "b"]})
    assert first is not None and second is not None and bare is not None and len(_schema._cache) == 1
    assert first.schema["properties"]["expand"]["items"] == {"enum": ["/notes#[0:1]"]}
    assert second.schema["properties"]["expand"]["items"] == {"enum": ["/notes#[0:2]"]}
    assert "expand" not in bare.schema["properties"]
