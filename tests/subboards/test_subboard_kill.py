"""A parent killed with SIGKILL mid fan-out, then resumed (issue 43), on SQLite and PostgreSQL:
it finishes with every answer, no child board is created twice, and no child that had ended
before the kill runs again (the ones that were mid-run are resumed, on their own boards)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

from subboards_kit import GATE_ENV, HERE, LOG_ENV, parent_blueprint

from slateboard.kernel.record import PROPOSAL_KIND, RUN_KIND
from slateboard.runtime import create_board, verify_board
from slateboard.runtime.children import PARENT_META
from slateboard.stores import open_store

DOCS = ["d0", "slow1", "d2", "slow3", "d4", "d5"]
DRIVER = str(HERE / "fanout_driver.py")


def _ran(log: Path) -> Counter[str]:
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return Counter(line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("ran "))


async def _ended_children(url: str, board: str) -> set[str]:
    store = await open_store(url)
    try:
        kids = [b for b in await store.list_boards() if (b.meta.get(PARENT_META) or {}).get("board") == board]
        return {b.board_id for b in kids if b.status == "done"}
    finally:
        await store.close()


async def _driver(url: str, board: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, DRIVER, url, board, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )


async def test_a_parent_killed_mid_fan_out_resumes_with_no_child_run_twice(store_url: str, tmp_path: Path) -> None:
    log, gate = tmp_path / "ran.log", tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), LOG_ENV: str(log), GATE_ENV: str(gate)}
    store = await open_store(store_url)
    try:
        board = await create_board(store, parent_blueprint(DOCS, max_parallel=2))
    finally:
        await store.close()
    proc = await _driver(store_url, board, env)
    try:
        # two children have ended and both slots hold a slow child (it waits at the gate)
        for _ in range(3000):
            if {"d0", "d2", "slow1", "slow3"} <= set(_ran(log)) or proc.returncode is not None:
                break
            await asyncio.sleep(0.02)
        assert proc.returncode is None, (await proc.communicate())[1].decode()[-2000:]
        for _ in range(3000):  # and d0's and d2's children have committed their answers and ends
            if len(await _ended_children(store_url, board)) == 2:
                break
            await asyncio.sleep(0.02)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = _ran(log)
    assert set(before) == {"d0", "slow1", "d2", "slow3"}, before  # d4 and d5 never started
    store = await open_store(store_url)
    try:
        kids = [b for b in await store.list_boards() if (b.meta.get(PARENT_META) or {}).get("board") == board]
        ended_before = {b.board_id for b in kids if b.status == "done"}
        assert len(kids) == 4 and len(ended_before) == 2
    finally:
        await store.close()

    gate.touch()
    resumed = await _driver(store_url, board, env)
    out, err = await resumed.communicate()
    assert resumed.returncode == 0, err.decode()[-3000:]
    assert json.loads(out) == {"end_reason": "done", "answer": [d.upper() for d in DOCS]}

    after = _ran(log)
    # ended before the kill: not run again; mid-run: their step ran again on their own board;
    # never started: run once
    assert after == Counter({"d0": 1, "d2": 1, "slow1": 2, "slow3": 2, "d4": 1, "d5": 1}), after
    store = await open_store(store_url)
    try:
        kids = [b for b in await store.list_boards() if (b.meta.get(PARENT_META) or {}).get("board") == board]
        assert len(kids) == len(DOCS) and ended_before <= {b.board_id for b in kids}
        for kid in kids:
            records = await store.read_records(kid.board_id)
            assert sum(1 for r in records if r.kind == PROPOSAL_KIND and r.outcome == "accepted") == 1
            assert sum(1 for r in records if r.kind == RUN_KIND) == 1, kid.board_id
        parent_records = await store.read_records(board)
        assert sum(1 for r in parent_records if r.kind == PROPOSAL_KIND) == 1
        report = await verify_board(store, board)
        assert report.ok, report.problem
    finally:
        await store.close()
