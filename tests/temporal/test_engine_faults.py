"""Faults on the engine path (issue 40), on a real Temporal dev server and real PostgreSQL:
worker processes killed with SIGKILL mid model call and mid commit, and the Temporal server
restarted mid-run. Every board completes with the log an uninterrupted run writes: no record
lost, none duplicated, each invocation completed once, ``verify_board`` passes."""

from __future__ import annotations

import asyncio
import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_testkit import MODEL, NOTES_PAIR
from scale_testkit import Worker, Workers, private_pg_url
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

from scale_models import fixed_model

from slateboard.kernel.record import Record
from slateboard.runtime import Runner, create_board, verify_board
from slateboard.stores import Store, open_store
from slateboard.temporal import connect, submit_board

# Enough work that the ten kills all land while boards still run (six boards once let the
# last kill come after the last board ended, on a loaded machine).
BOARDS = 8
LIMIT_S = 420.0  # a safety net against a hang, far above the expected run time
LATENCY_MS = "300"


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from private_pg_url("sbt_temporal")


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Store]:
    store = await open_store(pg_url)
    yield store
    await store.close()


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Workers]:
    workers = Workers(tmp_path)
    yield workers
    workers.kill_all()


def projection(records: list[Record]) -> list[tuple[Any, ...]]:
    """What a run decided, without what differs between runs (times, latencies, who ran it)."""
    return [(r.kind, r.outcome, r.worker, r.invocation, r.patch, r.stage, r.version, r.state_after) for r in records]


async def reference(store: Store) -> list[tuple[Any, ...]]:
    """The log of one uninterrupted single-process run of the same board."""
    board = await create_board(store, NOTES_PAIR, inputs={"task": "t"})
    await Runner(store, board, model=fixed_model(), parallel=1).run()
    return projection(list(await store.read_records(board)))


def start_worker(pool: Workers, url: str, address: str, queue: str) -> Worker:
    w = pool.start(
        url, "--engine", "temporal", "--temporal", address, "--task-queue", queue,
        SLATEBOARD_SOAK_LATENCY_MS=LATENCY_MS,
    )  # fmt: skip
    w.wait_for("serving")
    return w


async def check_boards(store: Store, ids: list[str], expected: list[tuple[Any, ...]]) -> None:
    for board in ids:
        info = await store.board_info(board)
        assert (info.status, info.reason) == ("done", "done"), (board, info)
        records = list(await store.read_records(board))
        assert [r.seq for r in records] == list(range(1, len(records) + 1)), board  # none lost, none twice
        completed = Counter(r.invocation for r in records if r.invocation is not None and r.kind == "proposal")
        assert all(n == 1 for n in completed.values()), (board, completed)
        assert projection(records) == expected, board
        report = await verify_board(store, board)
        assert report.ok, (board, report)


async def until_ended(store: Store, ids: list[str], deadline: float, tick: Any = None) -> None:
    while time.monotonic() < deadline:
        infos = [await store.board_info(b) for b in ids]
        if all(i.status != "running" for i in infos):
            return
        if tick is not None:
            await tick()
        await asyncio.sleep(0.25)
    raise AssertionError(f"boards still running after {LIMIT_S:g} s")


@pytest.mark.slow
async def test_workers_killed_mid_call_and_mid_commit_lose_and_duplicate_nothing(
    temporal_server: TemporalServer, pg_url: str, pg_store: Store, pool: Workers
) -> None:
    expected = await reference(pg_store)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = [start_worker(pool, pg_url, temporal_server.address, queue) for _ in range(2)]
    client = await connect(temporal_server.address)
    ids = [
        await submit_board(
            client, pg_store, NOTES_PAIR, address=temporal_server.address, task_queue=queue, task="t", model=MODEL
        )
        for _ in range(BOARDS)
    ]
    rng = random.Random(40)
    kills = 0
    mid_run = 0  # kills while boards were still running: the faults hit work in flight
    last_kill = time.monotonic()

    async def kill_one() -> None:
        nonlocal kills, last_kill, mid_run
        # Every 0.7-1.5 s: one worker dies with SIGKILL (mid model call, mid commit, or between)
        # and a fresh one takes its place; at least ten kills in all.
        if time.monotonic() - last_kill < rng.uniform(0.7, 1.5):
            return
        i = rng.randrange(len(workers))
        mid_run += any([(await pg_store.board_info(b)).status == "running" for b in ids])
        workers[i].signal(signal.SIGKILL)
        workers[i].finish()
        kills += 1
        workers[i] = start_worker(pool, pg_url, temporal_server.address, queue)
        last_kill = time.monotonic()

    deadline = time.monotonic() + LIMIT_S
    while kills < 10 and time.monotonic() < deadline:
        await kill_one()
        await asyncio.sleep(0.1)
    await until_ended(pg_store, ids, deadline)
    assert kills >= 10 and mid_run >= 10, (kills, mid_run)
    for w in workers:
        w.signal(signal.SIGTERM)
    for w in workers:
        assert w.finish() == 0, w.output()[-2000:]
    await check_boards(pg_store, ids, expected)


@pytest.mark.slow
async def test_boards_go_on_after_the_temporal_server_restarts(
    temporal_server: TemporalServer, pg_url: str, pg_store: Store, pool: Workers
) -> None:
    expected = await reference(pg_store)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = [start_worker(pool, pg_url, temporal_server.address, queue) for _ in range(2)]
    client = await connect(temporal_server.address)
    ids = [
        await submit_board(
            client, pg_store, NOTES_PAIR, address=temporal_server.address, task_queue=queue, task="t", model=MODEL
        )
        for _ in range(3)
    ]
    # Mid-run: some records are in, none of the boards has ended.
    deadline = time.monotonic() + LIMIT_S
    while not all([(await pg_store.board_info(b)).seq >= 2 for b in ids]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    temporal_server.restart()
    await until_ended(pg_store, ids, deadline)
    for w in workers:
        w.signal(signal.SIGTERM)
    for w in workers:
        assert w.finish() == 0, w.output()[-2000:]
    await check_boards(pg_store, ids, expected)
