"""Store URLs select the backend and carry its options."""

from __future__ import annotations

from pathlib import Path

import pytest

from slateboard.stores import MemoryStore, StoreError, open_store
from slateboard.stores.sqlite import SqliteStore, default_path, path_from_url


def test_sqlite_paths() -> None:
    assert path_from_url("sqlite:///tmp/x/board.db") == Path("/tmp/x/board.db")
    assert path_from_url("sqlite:////tmp/x/board.db?synchronous=normal") == Path("/tmp/x/board.db")
    assert path_from_url("sqlite://rel/board.db") == Path("rel/board.db")
    assert path_from_url("sqlite:board.db") == Path("board.db")
    assert path_from_url("sqlite://") == default_path()
    assert default_path().name == "slateboard.db" and "slateboard" in str(default_path().parent)


async def test_backends_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = await open_store("memory://?snapshot_every=7")
    assert isinstance(mem, MemoryStore) and mem.snapshot_every == 7
    s = await open_store(f"sqlite:///{tmp_path / 'a.db'}?snapshot_every=3&synchronous=normal")
    assert isinstance(s, SqliteStore) and s.snapshot_every == 3 and s.synchronous == "normal"
    assert s.writer == "loop"  # the default: on the event loop's thread, with group commit
    assert s.path == tmp_path / "a.db" and s.path.exists()
    await s.close()
    bare = await open_store(str(tmp_path / "b.db"))
    assert isinstance(bare, SqliteStore) and bare.path == tmp_path / "b.db"
    await bare.close()
    # The default store lives under the user's data directory.
    monkeypatch.setattr("platformdirs.user_data_dir", lambda name: str(tmp_path / "data" / name))
    default = await open_store(None)
    assert isinstance(default, SqliteStore)
    assert default.path == tmp_path / "data" / "slateboard" / "slateboard.db" and default.path.exists()
    await default.close()


async def test_bad_options(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="synchronous"):
        await open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous=off")
    with pytest.raises(StoreError, match=r"writer='inline': use thread or loop"):
        await open_store(f"sqlite:///{tmp_path / 'a.db'}?writer=inline")
    with pytest.raises(StoreError, match="not an integer"):
        await open_store("memory://?snapshot_every=lots")
    with pytest.raises(StoreError, match="unknown memory store options"):
        await open_store("memory://?colour=blue")


async def test_sqlite_claims_and_agenda_reads_use_the_live_invocation_index(tmp_path: Path) -> None:
    """The store's own claim and agenda queries (traced from its connections) walk the partial
    index of live invocations (migration 3), never the board's whole history: SQLite's plan
    names the index and sorts nothing."""
    import sqlite3

    from slateboard.testing import Board
    from slateboard.testing.kit import inv

    s = await open_store(f"sqlite:///{tmp_path / 'plan.db'}")
    assert isinstance(s, SqliteStore)
    board = await Board.create(s, agenda=[inv("a"), inv("b")])
    seen: list[str] = []
    for conn in (s._conn, s._lease_conn):  # the test watches the SQL the store runs
        assert conn is not None
        conn.set_trace_callback(seen.append)
    assert await s.claim(board.board_id, owner="o") is not None
    assert await s.claim(None, owner="o") is not None
    assert len(await s.agenda(board.board_id)) == 2
    await s.close()
    # The reads of invocations, and the claims' pick-and-lease UPDATEs (their pick is a subquery).
    selects = [
        q
        for q in seen
        if "invocations" in q
        and (q.lstrip().upper().startswith("SELECT") or (q.lstrip().upper().startswith("UPDATE") and "(SELECT" in q))
    ]
    assert len(selects) == 3, seen
    db = sqlite3.connect(tmp_path / "plan.db")
    for sql in selects:
        plan = " | ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql))
        assert "invocations_live" in plan and "TEMP B-TREE" not in plan, (sql, plan)
    db.close()


async def test_the_loop_writer_runs_its_statements_on_the_loop(tmp_path: Path) -> None:
    """``writer=loop`` (the default): every database call runs on the calling (event loop)
    thread, the writes queued in one turn of the loop in one durable transaction. A write alone
    commits there too (the connection thread is never started); the ``COMMIT`` (the flush) of
    a batch of several runs on the connection thread, so the loop runs on meanwhile."""
    import asyncio
    import threading

    here = threading.current_thread().name
    s = await open_store(f"sqlite:///{tmp_path / 'a.db'}?writer=loop")
    assert isinstance(s, SqliteStore) and s.writer == "loop"
    seen: list[tuple[str, str]] = []
    s._db.set_trace_callback(lambda sql: seen.append((sql, threading.current_thread().name)))
    boards = [await s.create_board({"name": f"b{i}"}, {"notes": []}) for i in range(3)]
    await s.set_status(boards[0].board_id, "paused")
    assert seen and {t for _, t in seen} == {here}
    assert not s._executor._threads  # the connection thread was never started
    assert s.commit_stats().flushes == 4  # three boards and a status change: one each
    seen.clear()
    await asyncio.gather(*(s.set_status(b.board_id, "running") for b in boards))
    assert {t for sql, t in seen if sql != "COMMIT"} == {here}
    assert [t != here for sql, t in seen if sql == "COMMIT"] == [True]
    assert s.commit_stats().flushes == 5
    await s.close()
