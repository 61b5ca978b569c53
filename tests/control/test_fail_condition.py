"""Issue 18: a blueprint ``fail`` condition (CEL over state, compiled at acceptance) ends the run
``failed: <condition>``, the board's stored status is ``failed`` and the one end-status mapping
says ``failed``; ``done`` wins when both hold."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.status import END_STATUSES, end_status, failure_kind, with_lost_work
from slateboard.stores import open_store

COUNTER: dict[str, Any] = {
    "name": "counter",
    "schema": {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}}},
    "initial_state": {"n": 0},
    "workers": {"inc": {"reads": ["/n"], "writes": ["/n", "/ok"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "inc"},
        {"on": {"op": "replace", "path": "/n"}, "when": "state.n < 10", "invoke": "inc"},
    ],
    "fail": "state.n >= 3",
}


def inc(view: Any) -> Any:
    return [{"op": "replace", "path": "/n", "value": view.data["/n"] + 1}]


async def test_the_fail_condition_ends_the_run_failed() -> None:
    store = await open_store("memory://")
    board = await create_board(store, COUNTER)
    result = await Runner(store, board, functions={"inc": inc}).run()
    assert result.state["n"] == 3  # stopped as soon as the condition held, not at n == 10
    assert result.end_reason == "failed: state.n >= 3"
    info = await store.board_info(board)
    assert info.status == "failed"
    assert end_status(info.status, info.reason) == "failed"
    assert failure_kind(result.end_reason) == "condition"
    await store.close()


async def test_done_wins_over_fail_when_both_hold() -> None:
    bp = copy.deepcopy(COUNTER)
    bp["done"] = "state.n >= 3"
    store = await open_store("memory://")
    board = await create_board(store, bp)
    result = await Runner(store, board, functions={"inc": inc}).run()
    assert result.end_reason == "done" and end_status("done", result.end_reason) == "solved"
    await store.close()


def test_the_fail_condition_is_compiled_at_acceptance() -> None:
    bp = copy.deepcopy(COUNTER)
    bp["fail"] = "state.n >= "
    with pytest.raises(BlueprintError) as err:
        compile_blueprint(bp)
    assert any(issue.path == "/fail" for issue in err.value.issues)
    assert compile_blueprint(COUNTER).fail is not None


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        ("done", "done", "solved"),
        ("failed", "failed: state.n >= 3", "failed"),
        (None, "failed: state.n >= 3", "failed"),
        ("done", "max_steps", "exhausted"),
        ("paused", "paused: awaiting approval of record 4", "paused"),
        ("done", with_lost_work("done", ["3:1"]), "solved"),
        ("done", with_lost_work("max_steps", ["3:1", "4:2"]), "exhausted"),
        ("failed", with_lost_work("circuit: stuck", ["3:1"]), "failed"),
    ],
)
def test_one_mapping_for_end_statuses_including_lost_work(status: str | None, reason: str, expected: str) -> None:
    assert end_status(status, reason) == expected and expected in END_STATUSES
