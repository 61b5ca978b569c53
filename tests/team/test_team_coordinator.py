"""The coordinator control unit: a model chooses among eligible invocations, with a logged reason;
tolerant parsing; agenda-order fallback; the state digest; and a Runner driven by it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slateboard.models import ModelServerError, ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.scheduling import BoardSummary, ControlUnit, Invocation
from slateboard.scheduling.coordinator import CoordinatorControl, digest_state, parse_json_object
from slateboard.stores import open_store

SUMMARY = BoardSummary(version=4, state_hash="h", steps=3, tokens_used=120, active_stages=("research",))


def inv(n: int, worker: str) -> Invocation:
    return Invocation(f"v{n}.0", worker, 0, n, event={"op": "add", "path": f"/items/{n}"}, rule=f"r{n}")


ELIGIBLE = [inv(1, "reader"), inv(2, "writer"), inv(3, "critic")]


def answer(choice: Any, terminate: bool = False, reason: str = "because") -> str:
    return json.dumps({"choice": choice, "terminate": terminate, "reason": reason})


def test_parse_json_object_is_tolerant() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": 2}\n```') == {"a": 2}
    assert parse_json_object('```\n{"a": 3}') == {"a": 3}  # unterminated fence
    assert parse_json_object('I pick {"a": 4} because.') == {"a": 4}
    assert parse_json_object('{"x": 1} and then {"choice": 2}', keys=("choice",)) == {"choice": 2}
    assert parse_json_object('{"x": 1} and {broken', keys=("choice",)) == {"x": 1}
    assert parse_json_object("no object here") is None
    assert parse_json_object("[1, 2]") is None
    assert parse_json_object("") is None


async def test_chooses_by_id_worker_or_number_with_the_reason() -> None:
    model = ScriptedModel([answer("v2.0", reason="draft first"), answer("critic"), answer(1), answer("3")])
    unit = CoordinatorControl(model)
    assert isinstance(unit, ControlUnit)
    picks = [await unit.select(ELIGIBLE, SUMMARY) for _ in range(4)]
    assert [p.invocation.id for p in picks if p.invocation] == ["v2.0", "v3.0", "v1.0", "v3.0"]
    assert picks[0].reason == "coordinator: v2.0 (writer): draft first"
    assert all(p.reason.startswith("coordinator:") for p in picks)
    assert not any(d.fallback for d in unit.decisions)
    assert unit.calls == 4 and unit.usage.component == "coordinator" and unit.usage.tokens_in > 0
    # The prompt lists the eligible invocations in agenda order and the board summary.
    prompt = model.calls[0].messages[-1].content
    assert prompt.index("id=v1.0 worker=reader") < prompt.index("id=v2.0 worker=writer")
    assert "cause=add /items/2" in prompt and "rule=r2" in prompt
    assert "version 4, 3 steps so far, 120 tokens used, active stages: research" in prompt
    schema = model.calls[0].json_schema
    assert schema is not None and schema["properties"]["choice"]["anyOf"][0]["enum"] == ["v1.0", "v2.0", "v3.0"]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("I would run the writer.", "not a JSON object"),
        (answer("v9.9"), "is not eligible"),
        (answer(None), "is not eligible"),
        (answer(7), "is not eligible"),
    ],
)
async def test_malformed_answers_fall_back_to_agenda_order(reply: str, why: str) -> None:
    unit = CoordinatorControl(ScriptedModel([reply]))
    sel = await unit.select(ELIGIBLE, SUMMARY)
    assert sel.invocation is ELIGIBLE[0] and not sel.terminate
    assert why in sel.reason and sel.reason.endswith("agenda order: v1.0 (reader)")
    assert unit.decisions[-1].fallback and unit.decisions[-1].raw == reply


async def test_fenced_and_prose_answers_are_read() -> None:
    model = ScriptedModel(["```json\n" + answer("writer") + "\n```", "Sure! " + answer("v3.0") + " Done."])
    unit = CoordinatorControl(model)
    assert (await unit.select(ELIGIBLE, SUMMARY)).invocation is ELIGIBLE[1]
    assert (await unit.select(ELIGIBLE, SUMMARY)).invocation is ELIGIBLE[2]


async def test_model_failure_falls_back() -> None:
    def boom(messages: Any) -> str:
        raise ModelServerError("scripted", "overloaded")

    unit = CoordinatorControl(ScriptedModel([boom]))
    sel = await unit.select(ELIGIBLE, SUMMARY)
    assert sel.invocation is ELIGIBLE[0] and "model failed" in sel.reason and "overloaded" in sel.reason
    assert unit.calls == 0


async def test_terminate_and_when_it_is_not_allowed() -> None:
    stop = await CoordinatorControl(ScriptedModel([answer(None, True, "task complete")])).select(ELIGIBLE, SUMMARY)
    assert stop.terminate and stop.reason == "coordinator: terminate: task complete"
    unit = CoordinatorControl(ScriptedModel([answer(None, True)]), allow_terminate=False)
    sel = await unit.select(ELIGIBLE, SUMMARY)
    assert sel.invocation is ELIGIBLE[0] and "terminate is not allowed" in sel.reason
    assert (await unit.select([], SUMMARY)).terminate


async def test_a_single_eligible_invocation_needs_no_model_call() -> None:
    model = ScriptedModel([answer("v1.0")])
    unit = CoordinatorControl(model)
    sel = await unit.select(ELIGIBLE[:1], SUMMARY)
    assert sel.invocation is ELIGIBLE[0] and model.calls == []
    asking = CoordinatorControl(model, ask_when_single=True)
    await asking.select(ELIGIBLE[:1], SUMMARY)
    assert len(model.calls) == 1


def test_digest_is_recency_ordered_and_bounded() -> None:
    state = {
        "task": "find the cause",
        "items": [{"id": f"i{n}", "text": f"item {n}"} for n in range(6)],
        "meta": {"phase": "research", "notes": ["old", "new"]},
    }
    text = digest_state(state, recent=["/meta/phase"])
    lines = text.splitlines()
    assert lines[0] == 'recent /meta/phase = "research"'
    i = lines.index("/items: 6 items (newest first)")
    assert lines[i + 1].startswith("  [5]") and lines[i + 3].startswith("  [3]") and lines[i + 4] == "  … 3 older"
    assert '/task = "find the cause"' in lines
    assert '  [1] "new"' in lines
    short = digest_state(state, limit=40)
    assert len(short) == 40 and short.endswith("…")
    assert digest_state(state) == digest_state(json.loads(json.dumps(state)))  # deterministic


async def test_digest_comes_from_the_summary_or_the_state() -> None:
    model = ScriptedModel([answer("v1.0")], cycle=True)
    unit = CoordinatorControl(model, state=lambda: {"claims": [{"id": "c1"}, {"id": "c2"}]})
    await unit.select(ELIGIBLE, SUMMARY)
    assert '[1] {"id":"c2"}' in model.calls[-1].messages[-1].content
    with_digest = BoardSummary(version=1, digest="DIGEST FROM THE RUNNER")
    await unit.select(ELIGIBLE, with_digest)
    assert "DIGEST FROM THE RUNNER" in model.calls[-1].messages[-1].content
    bare = CoordinatorControl(model)
    await bare.select(ELIGIBLE, SUMMARY)
    assert "Board digest" not in model.calls[-1].messages[-1].content


BOARD: dict[str, Any] = {
    "name": "two-writers",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}, "answer": {"type": "string"}},
    },
    "initial_state": {"notes": []},
    "workers": {
        "a": {"writes": ["/notes/-"]},
        "b": {"writes": ["/notes/-"]},
        "decider": {"reads": ["/**"], "writes": ["/answer"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "a"},
        {"on": {"op": "start"}, "invoke": "b"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) == 2", "invoke": "decider"},
    ],
    "done": "has(state.answer)",
    "answer": "/answer",
}


async def test_runner_driven_by_the_coordinator_logs_its_reasons() -> None:
    store = await open_store("memory://")
    try:
        board = await create_board(store, BOARD)
        model = ScriptedModel([answer("b", reason="b knows more")])
        runner = Runner(
            store,
            board,
            functions={
                "a": lambda view: [{"op": "add", "path": "/notes/-", "value": "from a"}],
                "b": lambda view: [{"op": "add", "path": "/notes/-", "value": "from b"}],
                "decider": lambda view: [{"op": "add", "path": "/answer", "value": "both wrote"}],
            },
            control=CoordinatorControl(model, state=lambda: runner.kernel.state),
        )
        result = await runner.run()
        assert result.end_reason == "done" and result.state["notes"] == ["from b", "from a"]
        records = await store.read_records(board)
        controls = [r.meta.get("control") for r in records if r.kind == "proposal"]
        assert controls[0] == "coordinator: v0.1 (b): b knows more"
        assert str(controls[1]).startswith("coordinator: only eligible invocation")
        assert len(model.calls) == 1  # later selections had a single eligible invocation
    finally:
        await store.close()
