"""Joins and batches under concurrent commits (issue 43): several ``slateboard worker``
processes on one PostgreSQL board, every order and payment written by its own invocation so
their commits race (compare-and-set losses, catch-ups). Each key's join fires exactly once, and
every alert lands in exactly one batch, the last one flushed by a timer a runner process fired."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from compose_kit import gathered, shop
from scale_testkit import Workers

from slateboard.runtime import submit, verify_board
from slateboard.runtime.session import ends_run
from slateboard.stores import open_store

KEYS = 8
ALERTS = 6
RUNNERS = 3
LIMIT_S = 120.0  # a safety net against a hang, far above the expected run time
HERE = Path(__file__).resolve().parent


async def test_runner_processes_fire_each_join_once_and_batch_each_event_once(
    pg_schema_url: str, workers: Workers
) -> None:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    procs = [
        workers.start(pg_schema_url, "--concurrency", "4", "--lease", "5", PYTHONPATH=path) for _ in range(RUNNERS)
    ]
    for w in procs:
        w.wait_for("started")
    store = await open_store(pg_schema_url)
    try:
        board = await submit(store, shop(KEYS, alerts=ALERTS, batch={"size": 4, "seconds": 0.2}))
        deadline = time.monotonic() + LIMIT_S
        while (await store.board_info(board)).status == "running" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        for w in procs:
            w.signal(signal.SIGTERM)
        for w in procs:
            assert w.finish() == 0, w.output()[-2000:]
        info = await store.board_info(board)
        assert (info.status, info.reason) == ("done", "agenda_empty"), info
        records = await store.read_records(board)
        assert sum(ends_run(r) for r in records) == 1
        report = await verify_board(store, board)
        assert report.ok, report
        state = report.state
        assert sorted(state["shipped"]) == sorted(f"o{k}" for k in range(KEYS))
        ships = await gathered(store, board, "ship")
        assert sorted(i.binding[1] for i in ships) == sorted(f'"o{k}"' for k in range(KEYS))
        # Every alert in exactly one batch; 6 is no multiple of 4, so a timer flushed one at least
        # (when the processes were slow to start, a timer may flush an early batch too).
        batches = await gathered(store, board, "digest")
        paths = sorted(item["path"] for i in batches for item in i.event["items"])
        assert paths == sorted(f"/alerts/{k}" for k in range(ALERTS))
        assert sum(d["count"] for d in state["digests"]) == ALERTS and all(d["count"] <= 4 for d in state["digests"])
        timers = sum(r.kind == "timer" for r in records)
        assert timers >= 1 and timers == sum(d["reason"] == "timer" for d in state["digests"])
        assert all(r.worker != "shipper" or r.outcome == "accepted" for r in records)
    finally:
        await store.close()
