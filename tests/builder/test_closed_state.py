"""Paths and CEL checked against the state's fields (issue 47).

A builder state model is closed unless it says ``extra="allow"``: a write, read or rule path, or
a CEL ``state.x`` / ``self.x`` reference, naming no field is a BlueprintError when the board is
built (below an optional nested model too), while open objects (``extra="allow"``) and maps
(``dict[str, X]``) keep taking any member. The same check applies to a YAML blueprint whose
schema closes its objects. A field pydantic cannot put in a JSON Schema is a BlueprintError
naming the field.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from slateboard import Runner, create_board, open_store
from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.builder import Board


class Verdict(BaseModel):
    verdict: str = ""
    reasons: list[str] = []


class Ticket(BaseModel):
    ticket: list[str] = []
    summary: str = ""
    verdict: Verdict | None = None
    counts: dict[str, int] = {}


def _board(
    *, writes: list[str] | None = None, when: str | None = None, done: str | None = None, path: str = ""
) -> Board[Ticket]:
    board = Board("tickets", Ticket)
    board.llm_worker("writer", instruction="Summarise.", reads=["/ticket"], writes=writes or ["/summary"])
    board.rule("writer", on="start" if not path else "add", path=path, when=when)
    if done is not None:
        board.settings(done=done)
    return board


def _issues(board: Board[Any]) -> dict[str, str]:
    with pytest.raises(BlueprintError) as err:
        board.build()
    return {issue.path: issue.message for issue in err.value.issues}


def test_a_misspelt_write_path_is_a_build_error_with_the_fields() -> None:
    issues = _issues(_board(writes=["/sumary"]))
    message = issues["/workers/writer/writes/0"]
    assert "'sumary'" in message and "did you mean 'summary'?" in message
    assert "members: counts, summary, ticket, verdict" in message


def test_a_misspelt_cel_field_in_a_rule_and_in_done_is_a_build_error() -> None:
    issues = _issues(_board(when="size(state.tiket) > 0", done="has(state.sumary)"))
    assert "state.tiket" in issues["/rules/0/when"] and "did you mean 'ticket'?" in issues["/rules/0/when"]
    assert "state.sumary" in issues["/done"]


def test_a_misspelt_rule_path_is_a_build_error() -> None:
    issues = _issues(_board(path="/tiket/-"))
    assert "'tiket'" in issues["/rules/0/on/path"] and "could never fire" in issues["/rules/0/on/path"]


def test_a_misspelt_member_below_an_optional_model_is_a_build_error() -> None:
    issues = _issues(_board(writes=["/verdict/verdcit"], done="state.verdict.reasonz.size() > 0"))
    assert "Verdict (at /verdict) has no member 'verdcit'" in issues["/workers/writer/writes/0"]
    assert "'reasonz'" in issues["/done"]


def test_maps_and_declared_fields_keep_working() -> None:
    compiled = _board(
        writes=["/summary", "/counts/anything", "/verdict/reasons/-"],
        when="state.counts.bugs > 0 || state.verdict.verdict == 'ok' || state.ticket[0] == 'x'",
        done="has(state.verdict) && state.counts['open'] == 0",
    ).build()
    assert compiled.spec.state_schema["additionalProperties"] is False
    assert compiled.spec.state_schema["properties"]["counts"]["additionalProperties"] == {"type": "integer"}


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    task: str = ""


def test_a_model_that_says_extra_allow_stays_open() -> None:
    board = Board("loose", Loose)
    board.llm_worker("writer", instruction="Anything.", reads=["/task"], writes=["/whatever"])
    board.rule("writer", on="start", when="!has(state.whatever)")
    compiled = board.build()
    assert compiled.spec.state_schema["additionalProperties"] is True


class Meta(BaseModel):
    source: str = ""


class WithMeta(BaseModel):
    task: str = ""
    meta: Meta = Meta()


def add_undeclared(view: Any) -> list[dict[str, Any]]:
    """A function worker whose contract covers /meta/** but whose patch adds an undeclared member."""
    return [{"op": "add", "path": "/meta/sorce", "value": "x"}]


def test_a_patch_adding_an_undeclared_member_is_rejected_at_schema() -> None:
    board = Board("meta", WithMeta)
    board.function(reads=["/task"], writes=["/meta/**"])(add_undeclared)
    board.rule("add_undeclared", on="start")
    compiled = board.build()

    async def go() -> list[str | None]:
        store = await open_store("memory://")
        try:
            board_id = await create_board(store, compiled)
            await Runner(store, board_id, functions={"add_undeclared": add_undeclared}, max_steps=1).run()
            return [r.stage for r in await store.read_records(board_id) if r.kind == "proposal"]
        finally:
            await store.close()

    assert asyncio.run(go()) == ["schema"]


def _yaml_blueprint(schema: dict[str, Any], when: str, invariant: str) -> dict[str, Any]:
    return {
        "name": "plain",
        "schema": schema,
        "initial_state": {"notes": []},
        "workers": {"w": {"reads": ["/notes"], "writes": ["/notes/-"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w", "when": when}],
        "invariants": [{"at": "/notes/*", "rule": invariant}],
    }


NOTE = {"type": "object", "properties": {"author": {"type": "string"}}, "additionalProperties": False}


def test_a_yaml_schema_that_closes_its_objects_checks_cel_fields_too() -> None:
    closed = {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": NOTE}},
        "additionalProperties": False,
    }
    with pytest.raises(BlueprintError) as err:
        compile_blueprint(_yaml_blueprint(closed, "size(state.nots) == 0", "self.autor != ''"))
    issues = {i.path: i.message for i in err.value.issues}
    assert "state.nots" in issues["/rules/0/when"]
    assert "self.autor" in issues["/invariants/0/rule"] and "did you mean 'author'?" in issues["/invariants/0/rule"]
    compile_blueprint(_yaml_blueprint(closed, "size(state.notes) == 0", "self.author != ''"))


def test_a_yaml_schema_that_leaves_objects_open_is_not_second_guessed() -> None:
    open_schema = {"type": "object", "properties": {"notes": {"type": "array"}}}
    compile_blueprint(_yaml_blueprint(open_schema, "size(state.nots) == 0", "self.autor != ''"))


class Handle:
    """Not a JSON type: pydantic cannot put it in a JSON Schema."""


class Inner(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    handle: Handle | None = None


class Unexpressible(BaseModel):
    task: str = ""
    inner: Inner = Inner()


def test_a_field_pydantic_cannot_put_in_a_json_schema_is_a_blueprint_error_naming_it() -> None:
    board = Board("bad", Unexpressible)
    board.llm_worker("w", instruction="x", reads=["/task"], writes=["/task"])
    with pytest.raises(BlueprintError) as err:
        board.build()
    (issue,) = err.value.issues
    assert issue.path == "/schema"
    assert "Unexpressible.inner.handle" in issue.message and "Handle" in issue.message
    with pytest.raises(BlueprintError, match=r"Unexpressible\.inner\.handle"):
        compile_blueprint({"name": "x", "workers": {"w": {"reads": ["/task"]}}}, schema=Unexpressible)
