"""Typed contract paths (issue 30) and the YAML round trip of the one Blueprint model: a path
spelled with the state model's fields is the pointer pattern the YAML would hold, a mistyped one
is a BlueprintError naming the model and the field when the board is built, and every blueprint
written back as YAML compiles to the same digest."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from slateboard import BlueprintError, compile_blueprint
from slateboard.blueprint import Blueprint, path
from slateboard.blueprint.templates import list_templates, template_text


class Note(BaseModel):
    author: Literal["writer"]
    text: Annotated[str, Field(min_length=1, max_length=200)]


class Claim(BaseModel):
    status: Literal["open", "checked"] = "open"
    title: str = ""


class State(BaseModel):
    task: str = ""
    notes: list[Note] = []
    claims: list[Claim] = []
    tags: dict[str, str] = {}
    answer: str | None = None
    kind: str = Field("", alias="type")


P = path(State)


def test_typed_paths_are_the_pointer_patterns() -> None:
    assert P.notes.append == "/notes/-"
    assert P.claims.each.status == "/claims/*/status"
    assert P.claims.each.field("title") == "/claims/*/title"
    assert P.tags.key("a/b") == "/tags/a~1b"
    assert P.tags.each == "/tags/*"
    assert P.everything == "/**" and P.notes.everything == "/notes/**"
    assert P.kind == "/type" and P.type == "/type"  # the JSON name, by Python or JSON name
    assert P.answer == "/answer"  # Optional[str] is a leaf


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: P.note, ["State has no field 'note'", "notes"]),
        (lambda: P.claims.each.stauts, ["Claim has no field 'stauts'", "status"]),
        (lambda: P.task.append, ["str is not a list"]),
        (lambda: P.answer.each, ["neither a list nor a mapping"]),
        (lambda: P.notes.key("x"), ["is not a mapping"]),
        (lambda: P.task.length, ["has no field 'length'"]),
    ],
)
def test_a_mistyped_path_is_a_blueprint_error_naming_the_field(build: object, words: list[str]) -> None:
    with pytest.raises(BlueprintError) as caught:
        build()  # type: ignore[operator]
    message = str(caught.value)
    assert all(w in message for w in words), message
    assert caught.value.issues and caught.value.issues[0].path.startswith("/")


def test_path_takes_only_a_model_class() -> None:
    with pytest.raises(BlueprintError, match="pydantic model class"):
        path(dict)  # type: ignore[arg-type]


NOTES_YAML = """
name: notes
schema:
  type: object
  required: [task, notes]
  additionalProperties: false
  properties:
    task: {type: string}
    notes:
      type: array
      items:
        type: object
        required: [author, text]
        additionalProperties: false
        properties:
          author: {enum: [writer]}
          text: {type: string, minLength: 1, maxLength: 200}
    answer: {type: string}
initial_state: {task: "", notes: []}
workers:
  writer: {instruction: "Add one note about the task.", reads: [/task, /notes], writes: [/notes/-], ops: [add]}
  decider: {instruction: "Answer from the notes.", reads: ["/**"], writes: [/answer], ops: [add]}
rules:
  - {"on": {op: start}, invoke: writer}
  - {"on": {op: add, path: /notes/-}, when: "size(state.notes) < 3", invoke: writer}
  - {"on": {op: add, path: /notes/-}, when: "size(state.notes) >= 3", invoke: decider}
invariants:
  - {at: "/notes/*", rule: "self.author == 'writer'", message: "only the writer writes notes"}
done: has(state.answer)
answer: /answer
"""


def test_the_readme_notes_blueprint_from_typed_paths_has_the_yaml_digest() -> None:
    """The README's notes blueprint written with typed paths in Python (the schema still the
    README's, so only the spelling of the paths differs) compiles to the YAML's digest."""
    from_yaml = compile_blueprint(Blueprint.from_yaml(NOTES_YAML))
    schema = from_yaml.spec.state_schema

    class Notes(BaseModel):
        task: str
        notes: list[Note]
        answer: str | None = None

    n = path(Notes)
    typed = Blueprint.model_validate(
        {
            "name": "notes",
            "schema": schema,
            "initial_state": {"task": "", "notes": []},
            "workers": {
                "writer": {
                    "instruction": "Add one note about the task.",
                    "reads": [n.task, n.notes],
                    "writes": [n.notes.append],
                    "ops": ["add"],
                },
                "decider": {
                    "instruction": "Answer from the notes.",
                    "reads": [n.everything],
                    "writes": [n.answer],
                    "ops": ["add"],
                },
            },
            "rules": [
                {"on": {"op": "start"}, "invoke": "writer"},
                {"on": {"op": "add", "path": n.notes.append}, "when": "size(state.notes) < 3", "invoke": "writer"},
                {"on": {"op": "add", "path": n.notes.append}, "when": "size(state.notes) >= 3", "invoke": "decider"},
            ],
            "invariants": [
                {"at": n.notes.each, "rule": "self.author == 'writer'", "message": "only the writer writes notes"}
            ],
            "done": "has(state.answer)",
            "answer": n.answer,
        }
    )
    assert compile_blueprint(typed).digest == from_yaml.digest
    assert compile_blueprint(Blueprint.from_yaml(typed.to_yaml())).digest == from_yaml.digest


@pytest.mark.parametrize("name", list_templates())
def test_every_template_round_trips_through_to_yaml_with_its_digest(name: str) -> None:
    original = compile_blueprint(Blueprint.from_yaml(template_text(name)))
    again = compile_blueprint(Blueprint.from_yaml(original.spec.to_yaml()))
    assert again.digest == original.digest
    assert original.spec.to_yaml() == again.spec.to_yaml()
