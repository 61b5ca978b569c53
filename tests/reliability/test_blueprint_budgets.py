"""D9, D10, D18, D19: budgets for everything a blueprint file controls.

Before: a CEL syntax error past column 65,535 panicked the Rust parser and the
PanicException (a BaseException) escaped ``compile_blueprint``; a 1.5 KB YAML alias bomb
was expanded without limit (SIGSEGV at 2.85 GB, or a hang); a repeated key was resolved
last-wins (a trailing ``invariants: []`` dropped the invariants); and seven nested ``.all()``
cost seconds per commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint

BASE = """\
name: budget
schema: {type: object, properties: {notes: {type: array, items: {type: integer}}}}
initial_state: {notes: []}
workers:
  a: {reads: [/notes], writes: [/notes/-]}
"""


def _blueprint(**extra: Any) -> dict[str, Any]:
    return {
        "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "integer"}}}},
        "initial_state": {"notes": []},
        "workers": {"a": {"reads": ["/notes"], "writes": ["/notes/-"]}},
        **extra,
    }


def test_d9_overlong_cel_is_a_blueprint_issue_not_a_panic() -> None:
    rule = "1 + " + " " * 70_000 + ")"
    with pytest.raises(BlueprintError, match="over the limit"):
        compile_blueprint(_blueprint(invariants=[{"at": "", "rule": rule}]))


def test_d19_deeply_nested_comprehensions_are_refused() -> None:
    rule = "self.notes.all(a, " * 7 + "true" + ")" * 7
    with pytest.raises(BlueprintError, match="nest 7 deep"):
        compile_blueprint(_blueprint(invariants=[{"at": "", "rule": rule}]))
    # two levels, and macro names inside strings, are fine
    ok = "self.notes.all(a, self.notes.exists(b, b >= a)) || '.all(.all(.all(.all(' == ''"
    compile_blueprint(_blueprint(invariants=[{"at": "", "rule": ok}]))


BOMB = """\
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (BASE + BOMB + "description: *i\n", "expands to more than"),
        (BASE + "extra: &r [1, *r]\n", "refers to a node that contains it"),
        (BASE + "extra: " + "[" * 500 + "]" * 500 + "\n", "nests deeper than"),
    ],
)
def test_d10_yaml_alias_bombs_and_deep_nesting_are_refused(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(BlueprintError, match=reason):
        load_blueprint(path)


def test_d10_small_anchors_still_work(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text(
        BASE.replace(
            "  a: {reads: [/notes], writes: [/notes/-]}", "  a: &w {reads: [/notes], writes: [/notes/-]}\n  b: *w"
        )
    )
    assert set(load_blueprint(path).workers) == {"a", "b"}


def test_d18_duplicate_keys_in_blueprint_yaml_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(BASE + 'invariants:\n  - {at: "/notes/*", rule: "self > 0"}\ninvariants: []\n')
    with pytest.raises(BlueprintError, match="duplicate key 'invariants'"):
        load_blueprint(path)
    nested = tmp_path / "nested.yaml"
    nested.write_text(BASE.replace("{reads: [/notes],", "{reads: [/notes], reads: [/**],"))
    with pytest.raises(BlueprintError, match="duplicate key 'reads'"):
        load_blueprint(nested)


def test_d18_duplicate_keys_in_blueprint_json_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"name": "x", "name": "y"}')
    with pytest.raises(BlueprintError, match="duplicate key 'name'"):
        load_blueprint(path)
