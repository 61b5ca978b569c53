"""Sub-board workers when a blueprint is accepted (issue 43): children made inline from files and
templates (the stored blueprint needs no file), a blueprint that names itself (directly or through
others, in YAML and in the builder) is a BlueprintError naming the chain, and so are a child answer
whose type does not fit the parent's path, inputs that name no child member or read outside the
worker's contract, and a fan-out bound over the most there may be."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from subboards_kit import child_blueprint, parent_blueprint

from slateboard.blueprint import compile_blueprint, load_blueprint
from slateboard.blueprint.compile import BlueprintError
from slateboard.blueprint.models import MAX_FAN_OUT
from slateboard.builder import Board


def _issues(data: Any) -> list[str]:
    with pytest.raises(BlueprintError) as err:
        load_blueprint(data)
    return [str(i) for i in err.value.issues]


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_child_named_by_file_is_made_inline_relative_to_the_parent(tmp_path: Path) -> None:
    (tmp_path / "kids").mkdir()
    _write(tmp_path / "kids" / "child.yaml", child_blueprint())
    parent = parent_blueprint(["a"])
    parent["workers"]["each_doc"]["board"]["blueprint"] = "kids/child.yaml"
    compiled = load_blueprint(_write(tmp_path / "parent.yaml", parent))
    inline = compiled.spec.workers["each_doc"].board
    assert inline is not None and inline.blueprint == child_blueprint()
    # the same blueprint written inline is the same blueprint: same digest
    assert compiled.digest == compile_blueprint(parent_blueprint(["a"])).digest


def test_a_template_child_is_made_inline() -> None:
    parent = parent_blueprint(["a"], each=False)
    parent["workers"]["each_doc"]["board"]["blueprint"] = "template:no_such_template"
    assert any("no built-in template 'no_such_template'" in i for i in _issues(parent))


@pytest.mark.parametrize("length", [1, 2, 3])
def test_a_file_chain_that_comes_back_is_named(tmp_path: Path, length: int) -> None:
    names = [f"b{i}.yaml" for i in range(length)]
    for i, name in enumerate(names):
        data = parent_blueprint(["a"], each=False)
        data["workers"]["each_doc"]["board"]["blueprint"] = names[(i + 1) % length]
        _write(tmp_path / name, data)
    issues = _issues(tmp_path / names[0])
    assert len(issues) == 1 and "sub-board cycle: the blueprint names itself" in issues[0]
    assert issues[0].startswith("/workers/each_doc/board/blueprint")
    assert issues[0].count(" -> ") == length  # the whole chain, back to the first


def test_an_inline_blueprint_inside_itself_is_a_cycle() -> None:
    data = parent_blueprint(["a"], each=False)
    data["workers"]["each_doc"]["board"]["blueprint"] = data
    assert any("sub-board cycle" in i for i in _issues(data))


def test_a_deep_chain_of_children_is_refused() -> None:
    data: dict[str, Any] = child_blueprint()
    for _ in range(10):
        data = parent_blueprint(["a"], each=False, child=data)
    assert any("nest deeper than 8 levels" in i for i in _issues(data))


def test_a_child_answer_that_does_not_fit_the_parents_path_is_named() -> None:
    data = parent_blueprint(["a"])
    data["schema"]["properties"]["summaries"]["items"] = {"type": "integer"}
    (issue,) = _issues(data)
    assert issue.startswith("/workers/each_doc/output:") and "may be string" in issue and "takes integer" in issue
    # a single child whose answer is a string, at a path holding an array
    single = parent_blueprint(["a"], each=False)
    single["schema"]["properties"]["summary"] = {"type": "array"}
    assert any("does not fit '/summary'" in i for i in _issues(single))
    # with 'each' the output holds the list: its items must take the answer
    objects = parent_blueprint(["a"])
    objects["schema"]["properties"]["summaries"] = {"type": "object"}
    assert any("/workers/each_doc/output" in i for i in _issues(objects))


def test_inputs_and_sources_are_checked_against_the_child_and_the_reads() -> None:
    data = parent_blueprint(["a"])
    board = data["workers"]["each_doc"]["board"]
    board["inputs"] = {"documnet": "item", "summary": "state.secret", "document": "/elsewhere"}
    data["schema"]["properties"]["secret"] = {"type": "string"}
    data["schema"]["properties"]["elsewhere"] = {"type": "string"}
    issues = _issues(data)
    assert any("inputs/documnet: the child's state has no member 'documnet'" in i for i in issues)
    assert any("inputs/summary: CEL reads /secret" in i for i in issues)
    assert any("inputs/document: '/elsewhere' is not covered" in i for i in issues)


def test_a_sub_board_worker_needs_an_output_and_no_model() -> None:
    data = parent_blueprint(["a"])
    del data["workers"]["each_doc"]["output"]
    data["workers"]["each_doc"]["model"] = "local"
    issues = _issues(data)
    assert any("needs 'output'" in i for i in issues) and any("no model or function" in i for i in issues)


def test_a_child_blueprint_without_an_answer_or_broken_is_named_inside_the_parent() -> None:
    child = child_blueprint()
    del child["answer"]
    assert any("child blueprint has no 'answer'" in i for i in _issues(parent_blueprint(["a"], child=child)))
    broken = child_blueprint()
    broken["rules"][0]["invoke"] = "nobody"
    issues = _issues(parent_blueprint(["a"], child=broken))
    assert any(i.startswith("/workers/each_doc/board/blueprint/rules/0/invoke") for i in issues)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=MAX_FAN_OUT + 1, max_value=10**9))
def test_a_fan_out_bound_over_the_most_is_refused(bound: int) -> None:
    data = parent_blueprint(["a"], max_items=bound)
    assert any("/workers/each_doc/board/max_items" in i for i in _issues(copy.deepcopy(data)))


# -- the builder ------------------------------------------------------------------------------------
class Doc(BaseModel):
    document: str = ""
    summary: str | None = None


class Digest(BaseModel):
    documents: list[str] = []
    summaries: list[str] | None = None


def summarise_doc(view: Any) -> list[dict[str, Any]]:
    """The child board's function worker."""
    return [{"op": "add", "path": "/summary", "value": str(view.data["/document"]).upper()}]


def _child() -> Board[Doc]:
    child = Board("summarise", Doc)
    child.function(reads=["/document"], writes=["/summary"])(summarise_doc)
    child.rule("summarise_doc", on="start")
    child.settings(answer="/summary", done="has(state.summary)")
    return child


def test_the_builder_declares_a_fan_out_that_compiles_with_the_child_inline() -> None:
    child = _child()
    parent = Board("digest", Digest)
    parent.sub_board(
        "each_doc", child, reads=["/documents"], output="/summaries", each="/documents", inputs={"document": "item"}
    )
    parent.settings(answer="/summaries")
    compiled = parent.build()
    spec = compiled.spec.workers["each_doc"].board
    assert spec is not None and isinstance(spec.blueprint, dict) and spec.blueprint["name"] == "summarise"
    # the same blueprint through YAML has the same digest
    assert compile_blueprint(yaml.safe_load(compiled.spec.to_yaml())).digest == compiled.digest


def test_a_builder_board_that_names_itself_is_a_blueprint_error() -> None:
    loop = Board("loop", Doc)
    loop.sub_board("again", loop, reads=["/document"], output="/summary", inputs={"document": "/document"})
    with pytest.raises(BlueprintError, match=r"sub-board cycle: the board names itself \(loop -> loop\)"):
        loop.build()
    a, b = Board("a", Doc), Board("b", Doc)
    a.sub_board("to_b", b, reads=["/document"], output="/summary")
    b.sub_board("to_a", a, reads=["/document"], output="/summary")
    with pytest.raises(BlueprintError, match=r"a -> b -> a"):
        a.build()
