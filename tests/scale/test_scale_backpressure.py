"""Back-pressure: more boards than file descriptors, a process out of descriptors, and a second
SQLite writer holding the lock. Every board ends done, or its run stops with an error naming the
cause and the board is still there, whole, for a resume: never a board lost."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scale_models import fixed_model
from scale_testkit import NOTES_PAIR, NOTES_TARGET

from slateboard.runtime import Runner, create_board
from slateboard.stores import StoreUnavailable, open_store

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def env() -> dict[str, str]:
    path = os.pathsep.join([str(HERE), str(HERE.parent), str(SRC), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "SLATEBOARD_SOAK_LATENCY_MS": "5"}


@pytest.fixture
def notes_url() -> Iterator[str]:
    """A NOTES_PAIR model server on loopback (its own process: its sockets are not counted)."""
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(HERE / "notes_server.py"), str(port), "0.01"], stdout=subprocess.PIPE, text=True, env=env()
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.kill()
        server.wait()


def run_boards(**args: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "run_boards.py"), json.dumps(args)],
        capture_output=True,
        text=True,
        env=env(),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_more_boards_than_file_descriptors_all_finish(tmp_path: Path, notes_url: str) -> None:
    # 150 boards, two writers each calling at once: 300 calls in flight in a process allowed 64
    # descriptors. The pool opens at most 32 sockets and queues the rest; before it, a client
    # per board opened a socket per call and boards failed or were left running mid-run.
    out = run_boards(store=f"sqlite:///{tmp_path / 'b.db'}", k=150, model=f"openai:notes@{notes_url}", nofile=64)
    assert out["escaped"] == []
    assert [status for status, _ in out["boards"]] == ["done"] * 150
    assert len(out["answers"]) == 150 and all(a and a.endswith(" notes") for a in out["answers"])


def test_a_process_out_of_descriptors_fails_its_boards_naming_the_limit(tmp_path: Path, notes_url: str) -> None:
    out = run_boards(
        store=f"sqlite:///{tmp_path / 'b.db'}", k=5, model=f"openai:notes@{notes_url}", nofile=256, exhaust=True
    )
    # No raw OSError out of a run, no board left 'running' with nobody running it: each ends
    # failed, its reason saying what ran out and which limit to raise.
    assert out["escaped"] == []
    assert len(out["boards"]) == 5
    for status, reason in out["boards"]:
        assert status == "failed"
        assert "out of file descriptors" in reason
        assert "RLIMIT_NOFILE soft limit 256" in reason


def hold_write_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    """A second process that holds the SQLite write lock on `db` for `seconds`."""
    code = (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        f"time.sleep({seconds})\n"
        "c.execute('COMMIT')\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


async def run_all(store: Any, ids: list[str]) -> list[Any]:
    return await asyncio.gather(*(Runner(store, b, model=fixed_model()).run() for b in ids), return_exceptions=True)


@pytest.fixture
def soak_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_SOAK_LATENCY_MS", "5")


@pytest.mark.usefixtures("soak_latency")
async def test_a_writer_holding_the_lock_within_the_busy_timeout_only_delays_boards(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = await open_store(f"sqlite:///{db}?busy_timeout_ms=10000")
    try:
        ids = [await create_board(store, NOTES_PAIR, task=f"board {i}") for i in range(40)]
        holder = hold_write_lock(db, 0.5)
        results = await run_all(store, ids)
        holder.wait()
        assert [type(r).__name__ for r in results if isinstance(r, BaseException)] == []
        assert {r.end_reason for r in results} == {"done"}
    finally:
        await store.close()


@pytest.mark.usefixtures("soak_latency")
async def test_a_lock_held_past_the_busy_timeout_stops_runs_naming_it_and_loses_no_board(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = await open_store(f"sqlite:///{db}?busy_timeout_ms=50")
    try:
        ids = [await create_board(store, NOTES_PAIR, task=f"board {i}") for i in range(40)]
        holder = hold_write_lock(db, 1.0)
        first = await run_all(store, ids)
        holder.wait()
        errors = [r for r in first if isinstance(r, BaseException)]
        assert errors, "a lock held 20 times the busy timeout stopped no run"
        for err in errors:
            assert isinstance(err, StoreUnavailable)
            assert "locked by another connection" in str(err)
            assert "busy_timeout_ms=50" in str(err)
        # Every board is still there; a resume finishes the stopped ones as the others finished.
        assert sorted(b.board_id for b in await store.list_boards()) == sorted(ids)
        again = await run_all(store, ids)
        assert [r for r in again if isinstance(r, BaseException)] == []
        assert {r.end_reason for r in again} == {"done"}
        for r in again:
            # Whole: the notes the log holds, each once, and the decider's count of them.
            assert len(r.state["notes"]) >= NOTES_TARGET
            assert r.state["answer"] == f"{len(r.state['notes'])} notes"
    finally:
        await store.close()
