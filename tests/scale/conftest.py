"""Fixtures for the scale tests: a fresh PostgreSQL schema per test (dropped afterwards), and
runner processes started as real ``slateboard worker`` subprocesses.

PostgreSQL comes from $SLATEBOARD_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test);
without a server answering there, the tests that need it are skipped with the reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from scale_testkit import Workers, blueprint_file, private_pg_url  # noqa: F401  (blueprint_file: a fixture)

from slateboard.stores import Store, open_store


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """The URL of a fresh, private schema of the test database."""
    yield from private_pg_url("sbt_scale")


@pytest.fixture
async def pg_store(pg_schema_url: str) -> AsyncIterator[Store]:
    """A store on the private schema."""
    store = await open_store(pg_schema_url)
    yield store
    await store.close()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    """Starts ``slateboard worker`` subprocesses; kills whatever is still running at the end."""
    pool = Workers(tmp_path)
    yield pool
    pool.kill_all()
