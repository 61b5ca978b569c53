"""A blueprint's visibility terms are checked when it is accepted: every way a collection could
let a hidden entry show through (array positions, whole-object schema checks, counting keywords,
a collection an op could replace) and every unknown name is a blueprint issue naming where."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from visibility_kit import blueprint_data, make_bp

from slateboard.blueprint import Blueprint, BlueprintError, compile_blueprint
from slateboard.kernel.visibility import Visibility


def issues_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(BlueprintError) as info:
        compile_blueprint(data)
    return [str(i) for i in info.value.issues]


def test_the_kit_compiles_with_its_visibility_terms() -> None:
    bp = make_bp()
    assert isinstance(bp.visibility, Visibility)
    assert [c.path for c in bp.visibility.collections] == ["/notes"]
    assert bp.visibility.audience("reviewers") == {"bob", "carol"}
    assert bp.visibility.audience("*") == {"alice", "bob", "carol", "dave"}


def test_a_blueprint_without_visibility_keeps_its_digest() -> None:
    # Boards stored before issue 44 replay: the new terms are left out of the JSON when unset.
    data = blueprint_data()
    del data["visibility"]
    for w in data["workers"].values():
        w.pop("addresses", None)
    out = Blueprint.model_validate(data).to_json()
    assert "visibility" not in out and all("addresses" not in w for w in out["workers"].values())
    assert compile_blueprint(data).visibility is None


def with_notes_schema(schema: dict[str, Any]) -> dict[str, Any]:
    data = blueprint_data()
    data["schema"]["properties"]["notes"] = schema
    return data


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (
            lambda d: d["visibility"]["collections"][0].update(path="/notes/*"),
            "/visibility/collections/0/path",
            "concrete",
        ),
        (lambda d: d["visibility"]["collections"][0].update(path=""), "/visibility/collections/0/path", "concrete"),
        (
            lambda d: d["visibility"]["collections"][0].update(path="/log"),
            "/visibility/collections/0/path",
            "object keyed",
        ),
        (lambda d: d["initial_state"].pop("notes"), "/visibility/collections/0/path", "no object member"),
        (
            lambda d: d["visibility"]["collections"][0].update(field=""),
            "/visibility/collections/0/field",
            "needs a name",
        ),
        (
            lambda d: d["visibility"]["collections"].append({"path": "/notes"}),
            "/visibility/collections/1/path",
            "overlaps",
        ),
        (lambda d: d["visibility"]["labels"].update(dave=["bob"]), "/visibility/labels/dave", "also a worker"),
        (lambda d: d["visibility"]["labels"].update(x=["zed"]), "/visibility/labels/x", "unknown worker 'zed'"),
        (lambda d: d["workers"]["bob"].update(addresses=["nobody"]), "/workers/bob/addresses/0", "neither"),
    ],
)
def test_each_bad_term_is_an_issue_naming_where(change: Any, where: str, words: str) -> None:
    data = blueprint_data()
    change(data)
    found = issues_of(data)
    assert any(i.startswith(where) and words in i for i in found), found


@pytest.mark.parametrize("keyword", ["maxProperties", "minProperties", "required", "dependentRequired", "properties"])
def test_a_collection_schema_that_counts_or_names_members_is_refused(keyword: str) -> None:
    from visibility_kit import ENTRY_SCHEMA

    value: Any = {"maxProperties": 3, "minProperties": 0, "required": [], "dependentRequired": {}, "properties": {}}
    schema = {"type": "object", "additionalProperties": ENTRY_SCHEMA, keyword: value[keyword]}
    found = issues_of(with_notes_schema(schema))
    assert any(keyword in i and "hidden entries" in i for i in found), found


def test_a_collection_under_a_whole_object_check_is_refused() -> None:
    from visibility_kit import ENTRY_SCHEMA

    schema = {"type": "object", "additionalProperties": ENTRY_SCHEMA, "anyOf": [{"type": "object"}]}
    found = issues_of(with_notes_schema(schema))
    assert any("validates whole objects" in i for i in found), found


def test_addresses_without_visibility_are_an_issue() -> None:
    data = blueprint_data()
    del data["visibility"]
    found = issues_of(data)
    assert any(i.startswith("/workers/alice/addresses") for i in found), found


@pytest.mark.parametrize(
    ("notes", "required", "words"),
    [
        ({"a": {"text": "x", "visible_to": "bob"}}, False, "must be a list"),
        ({"a": {"text": "x", "visible_to": ["zed"]}}, False, "'zed' is neither"),
        ({"a": {"text": "x"}}, True, "must carry 'visible_to'"),
    ],
)
def test_initial_entries_are_checked(notes: dict[str, Any], required: bool, words: str) -> None:
    found = issues_of(blueprint_data(required=required, initial_notes=copy.deepcopy(notes)))
    assert any(i.startswith("/initial_state/notes/a") and words in i for i in found), found


def test_initial_entries_with_good_visibility_are_accepted() -> None:
    bp = make_bp(required=True, initial_notes={"a": {"text": "x", "visible_to": ["reviewers", "*", "dave"]}})
    assert bp.visibility is not None
