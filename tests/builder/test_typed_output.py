"""Typed LLM workers (issue 30): ``board.llm_worker(..., output=..., output_type=T)``.

The worker's ``output`` compiles to ``WorkerSpec.output`` (the same blueprint model as YAML): the
state model's field there is the schema the kernel checks, the model is sent that schema, an
invalid reply is rejected at stage ``schema`` and retried with the reason, and the answer reads
back as an instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from slateboard import Runner, compile_blueprint, create_board, open_store, replay
from slateboard.blueprint import Blueprint, BlueprintError, load_blueprint
from slateboard.builder import APPEND, Board, ref
from slateboard.models import ScriptedModel
from slateboard.workers import LLMWorker
from slateboard.workers.parse import parse_value


class Verdict(BaseModel):
    verdict: Literal["approve", "reject"]
    reasons: list[str]
    confidence: float = Field(ge=0, le=1)


class Review(BaseModel):
    task: str = ""
    verdict: Verdict | None = None
    history: list[Verdict] = []
    note: str | None = None


GOOD = {"verdict": "reject", "reasons": ["no tests"], "confidence": 0.9}
BAD = {"verdict": "maybe", "reasons": "none"}


def review_board() -> Board[Review]:
    board = Board("review", Review)
    board.llm_worker(
        "judge",
        instruction="Judge the change described in the task.",
        reads=[ref(Review, lambda s: s.task)],
        output=ref(Review, lambda s: s.verdict),
        output_type=Verdict,
        ops=["add"],
    )
    board.rule("judge", on="start")
    board.settings(done="has(state.verdict)", answer="/verdict", limits={"max_steps": 6})
    return board


def test_output_compiles_to_the_blueprint_model_and_round_trips_through_yaml() -> None:
    compiled = review_board().build()
    spec = compiled.spec.workers["judge"]
    assert spec.output == "/verdict" and spec.writes == ["/verdict"]
    text = compiled.spec.to_yaml()
    assert "output: /verdict" in text
    assert load_blueprint(Blueprint.from_yaml(text)).digest == compiled.digest


def test_the_worker_sends_the_state_schema_at_its_output() -> None:
    compiled = review_board().build()
    worker = LLMWorker(compiled, "judge", ScriptedModel(["{}"]))
    schema = worker.output_schema
    assert schema is not None
    # Self-contained: the $ref into the state model's $defs is hoisted with it; the optional
    # field's null branch is not offered (the reply is a Verdict).
    assert schema["type"] == "object" and schema["properties"]["verdict"]["enum"] == ["approve", "reject"]
    assert "anyOf" not in schema and "null" not in json.dumps(schema)


async def test_an_invalid_reply_is_rejected_at_schema_then_the_retry_wins(tmp_path: Path) -> None:
    model = ScriptedModel([json.dumps(BAD), f"Here it is:\n```json\n{json.dumps(GOOD)}\n```"])
    compiled = review_board().build()
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board_id = await create_board(store, compiled, inputs={"task": "Merge the change without tests?"})
        result = await Runner(store, board_id, model=model).run()
        records = await store.read_records(board_id)
        loaded = await store.load_board(board_id)
        assert replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True).ok
    finally:
        await store.close()
    assert result.answer == GOOD
    answer = compiled.typed_answer(result.state)
    assert isinstance(answer, Verdict) and answer.confidence == 0.9
    proposals = [r for r in records if r.kind == "proposal"]
    assert [(r.outcome, r.stage) for r in proposals] == [("rejected", "schema"), ("accepted", None)]
    # Constrained decoding: both calls carry the value schema; the retry is told why.
    sent = [c.json_schema for c in model.calls]
    assert sent[0] is not None and sent[0]["required"] == ["verdict", "reasons", "confidence"]
    assert sent[1] == sent[0]
    retry = model.calls[1].messages[-1].content
    assert "rejected" in retry and '/verdict/verdict: "maybe" is not one of' in retry
    system = model.calls[0].messages[0].content
    assert "written to /verdict" in system and '"approve"' in system and '"patch"' not in system


async def test_an_append_output_adds_one_item_per_reply(tmp_path: Path) -> None:
    board = Board("history", Review)
    board.llm_worker(
        "judge",
        instruction="Judge.",
        reads=["/task"],
        output=ref(Review, lambda s: s.history[APPEND]),
        output_type=Verdict,
        ops=["add"],
        max_invocations=2,
    )
    board.rule("judge", on="start")
    board.rule("judge", on="add", path="/history/-", when="size(state.history) < 2")
    compiled = board.build()
    store = await open_store("memory://")
    try:
        board_id = await create_board(store, compiled)
        model = ScriptedModel([json.dumps(GOOD), json.dumps({**GOOD, "verdict": "approve"})])
        result = await Runner(store, board_id, model=model).run()
    finally:
        await store.close()
    assert [v.verdict for v in compiled.typed_state(result.state).history] == ["reject", "approve"]


@pytest.mark.parametrize(
    ("declare", "match"),
    [
        (
            {"output": "/note", "output_type": Verdict},
            r"workers/judge/output_type: the state field at /note is str \| None, not 'Verdict'",
        ),
        ({"output_type": Verdict}, r"workers/judge/output_type: output_type needs output="),
        ({"output": "/missing", "output_type": Verdict}, r"Review has no field 'missing'"),
        ({"output": "/verdict", "output_type": "Verdict"}, r"output_type must be a type"),
    ],
)
def test_bad_typed_outputs_fail_when_the_board_is_declared(declare: dict[str, Any], match: str) -> None:
    board = Board("review", Review)
    with pytest.raises(BlueprintError, match=match):
        board.llm_worker("judge", instruction="x", reads=["/task"], **declare)


def test_an_output_type_without_a_json_schema_names_the_worker() -> None:
    from collections.abc import Callable

    class Holder(BaseModel):
        fn: Callable[[int], int] | None = None

    board = Board("opaque", Holder)
    with pytest.raises(BlueprintError, match=r"workers/f/output_type: output_type .* cannot be expressed"):
        board.llm_worker("f", instruction="x", reads=["/fn"], output="/fn", output_type=Callable[[int], int])


@pytest.mark.parametrize(
    ("worker", "match"),
    [
        ({"writes": ["/note"], "output": "/verdict"}, "is not covered by the worker's write patterns"),
        ({"writes": ["/verdict"], "output": "/verdict", "ops": ["replace"]}, "ops do not grant"),
        ({"writes": ["/history/*"], "output": "/history/*"}, "must be a concrete pointer"),
        ({"function": "json:loads", "writes": ["/verdict"], "output": "/verdict"}, "function worker"),
    ],
)
def test_yaml_output_is_checked_when_the_blueprint_compiles(worker: dict[str, Any], match: str) -> None:
    spec = {
        "schema": Review.model_json_schema(),
        "initial_state": {"task": "", "history": []},
        "workers": {"judge": {"reads": ["/task"], **worker}},
    }
    with pytest.raises(BlueprintError, match=match) as err:
        compile_blueprint(spec)
    assert "/workers/judge/output" in str(err.value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(value=_json, fenced=st.booleans())
def test_a_typed_reply_reads_back_as_the_value_it_holds(value: Any, fenced: bool) -> None:
    """``parse_value``: a reply that is one JSON value gives that value; an object inside a fence
    or prose gives the object; anything else stays text, for the kernel to reject."""
    text = json.dumps(value)
    if fenced and isinstance(value, dict):
        assert parse_value(f"Here:\n```json\n{text}\n```\nDone.") == value
    else:
        assert parse_value(f"  {text}\n") == value
    assert parse_value('{"a": 1, "a": 2}') == '{"a": 1, "a": 2}'  # a repeated key has no one meaning


def test_answer_as_gives_the_answer_its_type_or_names_why_not() -> None:
    """``RunResult.answer_as(T)``: the JSON answer validated as ``T``; no answer, or one that does
    not fit, is a ValueError naming the board and the type."""
    from slateboard.runtime import RunResult

    def result(answer: Any) -> RunResult:
        return RunResult("b1", {}, answer, "done", 1, 1, 1, 0, 1)

    verdict = result(GOOD).answer_as(Verdict)
    assert isinstance(verdict, Verdict) and verdict.confidence == 0.9
    with pytest.raises(ValueError, match="board b1 has no answer"):
        result(None).answer_as(Verdict)
    with pytest.raises(ValueError, match="is not a Verdict"):
        result({"verdict": "maybe"}).answer_as(Verdict)
