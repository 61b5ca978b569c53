"""The SQLite store's default writer (``writer=loop``): database calls on the event loop's thread,
one transaction per turn of the loop for every write queued in it (its flush on the connection
thread), and a database locked by another connection waited for on the connection thread,
never on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from slateboard.stores import StoreUnavailable, open_store
from slateboard.stores.sqlite import SqliteStore


async def _ticks(stop: asyncio.Event, seen: list[float]) -> None:
    """Count turns of the loop every 10 ms until ``stop`` (a blocked loop counts none)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        seen.append(loop.time())
        await asyncio.sleep(0.01)


async def test_writes_queued_in_one_turn_share_one_transaction(tmp_path: Path) -> None:
    s = await open_store(f"sqlite:///{tmp_path / 'a.db'}")
    assert isinstance(s, SqliteStore) and s.writer == "loop"
    boards = [await s.create_board({"name": f"b{i}"}, {"notes": []}) for i in range(20)]
    before = s.commit_stats().flushes
    await asyncio.gather(*(s.set_status(b.board_id, "paused") for b in boards))
    assert s.commit_stats().flushes == before + 1  # twenty writes, one commit
    assert {(await s.board_info(b.board_id)).status for b in boards} == {"paused"}
    await s.close()


async def test_one_failed_write_of_a_batch_fails_alone(tmp_path: Path) -> None:
    s = await open_store(f"sqlite:///{tmp_path / 'a.db'}")
    boards = [await s.create_board({"name": f"b{i}"}, {"notes": []}) for i in range(3)]
    results = await asyncio.gather(
        s.set_status(boards[0].board_id, "paused"),
        s.set_status("no-such-board", "paused"),
        s.set_status(boards[2].board_id, "paused"),
        return_exceptions=True,
    )
    assert isinstance(results[1], Exception) and "no-such-board" in str(results[1])
    assert (await s.board_info(boards[0].board_id)).status == "paused"
    assert (await s.board_info(boards[1].board_id)).status != "paused"
    assert (await s.board_info(boards[2].board_id)).status == "paused"
    await s.close()


async def test_a_locked_database_is_waited_for_off_the_loop(tmp_path: Path) -> None:
    """Another process's writer holds the lock: the write waits on the connection thread while
    the loop keeps running; once the lock is released it commits, and later calls are back on
    the loop's thread."""
    path = tmp_path / "a.db"
    s = await open_store(f"sqlite:///{path}")
    assert isinstance(s, SqliteStore)
    board = await s.create_board({"name": "b"}, {"notes": []})
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    stop, seen = asyncio.Event(), list[float]()
    ticker = asyncio.create_task(_ticks(stop, seen))
    write = asyncio.create_task(s.set_status(board.board_id, "paused"))
    await asyncio.sleep(0.3)
    assert not write.done()  # waiting for the lock...
    assert len(seen) >= 10  # ...without holding up the loop
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(write, 10)
    assert (await s.board_info(board.board_id)).status == "paused"
    stop.set()
    await ticker
    threads: list[str] = []

    def trace(sql: str) -> None:
        if sql != "COMMIT":
            threads.append(threading.current_thread().name)

    s._db.set_trace_callback(trace)
    await s.set_status(board.board_id, "running")
    assert threads and set(threads) == {threading.current_thread().name}  # the flush alone is not
    await s.close()


async def test_a_lock_held_past_the_busy_timeout_names_it(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    s = await open_store(f"sqlite:///{path}?busy_timeout_ms=300")
    board = await s.create_board({"name": "b"}, {"notes": []})
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    stop, seen = asyncio.Event(), list[float]()
    ticker = asyncio.create_task(_ticks(stop, seen))
    try:
        with pytest.raises(StoreUnavailable, match="busy_timeout_ms=300"):
            await s.set_status(board.board_id, "paused")
    finally:
        other.execute("ROLLBACK")
        other.close()
    stop.set()
    await ticker
    assert len(seen) >= 10  # the loop ran while the write waited
    assert (await s.board_info(board.board_id)).status != "paused"  # nothing was written
    await s.set_status(board.board_id, "paused")  # and the store works on
    assert (await s.board_info(board.board_id)).status == "paused"
    await s.close()


def test_the_store_serves_a_later_event_loop(tmp_path: Path) -> None:
    """A store opened under one ``asyncio.run`` keeps working under the next (``run_sync``)."""
    url = f"sqlite:///{tmp_path / 'a.db'}"

    async def first() -> tuple[SqliteStore, list[str]]:
        s = await open_store(url)
        assert isinstance(s, SqliteStore)
        boards = [(await s.create_board({"name": f"b{i}"}, {"notes": []})).board_id for i in range(3)]
        await asyncio.gather(*(s.set_status(b, "paused") for b in boards))  # flushed on the thread
        return s, boards

    s, boards = asyncio.run(first())

    async def second() -> set[str]:
        await asyncio.gather(*(s.set_status(b, "running") for b in boards))
        statuses: set[str] = {(await s.board_info(b)).status for b in boards}
        await s.close()
        return statuses

    assert asyncio.run(second()) == {"running"}
