"""Several followers of one board at once: 8 dashboard event streams on a board while a runner
runs it, on SQLite and on PostgreSQL. The dashboard polls only every 30 s here, so every record
and the board's end can only arrive through the store's own wake-up (``runtime.watch``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WEB = Path(__file__).resolve().parent.parent / "web"
if str(WEB) not in sys.path:
    sys.path.insert(0, str(WEB))

pytest.importorskip("fastapi", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("uvicorn", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("sse_starlette", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")

import httpx  # noqa: E402
from web_boards import new_board, run_board  # noqa: E402
from web_testkit import ThreadServer, sse_events  # noqa: E402

from slateboard.stores import open_store  # noqa: E402
from slateboard.web import create_app  # noqa: E402

CLIENTS = 8


@pytest.fixture(params=["sqlite", "postgres"])
def follow_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'boards.db'}"
    else:
        yield request.getfixturevalue("pg_follow_url")


async def _follow(url: str, board: str, ready: asyncio.Event, count: list[int]) -> list[tuple[str, Any, str | None]]:
    """One client's events, from the first header until the header says the board is done."""
    got: list[tuple[str, Any, str | None]] = []
    async with (
        httpx.AsyncClient(base_url=url, timeout=120) as http,
        http.stream("GET", f"/api/boards/{board}/events") as res,
    ):
        assert res.status_code == 200
        async for event in sse_events(res):
            got.append(event)
            if len(got) == 1:
                count[0] += 1
                if count[0] == CLIENTS:
                    ready.set()
            if event[0] == "board" and event[1]["status"] != "running":
                return got
    raise AssertionError("the stream ended before the board did")


async def test_eight_streams_each_get_every_record_once_in_order_while_a_runner_runs(follow_url: str) -> None:
    store = await open_store(follow_url)
    try:
        board = await new_board(store)
        with ThreadServer(create_app(follow_url, poll_s=30.0)) as server:
            ready, count = asyncio.Event(), [0]
            clients = [asyncio.create_task(_follow(server.url, board, ready, count)) for _ in range(CLIENTS)]
            await asyncio.wait_for(ready.wait(), 60)  # every stream is open and has the empty board
            await run_board(store, board, "many")
            streams = await asyncio.wait_for(asyncio.gather(*clients), 90)
        records = await store.read_records(board)
        assert len(records) >= 6
        for got in streams:
            pushed = [(d["seq"], d["hash"], ident) for kind, d, ident in got if kind == "record"]
            assert pushed == [(r.seq, r.hash, str(r.seq)) for r in records]
            assert got[-1][1]["status"] == "done" and got[-1][1]["records"] == len(records)
    finally:
        await store.close()


async def test_a_stream_says_gone_when_its_board_is_deleted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    store = await open_store(url)
    try:
        board = await new_board(store)
        with ThreadServer(create_app(url, poll_s=30.0)) as server:
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=60) as http,
                http.stream("GET", f"/api/boards/{board}/events") as res,
            ):
                events = sse_events(res)
                first = await asyncio.wait_for(anext(events), 60)
                assert first[0] == "board" and first[1]["status"] == "running"
                await store.delete_board(board)
                rest = [e async for e in events]  # the stream ends by itself
        assert [k for k, _, _ in rest] == ["gone"] and board in rest[0][1]["error"]
    finally:
        await store.close()
