"""A store written with the version-1 layout (old DDL, written here by hand) opens with the current code."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stores_testkit import compiled, entry, inv, pg_dsn, pg_url, scratch_pg_schema

from slateboard.kernel import GENESIS, Kernel, Proposal, Record, canonical_bytes
from slateboard.stores import AgendaChanges, DuplicateInvocationCommit, open_store
from slateboard.stores.migrations import SCHEMA_VERSION

# The version-1 layout as slateboard 0.1 wrote it (kept verbatim: do not "fix" it).
SQLITE_V1_DDL = """
CREATE TABLE slateboard_schema (version INTEGER NOT NULL PRIMARY KEY, applied_at REAL NOT NULL);
CREATE TABLE boards (
    board_id TEXT PRIMARY KEY, name TEXT NOT NULL, blueprint BLOB NOT NULL, initial_state BLOB NOT NULL,
    meta BLOB NOT NULL, status TEXT NOT NULL, reason TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    version INTEGER NOT NULL, last_seq INTEGER NOT NULL, last_hash TEXT NOT NULL,
    snapshot_seq INTEGER NOT NULL DEFAULT 0);
CREATE TABLE records (board_id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (board_id, seq)) WITHOUT ROWID;
CREATE TABLE snapshots (board_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, version INTEGER NOT NULL,
    last_hash TEXT NOT NULL, state_hash TEXT NOT NULL, state BLOB NOT NULL);
CREATE TABLE invocations (board_id TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, worker TEXT NOT NULL,
    priority INTEGER NOT NULL, ord INTEGER NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    owner TEXT, lease_until REAL, data BLOB NOT NULL, UNIQUE (board_id, id));
INSERT INTO slateboard_schema VALUES (1, 0);
"""

POSTGRES_V1_DDL = [
    "CREATE TABLE slateboard_schema (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
    """CREATE TABLE boards (board_id text PRIMARY KEY, name text NOT NULL, blueprint bytea NOT NULL,
        initial_state bytea NOT NULL, meta bytea NOT NULL, status text NOT NULL, reason text, created bigserial,
        created_at double precision NOT NULL, updated_at double precision NOT NULL, version bigint NOT NULL,
        last_seq bigint NOT NULL, last_hash text NOT NULL, snapshot_seq bigint NOT NULL DEFAULT 0)""",
    """CREATE TABLE records (board_id text NOT NULL, seq bigint NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (board_id, seq))""",
    """CREATE TABLE snapshots (board_id text PRIMARY KEY, seq bigint NOT NULL, version bigint NOT NULL,
        last_hash text NOT NULL, state_hash text NOT NULL, state bytea NOT NULL)""",
    """CREATE TABLE invocations (board_id text NOT NULL, id text NOT NULL, key text NOT NULL, worker text NOT NULL,
        priority integer NOT NULL, ord bigint NOT NULL, created bigserial, status text NOT NULL,
        attempts integer NOT NULL DEFAULT 0, owner text, lease_until double precision, data bytea NOT NULL,
        PRIMARY KEY (board_id, id))""",
    "INSERT INTO slateboard_schema VALUES (1, 0)",
]


def v1_rows() -> tuple[list[Record], list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Two committed records, and v1 rows: the board, and invocations (plain JSON, as v1 stored
    them) including two pending ones with the same key, which v1 did not prevent."""
    bp = compiled()
    kernel = Kernel(bp)
    records = []
    for w in ("w0", "w1"):
        records.append(kernel.submit(Proposal(w, entry(w, f"old {w}"), invocation=f"old-{w}")).record)
    t = time.time()
    board = (
        "old-board",
        "storetest",
        canonical_bytes(bp.spec.to_json()),
        canonical_bytes(bp.initial_state()),
        b"{}",
        "running",
        None,
        t,
        t,
        2,
        2,
        records[-1].hash,
        0,
    )
    invs: list[tuple[object, ...]] = []
    for inv_id, status, key in [
        ("old-w0", "done", "a"),
        ("old-w1", "done", "b"),
        ("dup-1", "pending", "same"),
        ("dup-2", "pending", "same"),
        ("next", "pending", "c"),
    ]:
        item = inv(inv_id, "w2", order=len(invs), binding=(key,))
        invs.append(
            ("old-board", inv_id, item.key, "w2", 0, len(invs), status, 0, None, None, canonical_bytes(item.to_json()))
        )
    return records, [board], invs


async def check_upgraded(url: str) -> None:
    store = await open_store(url)
    try:
        assert await store.schema_version() == SCHEMA_VERSION  # type: ignore[attr-defined]
        loaded = await store.load_board("old-board")
        assert [r.seq for r in loaded.records] == [1, 2]
        assert [i.id for i in loaded.pending] == ["dup-1", "next"]  # the younger duplicate was cancelled
        cancelled = await store.agenda("old-board", ("cancelled",))
        assert [i.id for i in cancelled] == ["dup-2"]
        bp = compiled()
        kernel = Kernel(bp, loaded.start_state, version=0, seq=0, last_hash=GENESIS)
        for rec in loaded.records:
            kernel.submit(Proposal(rec.worker or "", rec.patch, invocation=rec.invocation))
        assert kernel.last_hash == loaded.info.last_hash
        # An invocation completed under v1 cannot be committed again (its done_seq is unknown).
        d = kernel.prepare(Proposal("w2", entry("w2", "new")))
        with pytest.raises(DuplicateInvocationCommit, match="old-w0"):
            await store.append("old-board", d.record, agenda=AgendaChanges(complete=["old-w0"]))
        claim = await store.claim("old-board", owner="new")
        assert claim is not None and claim.invocation.id == "dup-1"
        await store.append(
            "old-board", d.record, agenda=AgendaChanges(complete=["dup-1"], push=[inv("n2")]), state=kernel.state
        )
        kernel.commit(d)
        assert (await store.board_info("old-board")).seq == 3
    finally:
        await store.close()
    # Opening again is a no-op.
    store = await open_store(url)
    try:
        assert await store.schema_version() == SCHEMA_VERSION  # type: ignore[attr-defined]
    finally:
        await store.close()


async def test_sqlite_v1_store_opens(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    records, boards, invs = v1_rows()
    with sqlite3.connect(path) as db:
        db.executescript(SQLITE_V1_DDL)
        db.executemany("INSERT INTO boards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", boards)
        db.executemany("INSERT INTO records VALUES (?, ?, ?)", [("old-board", r.seq, r.to_bytes()) for r in records])
        db.executemany("INSERT INTO invocations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", invs)
    db.close()
    await check_upgraded(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        versions = [r[0] for r in db.execute("SELECT version FROM slateboard_schema ORDER BY version")]
    db.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))


@pytest.fixture
def pg_schema() -> Iterator[str]:
    yield from scratch_pg_schema("sbt_mig")


async def test_postgres_v1_store_opens(pg_schema: str) -> None:
    import psycopg

    records, boards, invs = v1_rows()
    with psycopg.connect(pg_dsn(), autocommit=True) as conn, conn.transaction():
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
        conn.execute(f'SET search_path = "{pg_schema}"')
        for stmt in POSTGRES_V1_DDL:
            conn.execute(stmt)
        for b in boards:
            conn.execute(
                "INSERT INTO boards (board_id, name, blueprint, initial_state, meta, status, reason, created_at,"
                " updated_at, version, last_seq, last_hash, snapshot_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                b,
            )
        for r in records:
            conn.execute("INSERT INTO records VALUES (%s, %s, %s)", ("old-board", r.seq, r.to_bytes()))
        for i in invs:
            conn.execute(
                "INSERT INTO invocations (board_id, id, key, worker, priority, ord, status, attempts, owner,"
                " lease_until, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                i,
            )
    await check_upgraded(pg_url(pg_schema))
