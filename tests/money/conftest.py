"""Fixtures of the spend tests: a test API key in the environment of the CLI subprocesses, the
loopback model servers a test starts (closed at its end), and a store with a capped ledger on
SQLite and on PostgreSQL (``where``)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))
from models_testkit import StubServer
from stores_testkit import pg_dsn, pg_skip_reason, pg_url, scratch_pg_schema

from slateboard.runtime.ledger import Ledger, MemoryLedger, PostgresLedger, SqliteLedger, ledger_for
from slateboard.stores import open_store


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's environment with a test API key, for CLI subprocesses (and this one)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture
async def servers() -> AsyncIterator[list[StubServer]]:
    """The loopback model servers a test starts: closed when it ends."""
    started: list[StubServer] = []
    yield started
    for server in started:
        await server.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def where(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, Ledger, str]]:
    """A store's URL, its ledgers and a fresh ledger's name (capped at $1) on SQLite and on a
    scratch schema of the test PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'board.db'}"
        await (await open_store(url)).close()
        ledger: Ledger = SqliteLedger(tmp_path / "board.db")
        await ledger.set_cap("tenant", 1.0)
        yield url, ledger, "tenant"
        return
    schemas = scratch_pg_schema("sbt_spend")
    url = pg_url(next(schemas))
    store = await open_store(url)
    try:
        ledger = ledger_for(store)
    finally:
        await store.close()
    name = f"tenant_{uuid.uuid4().hex[:8]}"  # the ledgers live in the database, shared by schemas
    await ledger.set_cap(name, 1.0)
    yield url, ledger, name
    next(schemas, None)  # drops the schema


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def any_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ledger]:
    """Each ledger store, empty: in memory, an SQLite file, private tables of the test
    PostgreSQL server (skipped without one)."""
    if request.param == "memory":
        yield MemoryLedger()
    elif request.param == "sqlite":
        yield SqliteLedger(tmp_path / "l.db")
    else:
        if reason := pg_skip_reason():
            pytest.skip(reason)
        table = f"ledger_l_{uuid.uuid4().hex[:10]}"
        yield PostgresLedger(pg_dsn(), table=table)
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg_dsn(), autocommit=True) as conn:
            for suffix in ("", "_history", "_held"):
                await conn.execute(f"DROP TABLE IF EXISTS {table}{suffix}")
