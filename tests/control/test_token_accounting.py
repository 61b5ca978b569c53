"""Issue 18: every token spent lands in the log with its component, and the result's totals are
the sum over the log: a run whose control unit is a model-based coordinator (its tokens used to
appear nowhere)."""

from __future__ import annotations

import json
from typing import Any

from slateboard.architect import Architect
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.scheduling.coordinator import CoordinatorControl
from slateboard.stores import open_store

CHAIN: dict[str, Any] = {
    "name": "chain",
    "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}},
    "initial_state": {"notes": []},
    "workers": {"a": {"reads": ["/**"], "writes": ["/notes/-"]}, "b": {"reads": ["/**"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}, {"on": {"op": "start"}, "invoke": "b"}],
}


def note(name: str) -> Any:
    return lambda view: [{"op": "add", "path": "/notes/-", "value": name}]


async def test_coordinator_tokens_are_logged_and_the_result_adds_up_to_the_log() -> None:
    store = await open_store("memory://")
    board = await create_board(store, CHAIN)
    model = ScriptedModel([json.dumps({"choice": "b", "reason": "b first"}), json.dumps({"choice": "a"})])
    unit = CoordinatorControl(model, ask_when_single=True)
    result = await Runner(store, board, functions={"a": note("a"), "b": note("b")}, control=unit).run()
    assert result.state["notes"] == ["b", "a"]  # the coordinator did choose
    records = await store.read_records(board)
    spent = [r for r in records if r.kind == "spend"]
    assert len(spent) == unit.calls == 2
    assert {r.usage.component for r in spent} == {"coordinator"}
    assert (
        sum(r.usage.tokens_in + r.usage.tokens_out for r in spent) == unit.usage.tokens_in + unit.usage.tokens_out > 0
    )
    assert "b first" in (spent[0].reason or "")
    in_log = sum(r.usage.tokens_in + r.usage.tokens_out for r in records)
    assert result.total_tokens == in_log
    assert result.usage["coordinator"].total == unit.usage.tokens_in + unit.usage.tokens_out
    await store.close()


async def test_a_control_unit_without_usage_adds_no_records() -> None:
    store = await open_store("memory://")
    board = await create_board(store, CHAIN)
    result = await Runner(store, board, functions={"a": note("a"), "b": note("b")}).run()
    records = await store.read_records(board)
    assert not [r for r in records if r.kind == "spend"]
    assert result.total_tokens == sum(r.usage.tokens_in + r.usage.tokens_out for r in records)
    await store.close()


async def test_architect_tokens_reach_the_board_and_the_result_adds_up_to_the_log() -> None:
    architect_text = json.dumps(
        {
            "name": "designed",
            "schema": {"type": "object", "properties": {"answer": {"type": "string"}}},
            "initial_state": {},
            "workers": {"a": {"reads": ["/**"], "writes": ["/answer"]}},
            "rules": [{"on": {"op": "start"}, "invoke": "a"}],
            "done": "has(state.answer)",
            "answer": "/answer",
        }
    )
    design = await Architect(ScriptedModel([architect_text])).design_report("keep a note")
    assert design.usage.tokens_in > 0
    store = await open_store("memory://")
    board = await create_board(store, design.blueprint, spent=(design.usage,))
    model = ScriptedModel([json.dumps({"choice": "a"})])
    unit = CoordinatorControl(model, ask_when_single=True)
    answer = lambda view: [{"op": "add", "path": "/answer", "value": "noted"}]  # noqa: E731
    result = await Runner(store, board, functions={"a": answer}, control=unit).run()
    assert result.answer == "noted" and result.end_status == "solved"
    records = await store.read_records(board)
    architect = [r for r in records if r.usage.component == "architect"]
    assert len(architect) == 1 and architect[0].kind == "spend"
    assert architect[0].usage.tokens_in == design.usage.tokens_in
    assert result.usage["architect"].total == design.usage.tokens_in + design.usage.tokens_out
    assert result.usage["coordinator"].total == unit.usage.tokens_in + unit.usage.tokens_out > 0
    assert result.total_tokens == sum(r.usage.tokens_in + r.usage.tokens_out for r in records)
    await store.close()
