"""D9, D10, D18, D19: budgets for everything a blueprint file controls.

Before: a CEL syntax error past column 65,535 panicked the Rust parser and the
PanicException (a BaseException) escaped ``compile_blueprint``; a 1.5 KB YAML alias bomb
was expanded without limit (SIGSEGV at 2.85 GB, or a hang); a repeated key was resolved
last-wins (a trailing ``invariants: []`` dropped the invariants); and seven nested ``.all()``
cost seconds per commit.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import cel
import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint
from slateboard.kernel import Decision, Kernel, Proposal
from slateboard.kernel.cel import DEFAULT_CEL_BUDGET, compile_cel
from slateboard.kernel.celcost import CostModel
from slateboard.kernel.replay import replay

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


SEVEN = "self.notes.all(a, " * 7 + "true" + ")" * 7


def _budget_kernel(rule: str, initial: list[int], **limits: int) -> Kernel:
    data = _blueprint(invariants=[{"name": "deep", "at": "", "rule": rule}], limits=limits)
    data["initial_state"] = {"notes": initial}
    data["workers"] = {"a": {"reads": ["/**"], "writes": ["/**"]}}
    return Kernel(compile_blueprint(data))


def _set_notes(kernel: Kernel, notes: list[int]) -> Decision:
    return kernel.submit(Proposal("a", [{"op": "replace", "path": "/notes", "value": notes}]))


def test_d19_seven_nested_comprehensions_are_rejected_by_the_budget_before_running() -> None:
    """Before: the invariant ran (10^7 iterations, 3.5 s a commit). Now its estimated cost
    (23 million steps) is over the default budget: rejected at the invariants stage, state kept."""
    kernel = _budget_kernel(SEVEN, [], cel_nesting=7)
    before = (kernel.state_hash, kernel.version, copy.deepcopy(kernel.state))
    decision = _set_notes(kernel, list(range(10)))
    assert decision.record.outcome == "rejected" and decision.stage == "invariants"
    assert decision.reason is not None
    assert "CEL evaluation budget exceeded in invariant 'deep'" in decision.reason
    assert f"over the budget of {DEFAULT_CEL_BUDGET:,}" in decision.reason
    assert (kernel.state_hash, kernel.version, kernel.state) == before
    # the same rule over a small list is cheap and still checked for real
    assert _set_notes(kernel, [1, 2, 3]).accepted


def test_d19_legitimate_two_level_comprehension_still_decides() -> None:
    unique = "self.notes.all(a, self.notes.exists_one(b, b == a))"
    kernel = _budget_kernel(unique, [])
    assert _set_notes(kernel, list(range(200))).accepted
    refused = _set_notes(kernel, [*range(199), 0])
    assert refused.stage == "invariants" and refused.reason is not None
    assert "is false" in refused.reason and "budget" not in refused.reason


def test_d19_budget_is_configurable_in_the_blueprint() -> None:
    unique = "self.notes.all(a, self.notes.exists_one(b, b == a))"
    tight = _budget_kernel(unique, [], cel_budget=1000)
    decision = _set_notes(tight, list(range(40)))
    assert decision.stage == "invariants" and decision.reason is not None
    assert "over the budget of 1,000 (limits.cel_budget)" in decision.reason
    assert _set_notes(tight, list(range(5))).accepted
    with pytest.raises(BlueprintError, match="cel_budget"):
        compile_blueprint(_blueprint(limits={"cel_budget": 0}))
    with pytest.raises(BlueprintError, match="nest 4 deep, over the limit of 3"):
        compile_blueprint(_blueprint(invariants=[{"at": "", "rule": "self.notes.all(a, " * 4 + "true" + ")" * 4}]))


def test_d19_an_initial_state_over_budget_rejects_the_blueprint() -> None:
    data = _blueprint(invariants=[{"name": "deep", "at": "", "rule": SEVEN}], limits={"cel_nesting": 7})
    data["initial_state"] = {"notes": list(range(10))}
    with pytest.raises(BlueprintError, match="CEL evaluation budget exceeded in invariant 'deep'"):
        compile_blueprint(data)


def test_d19_budget_decisions_replay_from_the_log() -> None:
    kernel = _budget_kernel(SEVEN, [], cel_nesting=7)
    start = copy.deepcopy(kernel.state)
    records = [_set_notes(kernel, notes).record for notes in ([1, 2], list(range(10)), [3, 4, 5], list(range(12)))]
    assert [r.outcome for r in records] == ["accepted", "rejected", "accepted", "rejected"]
    report = replay(kernel.blueprint, start, records, revalidate=True)
    assert report.ok, str(report)
    assert report.state_hash == kernel.state_hash


def test_d19_default_limits_keep_old_blueprint_digests() -> None:
    """The new limits default to None so a blueprint that does not set them hashes as before
    (its digest is bound into every existing log's genesis)."""
    limits = compile_blueprint(_blueprint()).spec.to_json()["limits"]
    assert "cel_budget" not in limits and "cel_nesting" not in limits
    assert compile_blueprint(_blueprint(limits={"cel_budget": 50})).spec.to_json()["limits"]["cel_budget"] == 50


@pytest.mark.parametrize(
    "rule",
    [
        "self.notes.all(a, self.notes.all(b, tick(b)))",
        "self.notes.filter(a, tick(a)).map(b, b * 2).all(c, tick(c))",
        "self.items.all(i, i.tags.all(t, tick(t) && t in root.allowed))",
        "self.byname.all(k, self.byname[k].all(t, tick(t)))",
        "(self.notes + self.notes).all(a, tick(a))",
    ],
)
def test_d19_estimate_bounds_the_real_iteration_count(rule: str) -> None:
    """The estimate is an upper bound of the iterations the evaluator really performs, counted
    by the evaluator itself (``tick`` is called once per innermost iteration)."""
    ticks: list[object] = []

    def tick(value: object) -> bool:
        ticks.append(value)
        return True

    tags = [f"t{i}" for i in range(25)]
    node = {
        "notes": list(range(30)),
        "items": [{"tags": tags}, {"tags": tags[:3]}],
        "byname": {"x": tags, "y": tags[:2]},
    }
    variables = {"self": node, "root": {"allowed": tags}}
    expr = compile_cel(rule)
    result = expr.program.execute(cel.Context(variables=variables, functions={"tick": tick}))
    assert result is True or isinstance(result, bool)
    assert ticks, "the rule must iterate"
    assert expr.estimate(variables) >= len(ticks)


def test_d19_unparsed_syntax_falls_back_to_a_larger_bound() -> None:
    """An expression the estimator cannot parse is bounded by the largest collection raised to
    its nesting depth, never left unbudgeted."""
    model = CostModel("self.notes.all(a, self.notes.all(b, b > a)) @", nesting=2)
    assert model.tree is None and model.loops
    assert model.estimate({"self": {"notes": list(range(30))}}) >= 30 * 30


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
