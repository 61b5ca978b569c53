"""A provider that never answers: stage ``model`` with the provider's error, a board that ends
"model unavailable" (failed), and the same words in ``slateboard log``.

The model is a real OpenAI-compatible client pointed at a loopback port nothing listens on.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.kernel.record import Record
from slateboard.models import OpenAICompatModel, RetryPolicy
from slateboard.runtime import Runner, create_board
from slateboard.runtime.result import RunResult
from slateboard.stores import open_store
from slateboard.stores.base import BoardInfo

BLUEPRINT: dict[str, Any] = {
    "name": "notes",
    "schema": {
        "type": "object",
        "required": ["notes"],
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}, "answer": {"type": "string"}},
    },
    "initial_state": {"notes": []},
    "workers": {"writer": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "writer"}],
    "done": "has(state.answer)",
    "answer": "/answer",
}


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _run(url: str) -> tuple[str, RunResult, list[Record], BoardInfo]:
    store = await open_store(url)
    try:
        board = await create_board(store, BLUEPRINT)
        base = f"http://127.0.0.1:{_closed_port()}/v1"
        model = OpenAICompatModel("m", base_url=base, retry=RetryPolicy(max_attempts=1))
        result = await Runner(store, board, model=model).run()
        return board, result, await store.read_records(board), await store.board_info(board)
    finally:
        await store.close()


def test_an_unreachable_provider_fails_the_board_as_model_unavailable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board, result, records, info = asyncio.run(_run(url))
    proposals = [r for r in records if r.kind == "proposal"]
    assert proposals and all(r.stage == "model" for r in proposals)
    assert all("cannot connect" in (r.reason or "") and "JSON" not in (r.reason or "") for r in proposals)
    assert "model unavailable" in result.end_reason and "cannot connect" in result.end_reason
    assert result.end_status == "failed"
    assert info.status == "failed"

    shown = CliRunner().invoke(app, ["log", board, "--store", url], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "model" in shown.output and "cannot connect" in shown.output
    listed = CliRunner().invoke(app, ["boards", "--store", url, "--json"])
    assert '"end_status": "failed"' in listed.output
