"""The Python builder: same Blueprint model and digest as YAML, typed paths, build-time errors."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from slateboard.blueprint import Blueprint, BlueprintError, load_blueprint
from slateboard.blueprint.templates import list_templates, load_template
from slateboard.builder import APPEND, EACH, Board, ref

from ._notes_board import State, count_notes, notes_board

HERE = Path(__file__).parent


def test_notes_board_round_trips_through_yaml_with_the_same_digest(tmp_path: Path) -> None:
    compiled = notes_board().build()
    text = compiled.spec.to_yaml()
    path = tmp_path / "notes.yaml"
    path.write_text(text, encoding="utf-8")
    again = load_blueprint(path)
    assert again.digest == compiled.digest
    assert set(again.workers) == {"writer", "decider"}
    assert compiled.spec.workers["writer"].writes == ["/notes/-"]
    assert compiled.spec.invariants[0].at == "/notes/*"
    assert compiled.typed_state({"task": "t", "notes": [{"author": "writer", "text": "x"}]}).notes[0].text == "x"


@pytest.mark.parametrize("name", list_templates())
def test_every_template_round_trips_through_to_yaml(name: str) -> None:
    compiled = load_template(name)
    back = load_blueprint(Blueprint.from_yaml(compiled.spec.to_yaml()))
    assert back.digest == compiled.digest


def test_typed_paths() -> None:
    assert ref(State, lambda s: s.notes[APPEND]) == "/notes/-"
    assert ref(State, lambda s: s.notes[EACH].author) == "/notes/*/author"
    assert ref(State, lambda s: s.notes[2].text) == "/notes/2/text"
    assert ref(State, lambda s: s.notes) == "/notes"


def test_a_missing_field_is_a_build_time_error_naming_it() -> None:
    with pytest.raises(BlueprintError) as err:
        ref(State, lambda s: s.nots, where="workers/writer/writes")  # type: ignore[attr-defined]
    assert "nots" in str(err.value) and "workers/writer/writes" in str(err.value)
    with pytest.raises(BlueprintError, match="not a list"):
        ref(State, lambda s: s.task[EACH])


def test_a_worker_declared_twice_is_an_error() -> None:
    board = notes_board()
    with pytest.raises(BlueprintError, match="'writer' is declared twice"):
        board.llm_worker("writer", instruction="x", reads=["/notes"], writes=["/notes/-"])


def test_function_worker_signature_is_checked_at_declaration() -> None:
    board = Board("b", State)

    def bad(view: Any, limit: int) -> list[Any]:
        return []

    with pytest.raises(BlueprintError) as err:
        board.function(reads=["/notes"], writes=["/notes/-"])(bad)
    assert "workers/bad/function" in str(err.value) and "limit" in str(err.value)
    board.function(reads=["/notes"], writes=["/notes/-"], ops=["add"])(count_notes)
    assert (board.blueprint().workers["count_notes"].function or "").endswith("_notes_board:count_notes")


def test_contract_outside_the_schema_is_reported_by_the_one_report_validation() -> None:
    board = Board("b", State)
    board.llm_worker("w", instruction="x", reads=["/notes"], writes=["/notes/-"])
    board.rule("ghost", on="start")
    board.settings(done="size(state.notes) >")
    with pytest.raises(BlueprintError) as err:
        board.build()
    assert "ghost" in str(err.value) and "done" in str(err.value)


def test_state_must_be_a_pydantic_model() -> None:
    with pytest.raises(BlueprintError, match="pydantic model"):
        Board("b", dict)  # type: ignore[type-var]


def _mypy(source: str, tmp_path: Path) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api")
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(source), encoding="utf-8")
    out, err, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent", str(target)])
    return out + err, status


def test_mypy_strict_passes_on_the_builder_example_and_flags_a_wrong_field(tmp_path: Path) -> None:
    good = (HERE / "_notes_board.py").read_text(encoding="utf-8")
    out, status = _mypy(good, tmp_path)
    assert status == 0, out
    bad = good.replace("lambda s: s.task)", "lambda s: s.tsk)")
    assert bad != good
    out, status = _mypy(bad, tmp_path)
    assert status == 1 and 'has no attribute "tsk"' in out, out


def test_builder_initial_state_and_description() -> None:
    class Small(BaseModel):
        task: str = "go"

    board: Board[Any] = Board("s", Small, initial=Small(task="hi"), description="d")
    board.llm_worker("w", instruction="x", reads=["/task"], writes=["/task"])
    bp = board.blueprint()
    assert bp.initial_state == {"task": "hi"} and bp.description == "d"
