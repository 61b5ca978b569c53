"""A runner that loads a board while another runner appends to it counts each record once
(issue 40: the circuit saw one accepted record twice and halted the board on a "cycle" of a
version with itself)."""

from __future__ import annotations

from typing import Any

from slateboard.runtime import BoardSession, submit
from slateboard.stores import Store, open_store

PAIR: dict[str, Any] = {
    "name": "pair",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
        "required": ["notes"],
    },
    "initial_state": {"notes": []},
    "workers": {"a": {"reads": ["/notes"], "writes": ["/notes/-"]}, "b": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}, {"on": {"op": "start"}, "invoke": "b"}],
}


def _writer(text: str) -> Any:
    return lambda view: [{"op": "add", "path": "/notes/-", "value": text}]


async def test_a_record_appended_during_load_is_counted_once(pg_schema_url: str, pg_store: Store) -> None:
    board = await submit(pg_store, PAIR)
    other = await open_store(pg_schema_url)  # the second runner process: its own connections
    try:
        writer = BoardSession(other, board, functions={"a": _writer("by a")}, shared=True)
        await writer.load()
        loading = await open_store(pg_schema_url)
        original = loading.load_board

        async def load_then_another_runner_appends(board_id: str) -> Any:
            loaded = await original(board_id)
            claim = await other.claim(None, owner="other", lease_s=30, worker_names=["a"])
            assert claim is not None
            stepped = await writer.step(claim.invocation, "other runner")
            assert stepped.record is not None and stepped.record.outcome == "accepted"
            return loaded

        loading.load_board = load_then_another_runner_appends  # type: ignore[method-assign]
        try:
            reader = BoardSession(loading, board, functions={"b": _writer("by b")}, shared=True)
            await reader.load()
            await reader.refresh()  # the catch-up that read the appended record a second time
        finally:
            await loading.close()
    finally:
        await other.close()
    records = await pg_store.read_records(board)
    tail = list(reader.accounts.tail)
    assert [r.seq for r in tail] == [r.seq for r in records]
    assert reader.accounts.steps == sum(r.kind == "proposal" for r in records) == 1
    assert reader.kernel.seq == records[-1].seq
