"""Fork: a child board from a parent's state at a version, bound to the parent's prefix."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from slateboard.blueprint.compile import compile_blueprint
from slateboard.kernel.replay import replay
from slateboard.runtime import Runner, create_board
from slateboard.runtime.fork import PARENT_KEY, ForkError, fork_board, verify_fork
from slateboard.stores import BoardNotFound, open_store

BLUEPRINT: dict[str, Any] = {
    "name": "notes5",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"notes": []},
    "workers": {"writer": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) < 5", "invoke": "writer"},
    ],
}


def scripted(*texts: str) -> str:
    replies = [json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": t}]}) for t in texts]
    return f"scripted:{json.dumps(replies)}"


async def own_replay_ok(store: Any, board: str) -> bool:
    loaded = await store.load_board(board)
    bp = compile_blueprint(loaded.blueprint)
    return bool(replay(bp, bp.initial_state(), await store.read_records(board)).ok)


def test_fork_at_2_of_5_runs_on_its_own_and_binds_the_parent(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    url = f"sqlite:///{db}"

    async def build() -> tuple[str, str, list[Any]]:
        store = await open_store(url)
        try:
            parent = await create_board(store, BLUEPRINT)
            done = await Runner(store, parent, model=scripted("p0", "p1", "p2", "p3", "p4")).run()
            assert done.state == {"notes": ["p0", "p1", "p2", "p3", "p4"]}
            before = await store.read_records(parent)
            child = await fork_board(store, parent, 2)
            assert await store.read_records(parent) == before  # the parent is untouched
            ran = await Runner(store, child, model=scripted("c2", "c3", "c4")).run()
            assert ran.state == {"notes": ["p0", "p1", "c2", "c3", "c4"]}
            info = await store.board_info(child)
            bound = info.meta[PARENT_KEY]
            assert isinstance(bound, dict) and bound["board"] == parent and bound["version"] == 2
            assert bound["record_hash"] == next(r.hash for r in before if r.version == 2)
            assert await own_replay_ok(store, parent) and await own_replay_ok(store, child)
            assert "parent prefix verified" in str(await verify_fork(store, child))
            assert await verify_fork(store, parent) is None
            return parent, child, before
        finally:
            await store.close()

    parent, child, before = asyncio.run(build())
    first = next(r for r in before if r.outcome == "accepted")
    forged = dataclasses.replace(first, patch='[{"op":"add","path":"/notes/-","value":"forged"}]')
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE records SET data = ? WHERE board_id = ? AND seq = ?", (forged.to_bytes(), parent, first.seq)
        )

    async def check() -> None:
        store = await open_store(url)
        try:
            with pytest.raises(ForkError, match="parent's prefix does not verify"):
                await verify_fork(store, child)
        finally:
            await store.close()

    asyncio.run(check())


@pytest.mark.parametrize("at", [-1, 6])
def test_fork_outside_the_versions_writes_nothing(tmp_path: Path, at: int) -> None:
    async def go() -> None:
        store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
        try:
            parent = await create_board(store, BLUEPRINT)
            await Runner(store, parent, model=scripted("p0", "p1", "p2", "p3", "p4")).run()
            with pytest.raises(ForkError, match=f"--at {at} is outside board {parent}"):
                await fork_board(store, parent, at)
            assert [b.board_id for b in await store.list_boards()] == [parent]
            with pytest.raises(BoardNotFound):
                await fork_board(store, "nosuch", 0)
        finally:
            await store.close()

    asyncio.run(go())


def test_cli_fork_and_replay_verify_of_the_child(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slateboard.cli import app

    db = tmp_path / "b.db"
    url = f"sqlite:///{db}"

    def cli(*args: str) -> Any:
        return CliRunner().invoke(app, [*args, "--store", url])

    async def parent_board() -> str:
        store = await open_store(url)
        try:
            parent = await create_board(store, BLUEPRINT)
            await Runner(store, parent, model=scripted("p0", "p1", "p2", "p3", "p4")).run()
            return parent
        finally:
            await store.close()

    parent = asyncio.run(parent_board())
    for at in ("9", "-1"):
        bad = cli("fork", parent, "--at", at)
        assert bad.exit_code == 2
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith("error: ") and f"--at {at}" in line
    unknown = cli("fork", "nosuch", "--at", "1")
    assert unknown.exit_code == 2 and "'nosuch'" in unknown.stderr
    made = cli("fork", parent[:8], "--at", "2")
    assert made.exit_code == 0, made.output
    child = made.stdout.strip()
    assert cli("replay", child, "--verify").exit_code == 0
    records = asyncio.run(_records(url, parent))
    forged = dataclasses.replace(records[0], reason="rewritten")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE records SET data = ? WHERE board_id = ? AND seq = 1", (forged.to_bytes(), parent))
    failed = cli("replay", child, "--verify")
    assert failed.exit_code == 3 and "parent's prefix does not verify" in failed.stderr


async def _records(url: str, board: str) -> list[Any]:
    store = await open_store(url)
    try:
        return await store.read_records(board)
    finally:
        await store.close()


def test_fork_under_another_blueprint_must_accept_the_state(tmp_path: Path) -> None:
    async def go() -> None:
        store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
        try:
            parent = await create_board(store, BLUEPRINT)
            await Runner(store, parent, model=scripted("p0", "p1", "p2", "p3", "p4")).run()
            narrow = {**BLUEPRINT, "schema": {**BLUEPRINT["schema"], "properties": {"notes": {"maxItems": 1}}}}
            with pytest.raises(ForkError, match="at version 2 does not fit the blueprint"):
                await fork_board(store, parent, 2, narrow)
            assert len(await store.list_boards()) == 1  # nothing written
            other = {**BLUEPRINT, "name": "other", "rules": []}
            child = await fork_board(store, parent, 3, other)
            loaded = await store.load_board(child)
            assert loaded.blueprint["name"] == "other"
            assert loaded.blueprint["initial_state"] == {"notes": ["p0", "p1", "p2"]}
            assert "parent prefix verified" in str(await verify_fork(store, child))
        finally:
            await store.close()

    asyncio.run(go())
