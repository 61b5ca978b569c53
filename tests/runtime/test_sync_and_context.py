"""``async with await open_store(...)`` closes the store, and ``Runner.run_sync`` runs a board
from synchronous code, as ``Team.run_sync`` does (issue 48)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _support.boards import notes_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store


def note(author: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/notes/-", "value": {"author": author, "text": "x"}}]


def reply(view: Any, event: Any = None) -> list[dict[str, Any]]:
    return note("b")


FUNCTIONS: dict[str, Any] = {
    "a": lambda view: note("a"),
    "b": reply,
    "decider": lambda view: [{"op": "add", "path": "/answer", "value": "done"}],
}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_an_opened_store_is_an_async_context_manager(kind: str, tmp_path: Path) -> None:
    url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path / 'b.db'}"
    async with await open_store(url) as store:
        board = await create_board(store, notes_blueprint(2), inputs={"task": "t"})
        assert (await store.board_info(board)).board_id == board
    assert store._closed is True  # type: ignore[attr-defined]  # closed when the block ended


def test_runner_run_sync_runs_a_board_to_its_end(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def make() -> str:
        async with await open_store(url) as store:
            return await create_board(store, notes_blueprint(2), inputs={"task": "t"})

    board = asyncio.run(make())
    store = asyncio.run(open_store(url))
    try:
        result = Runner(store, board, functions=FUNCTIONS).run_sync()
    finally:
        asyncio.run(store.close())
    assert result.end_reason == "done" and result.answer == "done"
