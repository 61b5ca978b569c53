"""Several runner processes at high concurrency with a model latency (issue 40): every board
ends as it would alone (``done``, its answer, one run end), none halted by a spurious cycle.

On the old code a runner loading a board while another runner appended to it counted the
appended record twice, and the circuit then halted the board on "the state at version N
repeats the state at version N"."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from scale_testkit import NOTES_PAIR, Workers

from slateboard.runtime import submit
from slateboard.runtime.session import ends_run
from slateboard.stores import Store

BOARDS = 40
RUNNERS = 4
LIMIT_S = 300.0  # a safety net against a hang, far above the expected run time


@pytest.mark.slow
async def test_many_runners_many_boards_all_end_done(pg_schema_url: str, pg_store: Store, workers: Workers) -> None:
    procs = [
        workers.start(pg_schema_url, "--concurrency", "16", "--lease", "5", SLATEBOARD_SOAK_LATENCY_MS="50")
        for _ in range(RUNNERS)
    ]
    for w in procs:
        w.wait_for("started")
    ids = [
        await submit(pg_store, NOTES_PAIR, task=f"board {i}", model="python:scale_models:fixed_model")
        for i in range(BOARDS)
    ]
    deadline = time.monotonic() + LIMIT_S
    while await pg_store.list_boards(status="running") and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    for w in procs:
        w.signal(signal.SIGTERM)
    for w in procs:
        assert w.finish() == 0, w.output()[-2000:]
    for board_id in ids:
        info = await pg_store.board_info(board_id)
        assert (info.status, info.reason) == ("done", "done"), (board_id, info)
        records = await pg_store.read_records(board_id)
        assert sum(ends_run(r) for r in records) == 1
        assert not [r for r in records if r.kind == "circuit"], board_id
