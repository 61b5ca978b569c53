"""Fixtures for the scale tests: a fresh PostgreSQL schema per test (dropped afterwards), and
runner processes started as real ``slateboard worker`` subprocesses.

PostgreSQL comes from $SLATEBOARD_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test);
without a server answering there, the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from scale_testkit import Workers, drop_schema, pg_skip_reason, pg_url

from slateboard.stores import Store, open_store


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """The URL of a fresh, private schema of the test database."""
    if reason := pg_skip_reason():
        pytest.skip(reason)
    schema = f"sbt_scale_{uuid.uuid4().hex[:12]}"
    yield pg_url(schema)
    drop_schema(schema)


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
