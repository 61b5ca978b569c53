"""The Python builder (issue 30): a board defined with a pydantic state, typed paths and a
decorated function worker is the same Blueprint as its YAML (same digest after to_yaml), runs
on the Runner, and every mistake is one BlueprintError when the board is built."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from slateboard import BlueprintError, Runner, compile_blueprint, create_board, open_store, replay
from slateboard.blueprint import Blueprint
from slateboard.builder import BoardBuilder
from slateboard.models import ScriptedModel


class Note(BaseModel):
    author: str
    text: str


class Notes(BaseModel):
    task: str = ""
    notes: list[Note] = []
    answer: str | None = None


def notes_board() -> BoardBuilder[Notes]:
    board = BoardBuilder("notes", Notes)
    p = board.p

    @board.function(reads=[p.task], writes=[p.notes.append], ops=["add"])
    def seed(view: Any) -> list[dict[str, Any]]:
        return [{"op": "add", "path": "/notes/-", "value": {"author": "seed", "text": f"About: {view.data['/task']}"}}]

    board.llm_worker("writer", instruction="Add one note.", reads=[p.task, p.notes], writes=[p.notes.append])
    board.llm_worker("decider", instruction="Answer from the notes.", reads=[p.everything], writes=[p.answer])
    board.rule(seed)
    board.rule("writer", on="add", at=p.notes.append, when="size(state.notes) < 2")
    board.rule("decider", on="add", at=p.notes.append, when="size(state.notes) >= 2")
    board.invariant(p.notes.each.text, "size(self) > 0", "a note has text")
    board.done("has(state.answer)")
    board.answer(p.answer)
    return board


def test_the_builder_and_its_yaml_are_one_blueprint() -> None:
    board = notes_board()
    compiled = board.build()
    again = compile_blueprint(Blueprint.from_yaml(board.blueprint().to_yaml()))
    assert again.digest == compiled.digest
    spec = compiled.spec
    assert spec.workers["seed"].writes == ["/notes/-"] and spec.workers["decider"].reads == ["/**"]
    assert spec.rules[1].on.path == "/notes/-" and spec.answer == "/answer"
    assert set(board.functions) == {"seed"}


async def test_a_builder_board_runs_replays_and_types_its_state() -> None:
    board = notes_board()
    compiled = board.build()
    store = await open_store("memory://")
    board_id = await create_board(store, compiled, inputs={"task": "a picnic"})
    replies = [
        json.dumps([{"op": "add", "path": "/notes/-", "value": {"author": "writer", "text": "Bring bread."}}]),
        json.dumps([{"op": "add", "path": "/answer", "value": "Bread."}]),
    ]
    result = await Runner(store, board_id, model=ScriptedModel(replies), functions=board.functions).run()
    assert result.answer == "Bread."
    state = compiled.typed_state(result.state)
    assert isinstance(state, Notes) and [n.author for n in state.notes] == ["seed", "writer"]
    loaded = await store.load_board(board_id)
    stored = compile_blueprint(loaded.blueprint)  # the blueprint as stored: its initial state holds the inputs
    report = replay(stored, loaded.initial_state, await store.read_records(board_id), revalidate=True)
    assert report.ok and report.state == result.state


def test_every_builder_mistake_is_one_blueprint_error_at_build() -> None:
    board = BoardBuilder("bad", Notes)
    p = board.p
    board.llm_worker("writer", instruction="x", reads=[p.notes], writes=[p.notes.append])
    board.llm_worker("writer", instruction="y", reads=[p.notes], writes=[p.notes.append])

    @board.function(reads=[p.task], writes=[p.answer])
    def needs_more(view: Any, extra: int) -> list[Any]:
        return []

    @board.function(reads=[p.task], writes=[p.answer], name="writer")
    def clash(view: Any) -> list[Any]:
        return []

    board.rule("ghost")
    with pytest.raises(BlueprintError) as caught:
        board.build()
    text = str(caught.value)
    assert "worker 'writer' is declared twice" in text
    assert "'needs_more' requires (extra)" in text
    assert "unknown worker 'ghost'" in text
    assert len(caught.value.issues) == 4


def test_compile_issues_come_in_the_same_report() -> None:
    board = BoardBuilder("cel", Notes)
    board.llm_worker("w", instruction="x", reads=[board.p.notes], writes=[board.p.notes.append])
    board.rule("w")
    board.invariant(board.p.notes, "size(self) >", "broken CEL")
    with pytest.raises(BlueprintError) as caught:
        board.build()
    assert any(i.path.startswith("/invariants/0") for i in caught.value.issues)


def test_a_state_without_defaults_needs_an_initial_value() -> None:
    class Strict(BaseModel):
        task: str

    board = BoardBuilder("strict", Strict)
    board.llm_worker("w", instruction="x", reads=[board.p.task], writes=[board.p.task])
    with pytest.raises(BlueprintError, match="initial="):
        board.build()
    ok = BoardBuilder("strict", Strict, initial=Strict(task="t"))
    ok.llm_worker("w", instruction="x", reads=[ok.p.task], writes=[ok.p.task])
    assert ok.build().initial_state() == {"task": "t"}
