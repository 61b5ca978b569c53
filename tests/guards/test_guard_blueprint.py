"""Guards in a blueprint: what compiling accepts and refuses (each issue named by its path), what
building refuses (a function that cannot be imported), and that a blueprint without guards keeps
the digest it had before guards existed."""

from __future__ import annotations

from typing import Any

import pytest
from guards_testkit import board

from slateboard.blueprint import compile_blueprint
from slateboard.blueprint.compile import BlueprintError
from slateboard.guards import build_guards
from slateboard.kernel.canonical import hash_json

JUDGE = {"name": "judge", "model": 'scripted:["{}"]', "instruction": "Check it."}


def _issues(guards: list[dict[str, Any]]) -> dict[str, str]:
    with pytest.raises(BlueprintError) as err:
        compile_blueprint(board(guards))
    return {i.path: i.message for i in err.value.issues}


def test_a_blueprint_without_guards_keeps_its_digest() -> None:
    bp = board([])
    del bp["guards"]
    compiled = compile_blueprint(bp)
    assert "guards" not in compiled.spec.to_json()  # the JSON (and digest) it had before guards existed
    assert compiled.digest == hash_json(compiled.spec.to_json())
    assert compiled.guard_terms == () and compile_blueprint(board([])).digest == compiled.digest


def test_guard_terms_are_what_the_kernel_reads() -> None:
    compiled = compile_blueprint(
        board([{"name": "a", "function": "m:f", "workers": ["w"], "shares_reason": True}, JUDGE])
    )
    (a, j) = compiled.guard_terms
    assert (a.name, a.workers, a.shares_reason) == ("a", frozenset({"w"}), True)
    assert (j.name, j.workers, j.shares_reason) == ("judge", frozenset(), False)


@pytest.mark.parametrize(
    ("guards", "path", "words"),
    [
        ([{"name": "x"}], "/guards/0", "exactly one"),
        ([{"name": "x", "function": "m:f", "model": "local"}], "/guards/0", "exactly one"),
        ([{"name": "x", "function": "m:f"}, {"name": "x", "function": "m:g"}], "/guards/1/name", "duplicate"),
        ([{"name": "x", "function": "no_colon"}], "/guards/0/function", "package.module:function"),
        ([{**JUDGE, "instruction": " "}], "/guards/0/instruction", "needs an instruction"),
        ([{**JUDGE, "verdict": {"reason": "str"}}], "/guards/0/verdict", "'ok: bool'"),
        ([{**JUDGE, "verdict": {"ok": "str"}}], "/guards/0/verdict", "'ok: bool'"),
        ([{**JUDGE, "verdict": {"ok": "bool", "reason": "int"}}], "/guards/0/verdict/reason", "string"),
        ([{**JUDGE, "model": "gpt4o"}], "/guards/0/model", "gpt4o"),
        ([{"name": "x", "function": "m:f", "workers": ["ghost"]}], "/guards/0/workers/0", "unknown worker 'ghost'"),
        ([{**JUDGE, "context": ["/notes/*"]}], "/guards/0/context/0", "concrete"),
        ([{**JUDGE, "context": ["notes"]}], "/guards/0/context/0", "notes"),
    ],
)
def test_a_bad_guard_is_a_blueprint_issue_at_its_path(guards: list[dict[str, Any]], path: str, words: str) -> None:
    issues = _issues(guards)
    assert path in issues, issues
    assert words in issues[path]


@pytest.mark.parametrize(
    "guard",
    [
        {"name": "bad name!", "function": "m:f"},
        {"name": "x", "function": "m:f", "timeout": 0},
        {"name": "x", "model": "local", "instruction": "i", "verdict": {"ok": "boolean"}},
    ],
)
def test_a_malformed_guard_is_refused_by_the_model(guard: dict[str, Any]) -> None:
    with pytest.raises(BlueprintError) as err:
        compile_blueprint(board([guard]))
    assert any(i.path.startswith("/guards/0") for i in err.value.issues), err.value.issues


@pytest.mark.parametrize(
    ("function", "words"),
    [
        ("no_such_module_anywhere:f", "cannot import function"),
        ("guards_testkit:missing", "has no attribute"),
        ("guards_testkit:STRICT", "not a callable"),
    ],
)
def test_a_guard_function_that_cannot_be_imported_fails_the_build(function: str, words: str) -> None:
    compiled = compile_blueprint(
        board([{"name": "ok", "function": "guards_testkit:no_bad"}, {"name": "x", "function": function}])
    )
    with pytest.raises(BlueprintError) as err:
        build_guards(compiled)
    (issue,) = err.value.issues
    assert issue.path == "/guards/1/function" and "guard 'x'" in issue.message and words in issue.message


def test_functions_given_by_reference_or_name_are_not_imported() -> None:
    compiled = compile_blueprint(
        board([{"name": "x", "function": "nowhere:f"}, {"name": "y", "function": "nowhere:g"}])
    )

    def f(before: Any, after: Any, patch: Any) -> bool:
        return True

    built = build_guards(compiled, functions={"nowhere:f": f, "y": f})
    assert built is not None and [g.fn for g in built.guards] == [f, f]  # type: ignore[union-attr]
    assert build_guards(compile_blueprint(board([]))) is None
