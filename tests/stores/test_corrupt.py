"""Damaged databases give a clear StoreError that names the file and the problem, never a driver traceback."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from stores_testkit import WORKERS, Board, compiled, entry, pg_dsn, pg_url, scratch_pg_schema

from slateboard.stores import (
    SchemaTooNew,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    open_store,
)


def assert_clean(exc: BaseException) -> None:
    """The error was raised 'from None': no driver exception is chained into its traceback."""
    assert exc.__cause__ is None, repr(exc.__cause__)
    assert exc.__context__ is None or exc.__suppress_context__, repr(exc.__context__)


async def make_db(path: Path, records: int = 120) -> str:
    store = await open_store(f"sqlite:///{path}")
    board = await Board.create(store)
    for i in range(records):
        w = WORKERS[i % 3]
        await board.step(w, entry(w, f"{i} " + "lorem ipsum dolor sit amet " * 8, i))
    await store.close()
    return board.board_id


async def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreCorrupt) as err:
        await open_store(f"sqlite:///{path}")
    assert str(path) in str(err.value) and "not an SQLite database" in str(err.value)
    assert_clean(err.value)


@pytest.mark.parametrize("keep", [50, 4096 * 3, 4096 * 3 + 100])
async def test_truncated_file(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "board.db"
    await make_db(path)
    size = path.stat().st_size
    assert size > keep
    with path.open("r+b") as fh:
        fh.truncate(keep)
    with pytest.raises(StoreCorrupt) as err:
        store = await open_store(f"sqlite:///{path}")
        await store.list_boards()
    assert str(path) in str(err.value) and "truncated" in str(err.value)
    assert_clean(err.value)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_damaged_pages(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "board.db"
    board_id = await make_db(path)
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    pages = len(data) // 4096
    for page in rng.sample(range(2, pages), k=max(1, pages // 4)):
        start = page * 4096 + rng.randint(0, 3000)
        data[start : start + 64] = bytes(rng.getrandbits(8) for _ in range(64))
    path.write_bytes(bytes(data))
    failures: list[StoreError] = []
    try:
        store = await open_store(f"sqlite:///{path}")
    except StoreError as open_error:
        failures.append(open_error)
    else:
        # Which pages the reads touch depends on the file's page layout (indexes, snapshot
        # placement), so damage to a page they do not read (an index, an interior key) is
        # left to the integrity check, which must then name it the same way.
        calls = (store.load_board(board_id), store.read_records(board_id), store.list_boards(), store.verify())  # type: ignore[attr-defined]
        for call in calls:
            try:
                await call
            except StoreError as exc:
                failures.append(exc)
        await store.close()
    assert failures, "damage went unnoticed"
    for failure in failures:
        assert isinstance(failure, StoreCorrupt), repr(failure)
        assert str(path) in str(failure)
        assert_clean(failure)


async def test_damaged_record_blob_names_the_board_and_record(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    board_id = await make_db(path, records=5)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET data = ? WHERE seq = 3", (b"\x01garbage",))
        db.execute("UPDATE records SET data = ? WHERE seq = 4", (b'{"seq": 4}',))
    store = await open_store(f"sqlite:///{path}")
    try:
        with pytest.raises(StoreCorrupt, match="compressed data") as err:
            await store.read_records(board_id, 3, limit=1)
        assert str(path) in str(err.value) and board_id in str(err.value)
        assert_clean(err.value)
        with pytest.raises(StoreCorrupt, match="record 4 is malformed") as err:
            await store.read_records(board_id, 4)
        assert_clean(err.value)
        with pytest.raises(StoreCorrupt):
            await store.load_board(board_id)
    finally:
        await store.close()


async def test_missing_records_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    board_id = await make_db(path, records=5)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM records WHERE seq = 2")
    store = await open_store(f"sqlite:///{path}")
    try:
        with pytest.raises(StoreCorrupt, match="record 2 is missing"):
            await store.load_board(board_id)
    finally:
        await store.close()


async def test_foreign_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(StoreCorrupt, match="not a slateboard store") as err:
        await open_store(f"sqlite:///{path}")
    assert str(path) in str(err.value)


async def test_dropped_table(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    board_id = await make_db(path, records=2)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE snapshots")
    store = await open_store(f"sqlite:///{path}")
    try:
        with pytest.raises(StoreCorrupt, match="tables are damaged") as err:
            await store.load_board(board_id)
        assert_clean(err.value)
    finally:
        await store.close()


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    await make_db(path, records=1)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO slateboard_schema (version, applied_at) VALUES (99, 0)")
    with pytest.raises(SchemaTooNew, match="schema version 99") as err:
        await open_store(f"sqlite:///{path}")
    assert str(path) in str(err.value)


async def test_unopenable_path(tmp_path: Path) -> None:
    (tmp_path / "a-directory.db").mkdir()
    with pytest.raises(StoreUnavailable) as err:
        await open_store(f"sqlite:///{tmp_path / 'a-directory.db'}")
    assert "a-directory.db" in str(err.value)
    assert_clean(err.value)


# -- postgresql -----------------------------------------------------------------------------------


@pytest.fixture
def pg_schema() -> Iterator[str]:
    yield from scratch_pg_schema("sbt_corrupt")


async def test_postgres_damaged_rows_and_tables(pg_schema: str) -> None:
    store = await open_store(pg_url(pg_schema))
    try:
        board = await Board.create(store)
        for i in range(4):
            await board.step("w0", entry("w0", f"e{i}"))
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg_dsn(), autocommit=True) as conn:
            await conn.execute(
                f'UPDATE "{pg_schema}".records SET data = %s WHERE board_id = %s AND seq = 2',
                (b"\x01\xff\xfe", board.board_id),
            )
        with pytest.raises(StoreCorrupt, match="compressed data") as err:
            await store.load_board(board.board_id)
        assert pg_schema in str(err.value) and board.board_id in str(err.value)
        assert_clean(err.value)
        async with await psycopg.AsyncConnection.connect(pg_dsn(), autocommit=True) as conn:
            await conn.execute(f'DROP TABLE "{pg_schema}".snapshots')
        with pytest.raises(StoreCorrupt, match="tables are damaged") as err:
            await store.load_board(board.board_id)
        assert_clean(err.value)
    finally:
        await store.close()


async def test_postgres_unreachable() -> None:
    with pytest.raises(StoreUnavailable, match="cannot connect") as err:
        await open_store("postgresql://postgres@127.0.0.1:1/test?connect_timeout_s=2")
    assert "127.0.0.1:1" in str(err.value)
    assert_clean(err.value)


async def test_unknown_url() -> None:
    with pytest.raises(StoreError, match="unknown store URL"):
        await open_store("redis://localhost")
    with pytest.raises(StoreError, match="unknown sqlite store options"):
        await open_store("sqlite:///tmp/x.db?snapshot_evry=3")


def test_blueprint_is_compiled() -> None:
    assert compiled().spec.name == "storetest"
