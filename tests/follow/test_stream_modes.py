"""Runner.events(modes=...): ``updates`` and ``values`` stream each commit; the log is unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from test_fork import BLUEPRINT, scripted

from slateboard.errors import InvalidInput
from slateboard.runtime import Runner, create_board
from slateboard.stores import MemoryStore

MODEL = scripted("n0", "n1", "n2", "n3", "n4")


async def run(modes: list[str] | None) -> tuple[list[Any], list[Any]]:
    store = MemoryStore()
    board = await create_board(store, BLUEPRINT)
    runner = Runner(store, board, model=MODEL)
    seen: list[Any] = []

    async def listen() -> None:
        async for event in runner.events(modes) if modes is not None else runner.events():
            seen.append(event)

    listener = asyncio.create_task(listen())
    await runner.run()
    await listener
    return seen, await store.read_records(board)


def test_updates_and_values_follow_each_commit() -> None:
    seen, log = asyncio.run(run(["updates", "values"]))
    accepted = [r for r in log if r.outcome == "accepted"]
    updates = [e.data for e in seen if e.kind == "state.update"]
    values = [e.data for e in seen if e.kind == "state.values"]
    assert {e.kind for e in seen} == {"state.update", "state.values"}  # no run events asked for
    assert [u["seq"] for u in updates] == [r.seq for r in accepted]
    assert [u["patch"] for u in updates] == [json.loads(r.patch) for r in accepted]
    assert all(u["worker"] == "writer" for u in updates)
    assert [v["state"] for v in values] == [{"notes": [f"n{i}" for i in range(k + 1)]} for k in range(5)]


def test_streaming_never_changes_what_is_logged() -> None:
    def shape(log: list[Any]) -> list[Any]:
        return [(r.seq, r.kind, r.outcome, r.worker, r.patch, r.version, r.state_after) for r in log]

    plain, plain_log = asyncio.run(run(None))
    _, streamed_log = asyncio.run(run(["events", "updates", "values"]))
    assert plain and shape(plain_log) == shape(streamed_log)


def test_unknown_stream_mode() -> None:
    async def go() -> None:
        store = MemoryStore()
        runner = Runner(store, await create_board(store, BLUEPRINT), model=MODEL)
        with pytest.raises(InvalidInput) as info:
            runner.events(["updates", "messages"])
        assert str(info.value) == "stream mode 'messages' is not one of events, updates, values, tokens, custom"

    asyncio.run(go())
