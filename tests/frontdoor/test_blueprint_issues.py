"""A rejected blueprint lists every issue in one report: shape errors (pydantic), the state
schema's invalid keywords, CEL that does not compile and contracts on paths the schema lacks, each
with its location, instead of one validation phase per attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint

BROKEN_YAML = """\
name: broken
schema:
  type: object
  additionalProperties: false
  properties:
    notes: {type: array, items: {type: string}}
    count: {type: integr}
    answer: {type: string}
initial_state: {notes: []}
workers:
  writer:
    reads: [/notes]
    writes: [/notes/-, /nowhere/-]
    colour: red
  decider: {reads: [/notes], writes: [/answer]}
rules:
  - {"on": {op: start}, invoke: writer}
  - {"on": {op: add, path: /notes/-}, when: "size(state.notes) >= (", invoke: decider}
done: has(state.answer)
"""


def issues_of(source: Any) -> dict[str, str]:
    with pytest.raises(BlueprintError) as info:
        if isinstance(source, Path):
            load_blueprint(source)
        else:
            compile_blueprint(source)
    err = info.value
    for issue in err.issues:
        assert str(issue) in str(err)
    return {i.path: i.message for i in err.issues}


def test_shape_schema_cel_and_contract_issues_come_in_one_report(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN_YAML, encoding="utf-8")
    with pytest.raises(BlueprintError) as info:
        load_blueprint(path)
    err = info.value
    issues = {i.path: i.message for i in err.issues}
    assert set(issues) == {"/workers/writer/colour", "/schema", "/rules/1/when", "/workers/writer/writes/1"}, issues
    assert "Extra inputs are not permitted" in issues["/workers/writer/colour"]
    assert "at /properties/count/type" in issues["/schema"] and "integr" in issues["/schema"]
    assert "CEL does not compile" in issues["/rules/1/when"]
    assert "'/nowhere/-' matches no location of the state schema" in issues["/workers/writer/writes/1"]
    assert f"blueprint {path} rejected (4 issues)" in str(err)


def test_a_dropped_rule_keeps_the_indexes_of_the_rules_after_it() -> None:
    data = {
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "workers": {"w": {"writes": ["/a"]}},
        "rules": [
            {"on": {"op": "add"}},  # no invoke: the rule is dropped for the later checks
            {"invoke": "w", "when": "(("},
            {"invoke": "ghost"},
        ],
        "invariants": [{"at": "/a", "rule": 5}, {"at": "/a", "rule": "self.size() >"}],
    }
    issues = issues_of(data)
    assert "Field required" in issues["/rules/0/invoke"]
    assert "CEL does not compile" in issues["/rules/1/when"]
    assert "unknown worker 'ghost'" in issues["/rules/2/invoke"]
    assert "/invariants/0/rule" in issues and "CEL does not compile" in issues["/invariants/1/rule"]


def test_a_broken_worker_is_no_unknown_worker_for_its_rules() -> None:
    data = {
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "workers": {"w": {"pinned": ["/a"]}},  # pinned but not read: the worker itself is broken
        "rules": [{"invoke": "w", "when": "))"}],
    }
    issues = issues_of(data)
    assert "not one of the worker's reads" in issues["/workers/w"]
    assert "/rules/0/invoke" not in issues
    assert "CEL does not compile" in issues["/rules/0/when"]


def test_a_missing_schema_stops_only_the_schema_checks() -> None:
    issues = issues_of({"workers": {"w": {"writes": ["/anything"]}}, "done": "(("})
    assert set(issues) == {"/schema", "/done"}, issues


def test_every_invalid_schema_keyword_is_named() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "strng"}, "b": {"minLength": -1}},
    }
    with pytest.raises(BlueprintError) as info:
        compile_blueprint({"schema": schema, "workers": {"w": {"writes": ["/a", "/c"]}}})
    messages = [i.message for i in info.value.issues if i.path == "/schema"]
    assert any("at /properties/a/type" in m for m in messages), messages
    assert any("at /properties/b/minLength" in m for m in messages), messages
    others = {i.path: i.message for i in info.value.issues if i.path != "/schema"}
    assert others == {"/workers/w/writes/1": "write pattern '/c' matches no location of the state schema"}


def test_the_initial_state_is_checked_alongside_other_issues() -> None:
    data = {
        "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "initial_state": {"n": "x"},
        "workers": {"w": {"writes": ["/n"]}},
        "done": "((",
    }
    issues = issues_of(data)
    assert set(issues) == {"/initial_state/n", "/done"}, issues


CEL_BASE: dict[str, Any] = {
    "schema": {"type": "object", "properties": {"ideas": {"type": "array", "items": {"type": "string"}}}},
    "initial_state": {"ideas": []},
    "workers": {"a": {"reads": ["/ideas"], "writes": ["/ideas/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}],
}


@pytest.mark.parametrize(
    ("where", "spec", "unknown"),
    [
        # an invariant sees root/self/oldSelf: `state` there failed every proposal, details withheld
        (
            "/invariants/0/rule",
            {"invariants": [{"name": "n", "at": "/ideas", "rule": "size(state.ideas) < 3"}]},
            "state",
        ),
        ("/rules/0/when", {"rules": [{"on": {"op": "start"}, "invoke": "a", "when": "size(root.ideas) == 0"}]}, "root"),
        ("/done", {"done": "size(self) > 1"}, "self"),
        ("/fail", {"fail": "now > 3"}, "now"),
    ],
)
def test_cel_naming_a_variable_its_context_lacks_is_a_blueprint_issue(
    where: str, spec: dict[str, Any], unknown: str
) -> None:
    found = issues_of({**CEL_BASE, **spec})
    assert where in found and f"CEL uses '{unknown}', not a variable here" in found[where]


def test_comprehension_variables_and_the_contexts_own_variables_compile() -> None:
    compile_blueprint(
        {
            **CEL_BASE,
            "invariants": [
                {"name": "short", "at": "/ideas", "rule": "self.all(i, size(i) < 40) && size(root.ideas) < 9"}
            ],
            "rules": [
                {"on": {"op": "start"}, "invoke": "a", "when": "state.ideas.exists(x, x == 'a') || bindings == []"}
            ],
            "done": "state.ideas.map(k, size(k)).exists(n, n > 3)",
        }
    )
