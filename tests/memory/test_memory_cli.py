"""``slateboard memory``: distill, search, episodes and prune over a SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memory_testkit import FINDINGS, RESEARCH
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store


async def make_boards(url: str) -> tuple[str, str]:
    store = await open_store(url)
    board = await create_board(store, RESEARCH)
    found = iter(FINDINGS)
    await Runner(
        store, board, functions={"finder": lambda view: [{"op": "add", "path": "/facts/-", "value": next(found)}]}
    ).run()
    running = await create_board(store, RESEARCH)  # never run: not distillable yet
    await store.close()
    return board, running


def test_memory_commands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board, running = asyncio.run(make_boards(url))
    cli = CliRunner()

    def run(*args: str) -> tuple[int, str]:
        res = cli.invoke(app, [*args, "--store", url], catch_exceptions=False)
        return res.exit_code, res.stdout + res.stderr

    code, out = run("memory", "distill", board[:8], "--path", "/facts/*", "--json")
    assert code == 0, out
    assert len(json.loads(out)["facts"]) == 3
    code, out = run("memory", "distill", running, "--path", "/facts/*")
    assert code != 0 and "has not ended" in out
    code, out = run("memory", "search", "vault code Orion", "-k", "1", "--json")
    assert code == 0, out
    (hit,) = json.loads(out)
    assert hit["text"] == FINDINGS[1] and hit["board"] == board and hit["worker"] == "finder"
    code, out = run("memory", "episodes", "--text", "Vega", "--json")
    assert code == 0, out
    assert [(e["board"], e["worker"]) for e in json.loads(out)] == [(board, "finder")]
    code, out = run("memory", "prune")
    assert code != 0 and "at least one rule" in out
    code, out = run("memory", "prune", "--keep-last", "1")
    assert code == 0 and "2 fact(s) pruned" in out
    code, out = run("memory", "prune", "--older-than", "bogus")
    assert code != 0 and "bad duration" in out
