"""A worker that runs longer than a third of its lease has the lease extended while it runs
(the step engine's lease keeper), and the keeper is gone once the step is over."""

from __future__ import annotations

import asyncio
from typing import Any

from _support.boards import notes_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store


async def test_a_slow_worker_keeps_its_lease_and_the_keeper_stops() -> None:
    store = await open_store("memory://")
    board = await create_board(store, notes_blueprint(2))
    beats: list[str] = []
    heartbeat = store.heartbeat

    async def counted(board_id: str, invocation_id: str, **kw: Any) -> Any:
        beats.append(invocation_id)
        return await heartbeat(board_id, invocation_id, **kw)

    store.heartbeat = counted  # type: ignore[method-assign]

    async def slow(author: str) -> list[dict[str, Any]]:
        await asyncio.sleep(0.25)  # past a third of the 0.15 s lease: the keeper runs
        return [{"op": "add", "path": "/notes/-", "value": {"author": author, "text": "note"}}]

    async def a(view: Any) -> Any:
        return await slow("a")

    async def b(view: Any) -> Any:
        return await slow("b")

    def decider(view: Any) -> Any:
        return [{"op": "add", "path": "/answer", "value": "ok"}]

    result = await Runner(store, board, functions={"a": a, "b": b, "decider": decider}, lease_s=0.15).run()
    assert result.end_reason == "done"
    assert beats  # the slow steps' leases were extended
    after = len(beats)
    await asyncio.sleep(0.2)
    assert len(beats) == after  # no keeper outlived its step
    await store.close()
