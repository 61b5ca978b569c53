"""Fixtures for the dashboard tests: SQLite stores with real boards, the app on real loopback
HTTP (uvicorn in a thread), the ``slateboard serve`` command in a subprocess, and an SSE reader."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from web_boards import make_board

pytest.importorskip("fastapi", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("uvicorn", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("sse_starlette", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")

from web_testkit import Boards, Served, ThreadServer, serve_cli, sse_events  # noqa: F401  (re-exported for the fixtures below)

from slateboard.stores import open_store


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'boards.db'}"


@pytest.fixture
async def finished(store_url: str) -> Boards:
    store = await open_store(store_url)
    try:
        board_id = await make_board(store, "one")
    finally:
        await store.close()
    return Boards(store_url, board_id)


@pytest.fixture
def live_server(store_url: str) -> Iterator[ThreadServer]:
    """The app over ``store_url`` (opened by the app's own lifespan, in the server's loop)."""
    from slateboard.web import create_app

    with ThreadServer(create_app(store_url, poll_s=0.05)) as server:
        yield server
