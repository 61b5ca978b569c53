"""Fixtures for the store tests: one ``store`` fixture parametrised over every backend.

PostgreSQL runs against $SLATEBOARD_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test);
each test gets its own schema (``sbt_<random>``), dropped afterwards, so runs never collide.
When no server answers, the postgresql cases are skipped with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from stores_testkit import OpenStore, pg_dsn, pg_skip_reason, pg_url

from slateboard.stores import Store, open_store

BACKENDS = ["memory", "sqlite", "sqlite-thread", "postgresql"]
"""``sqlite``: the SQLite store with its default writer (``writer=loop``: database calls on the event
loop's thread); ``sqlite-thread``: with ``writer=thread`` (on the connection thread)."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "postgresql" and (reason := pg_skip_reason()):
        pytest.skip(reason)
    return name


@pytest.fixture
async def store_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh, empty store URL for this test (dropped afterwards for postgresql)."""
    if backend == "memory":
        yield "memory://"
    elif backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'board.db'}"
    elif backend == "sqlite-thread":
        yield f"sqlite:///{tmp_path / 'board.db'}?writer=thread"
    else:
        schema = f"sbt_{uuid.uuid4().hex[:16]}"
        yield pg_url(schema)
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg_dsn(), autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def open_another(store_url: str, backend: str) -> AsyncIterator[Callable[[], Awaitable[Store]]]:
    """Open more handles on the same store (the same object for memory://)."""
    opened: list[Store] = []
    shared: list[Store] = []

    async def make() -> Store:
        if backend == "memory":
            if not shared:
                shared.append(await open_store(store_url))
            return shared[0]
        s = await open_store(store_url)
        opened.append(s)
        return s

    yield make
    for s in opened + shared:
        await s.close()


@pytest.fixture
async def store(open_another: OpenStore) -> Store:
    """The store under test (first handle of ``open_another``)."""
    return await open_another()
