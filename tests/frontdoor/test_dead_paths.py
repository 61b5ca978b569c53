"""Issue 28: blueprint paths that match no schema location fail at compile time, each reported
with every other issue in the one report (a rule that could never fire, a read or write pattern
that names nothing, an ``x-refers-to`` whose values would always be none)."""

from __future__ import annotations

import copy
import glob
from pathlib import Path
from typing import Any

import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint

ROOT = Path(__file__).resolve().parents[2]

BASE: dict[str, Any] = {
    "name": "dead-paths",
    "schema": {
        "type": "object",
        "properties": {
            "task": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}},
                                                  "additionalProperties": False}},
            "picks": {
                "type": "array",
                "items": {"type": "string", "x-refers-to": "/items/*/id"},
            },
            "notes": {"type": "object"},  # open: any member below is a location
            "tags": {"type": "object", "patternProperties": {"^t[0-9]+$": {"type": "string"}},
                     "additionalProperties": False},
            "ref": {"$ref": "#/$defs/box"},
        },
        "additionalProperties": False,
    },
    "$defs": {},
    "initial_state": {"task": "t", "items": [], "picks": [], "notes": {}, "tags": {}},
    "workers": {"w": {"reads": ["/task", "/items"], "writes": ["/items/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "w"}, {"on": {"op": "add", "path": "/items/-"}, "invoke": "w"}],
}  # fmt: skip
BASE["schema"]["$defs"] = {"box": {"type": "object", "properties": {"inner": {"type": "integer"}},
                                   "additionalProperties": False}}  # fmt: skip
del BASE["$defs"]


def issues_of(bp: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(BlueprintError) as info:
        compile_blueprint(bp)
    return [(i.path, i.message) for i in info.value.issues]


def test_the_base_blueprint_compiles() -> None:
    compile_blueprint(BASE)


def test_a_rule_path_that_matches_nothing() -> None:
    bp = copy.deepcopy(BASE)
    bp["rules"][1]["on"]["path"] = "/itemz/-"
    [(path, message)] = issues_of(bp)
    assert path == "/rules/1/on/path"
    assert "'/itemz/-' matches no location of the state schema" in message and "never fire" in message


def test_a_read_pattern_that_matches_nothing() -> None:
    bp = copy.deepcopy(BASE)
    bp["workers"]["w"]["reads"] = ["/task", "/items/*/id/x"]  # id is a string: no members
    [(path, message)] = issues_of(bp)
    assert path == "/workers/w/reads/1"
    assert "read pattern '/items/*/id/x' matches no location" in message


def test_a_write_pattern_that_matches_nothing() -> None:
    bp = copy.deepcopy(BASE)
    bp["workers"]["w"]["writes"] = ["/item/-"]
    [(path, message)] = issues_of(bp)
    assert path == "/workers/w/writes/0" and "write pattern '/item/-' matches no location" in message


def test_an_x_refers_to_that_matches_nothing() -> None:
    bp = copy.deepcopy(BASE)
    bp["schema"]["properties"]["picks"]["items"]["x-refers-to"] = "/items/*/ident"
    [(path, message)] = issues_of(bp)
    assert path == "/schema/properties/picks/items/x-refers-to"
    assert "x-refers-to '/items/*/ident' matches no location" in message


def test_an_x_refers_to_that_is_not_a_pattern() -> None:
    bp = copy.deepcopy(BASE)
    bp["schema"]["properties"]["picks"]["items"]["x-refers-to"] = "items"
    [(path, message)] = issues_of(bp)
    assert path == "/schema/properties/picks/items/x-refers-to" and "is not a pointer pattern" in message


def test_every_dead_path_is_in_the_one_report() -> None:
    bp = copy.deepcopy(BASE)
    bp["rules"][1]["on"]["path"] = "/nope"
    bp["workers"]["w"]["reads"] = ["/nope2"]
    bp["workers"]["w"]["writes"] = ["/nope3/-"]
    bp["schema"]["properties"]["picks"]["items"]["x-refers-to"] = "/nope4/*"
    bp["rules"][0]["invoke"] = "ghost"  # an unrelated issue, in the same report
    paths = {p for p, _ in issues_of(bp)}
    assert paths == {
        "/rules/1/on/path", "/workers/w/reads/0", "/workers/w/writes/0",
        "/schema/properties/picks/items/x-refers-to", "/rules/0/invoke",
    }  # fmt: skip


@pytest.mark.parametrize(
    "live",
    [
        "/notes/anything/below",  # an open object: every member is a location
        "/tags/t1",  # a patternProperties member
        "/ref/inner",  # through a $ref
        "/**",
        "/items/*/id",
    ],
)
def test_paths_that_reach_a_location_are_fine(live: str) -> None:
    bp = copy.deepcopy(BASE)
    bp["workers"]["w"]["reads"] = [live]
    bp["rules"][1]["on"]["path"] = live
    compile_blueprint(bp)


@pytest.mark.parametrize("dead", ["/tags/x1", "/ref/outer", "/task/0"])
def test_closed_objects_and_scalars_have_no_other_members(dead: str) -> None:
    bp = copy.deepcopy(BASE)
    bp["rules"][1]["on"]["path"] = dead
    [(path, _)] = issues_of(bp)
    assert path == "/rules/1/on/path"


SHIPPED = sorted(
    f
    for pattern in ("src/slateboard/blueprint/templates/*.yaml", "examples/**/*.yaml", "tests/**/*.yaml")
    for f in glob.glob(str(ROOT / pattern), recursive=True)
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: Path(p).name)
def test_shipped_blueprints_still_compile(path: str) -> None:
    load_blueprint(path)
