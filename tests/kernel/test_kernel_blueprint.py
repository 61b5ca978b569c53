"""Blueprint acceptance: every problem is reported (by JSON path inside the blueprint), and
files load as YAML or JSON with clear errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from slateboard.blueprint import BlueprintError, CompiledBlueprint, compile_blueprint, load_blueprint
from slateboard.kernel import Kernel, Proposal

SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "status": {"enum": ["open", "done"]}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
        "count": {"type": "integer"},
        "tags": {
            "type": "object",
            "patternProperties": {"^t[0-9]+$": {"type": "string"}},
            "additionalProperties": False,
        },
        "tree": {"$ref": "#/$defs/node"},
    },
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
    "additionalProperties": False,
}


def good(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "claims",
        "schema": SCHEMA,
        "initial_state": {"claims": [], "count": 0},
        "workers": {
            "writer": {"reads": ["/claims"], "writes": ["/claims/-", "/claims/*/status"]},
            "counter": {"writes": ["/count"], "ops": ["replace", "test"]},
        },
        "rules": [{"on": {"op": "add", "path": "/claims/-"}, "invoke": "counter", "when": "event.path != ''"}],
        "invariants": [{"at": "/count", "rule": "self >= 0"}],
        "stages": [{"name": "work", "exit": "size(state.claims) > 3"}],
        "done": "has(state.count) && state.count > 2",
    }
    data.update(overrides)
    return data


def issues_of(data: Any) -> dict[str, str]:
    with pytest.raises(BlueprintError) as info:
        compile_blueprint(data)
    err = info.value
    assert err.issues, "a BlueprintError must list its issues"
    for issue in err.issues:
        assert str(issue) in str(err)  # every issue appears in the message
    return {i.path: i.message for i in err.issues}


def test_good_blueprint_is_accepted_and_runs():
    bp = compile_blueprint(good())
    assert isinstance(bp, CompiledBlueprint)
    assert set(bp.workers) == {"writer", "counter"}
    assert bp.workers["counter"].ops == frozenset({"replace", "test"})
    k = Kernel(bp)
    assert k.submit(Proposal("writer", [{"op": "add", "path": "/claims/-", "value": {"text": "x"}}])).accepted
    # digest is a function of the content
    assert compile_blueprint(good()).digest == bp.digest
    assert compile_blueprint(good(name="other")).digest != bp.digest


def test_model_errors_are_all_listed_by_json_path():
    issues = issues_of(
        {
            "schema": 5,
            "workers": {"w": {"writes": 3, "ops": ["frob"], "view_budget": 1}},
            "limits": {"max_ops": 0},
            "rules": [{"on": {"op": "add"}}],
            "bogus": True,
        }
    )
    for path in [
        "/schema",
        "/workers/w/writes",
        "/workers/w/ops/0",
        "/workers/w/view_budget",
        "/limits/max_ops",
        "/rules/0/invoke",
        "/bogus",
    ]:
        assert path in issues, f"{path} missing from {sorted(issues)}"


def test_missing_workers_is_reported():
    assert "/workers" in issues_of({"schema": {}})
    assert "/workers" in issues_of({"schema": {}, "workers": {}})


@pytest.mark.parametrize("data", [[], "x", 3, None])
def test_blueprint_must_be_an_object(data):
    issues = issues_of(data)
    assert list(issues) == [""]


def test_unknown_worker_in_rule_is_reported():
    issues = issues_of(good(rules=[{"invoke": "nobody"}]))
    assert "unknown worker 'nobody'" in issues["/rules/0/invoke"]


@pytest.mark.parametrize(
    "pattern",
    ["/nope", "/count/x", "/claims/0/extra", "/claims/*/nope", "/tags/u1", "/tree/v/x", "/tree/kids/0/v/x"],
)
def test_write_pattern_without_schema_location_is_reported(pattern):
    workers = {"w": {"writes": ["/claims/-", pattern]}}
    issues = issues_of(good(workers=workers, rules=[]))
    assert "/workers/w/writes/1" in issues and "matches no location" in issues["/workers/w/writes/1"]
    assert "/workers/w/writes/0" not in issues


@pytest.mark.parametrize(
    "pattern",
    [
        "/claims/-",
        "/claims/*",
        "/claims/0/text",
        "/claims/*/status",
        "/claims/**",
        "/tags/t1",
        "/tags/*",
        "/tree/v",
        "/tree/kids/-",
        "/tree/kids/*/kids/*/v",
        "/count",
        "",
    ],
)
def test_write_patterns_with_a_schema_location_are_accepted(pattern):
    compile_blueprint(good(workers={"w": {"writes": [pattern]}}, rules=[]))


def test_bad_pattern_syntax_is_reported():
    issues = issues_of(good(workers={"w": {"reads": ["x"], "writes": ["/claims/**/text"]}}, rules=[]))
    assert "/workers/w/reads/0" in issues and "/workers/w/writes/0" in issues


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ({"invariants": [{"at": "/count", "rule": "self >"}]}, "/invariants/0/rule"),
        ({"rules": [{"invoke": "writer", "when": "event.path ==="}]}, "/rules/0/when"),
        ({"done": "(("}, "/done"),
        ({"stages": [{"name": "s", "enter": "1 +"}]}, "/stages/0/enter"),
        ({"stages": [{"name": "s", "exit": "'unterminated"}]}, "/stages/0/exit"),
        ({"invariants": [{"at": "/count", "rule": "   "}]}, "/invariants/0/rule"),
    ],
)
def test_cel_that_does_not_compile_is_reported(override, path):
    issues = issues_of(good(**override))
    assert path in issues and "CEL does not compile" in issues[path]


def test_invariant_location_without_schema_location_is_reported():
    issues = issues_of(good(invariants=[{"at": "/nope", "rule": "true"}]))
    assert "/invariants/0/at" in issues


def test_all_issues_are_listed_together():
    issues = issues_of(
        good(
            workers={"w": {"writes": ["/nope", "/count"], "model": "local", "function": "m:f"}},
            rules=[{"invoke": "ghost", "when": "(("}],
            invariants=[{"at": "/count", "rule": "self >"}],
            stages=[{"name": "a"}, {"name": "a"}],
            done="))",
        )
    )
    assert set(issues) >= {
        "/workers/w/writes/0",
        "/workers/w",
        "/rules/0/invoke",
        "/rules/0/when",
        "/invariants/0/rule",
        "/stages/1/name",
        "/done",
    }


def test_untrusted_worker_needs_a_quarantine():
    issues = issues_of(good(workers={"w": {"writes": ["/count"], "untrusted": True}}, rules=[]))
    assert "/workers/w/untrusted" in issues
    issues = issues_of(
        good(workers={"w": {"writes": ["/count"], "untrusted": True}}, rules=[], quarantine="/claims/**")
    )
    assert "/workers/w/writes/0" in issues and "quarantine" in issues["/workers/w/writes/0"]
    compile_blueprint(
        good(workers={"w": {"writes": ["/claims/-"], "untrusted": True}}, rules=[], quarantine="/claims/**")
    )


@pytest.mark.parametrize(
    "schema", [{"type": 5}, {"type": "nope"}, {"properties": []}, {"$ref": "#/$defs/missing"}, {"minimum": "x"}]
)
def test_invalid_state_schema_is_reported(schema):
    issues = issues_of(good(schema=schema, workers={"w": {}}, rules=[], invariants=[], initial_state={}))
    assert list(issues) == ["/schema"]


def test_invalid_state_schema_does_not_hide_the_other_issues():
    issues = issues_of(good(schema={"type": 5}, rules=[{"invoke": "ghost", "when": "(("}], done="))"))
    assert "/schema" in issues
    assert {"/rules/0/invoke", "/rules/0/when", "/done"} <= set(issues), sorted(issues)


def test_initial_state_that_violates_the_schema_is_reported_by_path():
    issues = issues_of(good(initial_state={"claims": [{"status": "open"}, {"text": 3}], "count": "x"}))
    assert any(p.startswith("/initial_state/claims/0") for p in issues)
    assert "/initial_state/claims/1/text" in issues
    assert "/initial_state/count" in issues


def test_initial_state_that_violates_an_invariant_is_reported():
    issues = issues_of(good(initial_state={"claims": [], "count": -1}))
    assert "/invariants/0" in issues and "/count" in issues["/invariants/0"]


@pytest.mark.parametrize(
    "value",
    [2**70, float("nan"), float("inf"), {1, 2}],
    ids=["int-70-bits", "nan", "inf", "set"],
)
def test_initial_state_that_is_not_json_is_a_blueprint_error(value):
    data = good(schema={"type": "object"}, invariants=[], rules=[], workers={"w": {}}, initial_state={"x": value})
    with pytest.raises(BlueprintError) as info:
        compile_blueprint(data)
    assert any(i.path.startswith("/initial_state") for i in info.value.issues), info.value.issues


# -- files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
@pytest.mark.parametrize("as_path", [True, False])
def test_load_blueprint_from_yaml_and_json_files(tmp_path: Path, suffix: str, as_path: bool) -> None:
    f = tmp_path / f"board{suffix}"
    f.write_text(json.dumps(good()) if suffix == ".json" else yaml.safe_dump(good()), encoding="utf-8")
    bp = load_blueprint(f if as_path else str(f))
    assert bp.digest == compile_blueprint(good()).digest


def test_load_blueprint_reports_the_file_on_compile_errors(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(good(rules=[{"invoke": "ghost"}])), encoding="utf-8")
    with pytest.raises(BlueprintError) as info:
        load_blueprint(f)
    assert info.value.source == str(f) and str(f) in str(info.value)
    assert "/rules/0/invoke" in {i.path for i in info.value.issues}


def test_missing_file_is_a_blueprint_error_naming_it(tmp_path: Path) -> None:
    f = tmp_path / "nope.yaml"
    with pytest.raises(BlueprintError) as info:
        load_blueprint(f)
    assert str(f) in str(info.value) and "cannot read" in str(info.value)


def test_directory_is_a_blueprint_error(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError) as info:
        load_blueprint(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("bad.yaml", "workers: [\n", "not valid YAML"),
        ("bad.yaml", "a: b: c\n", "not valid YAML"),
        ("bad.json", '{"workers": ', "not valid JSON"),
        ("list.yaml", "- 1\n- 2\n", "must be an object"),
        ("empty.yaml", "", "must be an object"),
    ],
)
def test_invalid_file_content_is_a_blueprint_error_naming_the_file(
    tmp_path: Path, name: str, text: str, fragment: str
) -> None:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    with pytest.raises(BlueprintError) as info:
        load_blueprint(f)
    assert str(f) in str(info.value) and fragment in str(info.value)


def test_file_that_is_not_utf8_is_a_blueprint_error(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(BlueprintError) as info:
        load_blueprint(f)
    assert str(f) in str(info.value)


def test_yaml_values_that_are_not_json_are_a_blueprint_error(tmp_path: Path) -> None:
    f = tmp_path / "dates.yaml"
    f.write_text("schema: {type: object}\nworkers: {w: {}}\ninitial_state: {day: 2024-01-01}\n", encoding="utf-8")
    with pytest.raises(BlueprintError) as info:
        load_blueprint(f)
    assert str(f) in str(info.value)
    assert any(i.path.startswith("/initial_state") for i in info.value.issues)
