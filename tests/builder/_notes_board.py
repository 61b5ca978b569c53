"""The README's ``notes`` board written with the Python builder (also the mypy --strict subject)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from slateboard.builder import ALL, APPEND, EACH, Board, ref


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")
    author: Literal["writer"]
    text: str = Field(min_length=1, max_length=200)


class State(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = ""
    notes: list[Note] = []
    answer: str | None = None


def count_notes(view: Any) -> list[dict[str, Any]]:
    """A function worker: appends a note saying how many there are."""
    return [{"op": "add", "path": "/notes/-", "value": {"author": "writer", "text": f"{len(view['notes'])} notes"}}]


def notes_board() -> Board[State]:
    board = Board("notes", State, initial=State())
    board.llm_worker(
        "writer",
        instruction="Add one note about the task.",
        reads=[ref(State, lambda s: s.task), ref(State, lambda s: s.notes)],
        writes=[ref(State, lambda s: s.notes[APPEND])],
        ops=["add"],
    )
    board.llm_worker(
        "decider",
        instruction="Answer from the notes.",
        reads=["/**"],
        writes=[ref(State, lambda s: s.answer)],
        ops=["add"],
    )
    board.rule("writer", on="start")
    board.rule("writer", on="add", path="/notes/-", when="size(state.notes) < 3")
    board.rule("decider", on="add", path="/notes/-", when="size(state.notes) >= 3")
    board.invariant(
        "self.author == 'writer'", at=ref(State, lambda s: s.notes[EACH]), message="only the writer writes notes"
    )
    board.settings(done="has(state.answer)", answer="/answer")
    return board


EVERYTHING = ref(State, lambda s: s.notes[ALL])
