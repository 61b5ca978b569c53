"""Issue 18, hysteresis in a real run: two workers overwriting the same path in turn (A-B-A-B)
are stopped by the circuit policy with its action and reason in the log."""

from __future__ import annotations

from typing import Any

from slateboard.kernel.circuit import actions_in
from slateboard.runtime import Runner, create_board
from slateboard.status import end_status
from slateboard.stores import open_store

PINGPONG: dict[str, Any] = {
    "name": "pingpong",
    "schema": {"type": "object", "properties": {"x": {"type": "integer"}, "by": {"type": "string"}}},
    "initial_state": {"x": 0, "by": ""},
    "workers": {"a": {"reads": ["/x"], "writes": ["/x", "/by"]}, "b": {"reads": ["/x"], "writes": ["/x", "/by"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "a"},
        {"on": {"op": "replace", "path": "/by"}, "when": "state.by == 'a'", "invoke": "b"},
        {"on": {"op": "replace", "path": "/by"}, "when": "state.by == 'b'", "invoke": "a"},
    ],
    "circuit": {"max_alternations": 4, "retries": 0},
}


def turn(name: str) -> Any:
    def propose(view: Any) -> Any:
        # Never the same state twice (the cycle check stays quiet): only the alternation shows.
        return [
            {"op": "replace", "path": "/x", "value": view.data["/x"] + 1},
            {"op": "replace", "path": "/by", "value": name},
        ]

    return propose


async def test_ping_pong_between_two_workers_is_halted_with_the_reason_logged() -> None:
    store = await open_store("memory://")
    board = await create_board(store, PINGPONG)
    result = await Runner(store, board, functions={"a": turn("a"), "b": turn("b")}).run()
    records = await store.read_records(board)
    actions = actions_in(records)
    assert [a.trigger for a in actions] == ["alternation"]
    assert actions[0].kind == "halt" and actions[0].details["workers"] == ["a", "b"]
    assert "/by" in actions[0].details["paths"] and "/x" in actions[0].details["paths"]
    assert result.state["x"] == 4  # stopped at the fourth turn, not at max_steps
    assert result.end_reason.startswith("circuit: alternation")
    assert end_status("failed", result.end_reason) == "failed"
    await store.close()
