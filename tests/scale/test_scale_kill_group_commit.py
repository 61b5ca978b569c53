"""Kill -9 during the default SQLite writer's group commit: nothing acknowledged is lost.

Thirty boards run at once in a child process on one SQLite file with the default writer
(``writer=loop``: one transaction per turn of the loop for every board's append in it, a batch
of several flushed on the connection thread). The child prints each append the store
acknowledged; it is killed with SIGKILL mid-run, at a random moment. Then every acknowledged
record is in the file, every board's log verifies end to end (``verify_board``: hash chain,
state hashes, snapshot), and a second process resumes every board to its end, each invocation
committed once.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slateboard.runtime import create_board, verify_board
from slateboard.stores import open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kill_driver import kill_blueprint

DRIVER = Path(__file__).with_name("kill_driver.py")
BOARDS = 30
STEPS = 30


def _drive(url: str, boards: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), url, *boards], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("seed", [1, 2])
async def test_kill_during_group_commits_loses_no_acknowledged_append(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    store = await open_store(url)
    boards = [await create_board(store, kill_blueprint(STEPS)) for _ in range(BOARDS)]
    await store.close()

    proc = _drive(url, boards)
    acked: list[tuple[str, int]] = []
    stats = (0, 0)
    kill_at = rng.randint(150, 450)  # of BOARDS * STEPS = 900 appends
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 120
        while len(acked) < kill_at and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            word, *rest = line.split()
            if word == "ack":
                acked.append((rest[0], int(rest[1])))
            elif word == "stats":
                stats = (int(rest[0]), int(rest[1]))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    assert len(acked) >= kill_at, "the driver ended before the kill"
    appends, flushes = stats
    assert flushes < appends, f"no append shared a flush ({appends} appends, {flushes} flushes): no group commit"

    store = await open_store(url)
    try:
        for board, seq in acked:
            (rec,) = await store.read_records(board, seq, limit=1)
            assert rec.seq == seq and rec.accepted
        for board in boards:
            report = await verify_board(store, board)
            assert report.ok, (board, report.problem)
    finally:
        await store.close()

    # A second process resumes every board to its end.
    proc = _drive(url, boards)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1] == "finished"
    store = await open_store(url)
    try:
        for board in boards:
            report = await verify_board(store, board)
            assert report.ok, (board, report.problem)
            records = await store.read_records(board)
            proposals = [r for r in records if r.invocation is not None and r.accepted]
            assert len(proposals) == STEPS
            assert len({r.invocation for r in proposals}) == STEPS, "an invocation was committed twice"
            assert report.state is not None and len(report.state["entries"]) == STEPS
    finally:
        await store.close()
