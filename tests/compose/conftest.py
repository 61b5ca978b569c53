"""Fixtures of the compose tests: a SQLite store, and (for the runner-process test) a private
PostgreSQL schema and ``slateboard worker`` subprocesses, as in tests/scale."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

SCALE = Path(__file__).resolve().parent.parent / "scale"
if str(SCALE) not in sys.path:
    sys.path.insert(0, str(SCALE))

from scale_testkit import Workers, private_pg_url  # noqa: E402

from slateboard.stores import Store, open_store  # noqa: E402


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A SQLite store of the test's own."""
    opened = await open_store(f"sqlite:///{tmp_path / 'boards.db'}")
    yield opened
    await opened.close()


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """The URL of a fresh, private schema of the test database (skips without a server)."""
    yield from private_pg_url("sbt_compose")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    """Starts ``slateboard worker`` subprocesses; kills whatever is still running at the end."""
    pool = Workers(tmp_path)
    yield pool
    pool.kill_all()
