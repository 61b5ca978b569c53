"""Runner processes on PostgreSQL: double commits refused and dropped, dead runners' leases
expire and their invocations are committed once, the worker filter, graceful SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest
from scale_testkit import NOTES_PAIR, Workers

from slateboard.runtime import BoardSession, RunnerProcess, submit, wait
from slateboard.runtime.session import ends_run
from slateboard.stores import Store, open_store

PAIR: dict[str, Any] = {
    "name": "pair",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
        "required": ["notes"],
    },
    "initial_state": {"notes": []},
    "workers": {"a": {"reads": ["/notes"], "writes": ["/notes/-"]}, "b": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}, {"on": {"op": "start"}, "invoke": "b"}],
}


def note(text: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/notes/-", "value": text}]


async def _rows(store: Any, board_id: str) -> dict[str, tuple[str, str | None, int]]:
    async with store._conn() as conn:  # the tests peek at the agenda rows directly
        cur = await conn.execute("SELECT id, status, owner, claims FROM invocations WHERE board_id = %s", (board_id,))
        return {r[0]: (r[1], r[2], int(r[3])) for r in await cur.fetchall()}


async def test_a_second_commit_of_one_invocation_is_refused_and_dropped(pg_schema_url: str, pg_store: Store) -> None:
    board = await submit(pg_store, NOTES_PAIR)  # writer a reads only /task: its proposal never goes stale
    claim = await pg_store.claim(None, owner="first", lease_s=30, worker_names=["a"])
    assert claim is not None and claim.board_id == board
    gates = {"one": asyncio.Event(), "two": asyncio.Event()}

    def writer(name: str) -> Any:
        async def propose(view: Any) -> Any:
            await gates[name].wait()
            return [{"op": "add", "path": "/notes/-", "value": {"author": "a", "text": name}}]

        return propose

    other = await open_store(pg_schema_url)  # the second "process": its own connections and session
    try:
        one = BoardSession(pg_store, board, functions={"a": writer("one")}, shared=True)
        two = BoardSession(other, board, functions={"a": writer("two")}, shared=True)
        await one.load()
        await two.load()
        first = asyncio.create_task(one.step(claim.invocation, "first"))
        second = asyncio.create_task(two.step(claim.invocation, "second"))
        gates["one"].set()
        committed = await first
        gates["two"].set()
        dropped = await second
    finally:
        await other.close()
    assert committed.record is not None and committed.record.outcome == "accepted"
    # The second runner lost the compare-and-set, caught up, decided again and was refused by the
    # store's idempotency key: nothing of it is in the log.
    assert dropped.record is None and dropped.conflicts == 1
    assert dropped.dropped is not None and "already committed" in dropped.dropped
    records = await pg_store.read_records(board)
    assert [(r.invocation, r.outcome) for r in records] == [(claim.invocation.id, "accepted")]
    assert two.kernel.seq == records[-1].seq and two.kernel.state["notes"] == [{"author": "a", "text": "one"}]


async def test_a_dead_runners_claim_expires_and_is_committed_once(pg_schema_url: str, pg_store: Store) -> None:
    board = await submit(pg_store, {**PAIR, "rules": [{"on": {"op": "start"}, "invoke": "a"}]})
    dead = await pg_store.claim(None, owner="dead-runner", lease_s=1.0)  # claimed, then the process died
    assert dead is not None
    runner = RunnerProcess(pg_store, concurrency=2, lease_s=1.0, functions={"a": lambda view: note("late")})
    serving = asyncio.create_task(runner.serve())
    result = await wait(pg_store, board, timeout=60)
    runner.stop()
    stats = await serving
    assert result.end_reason == "agenda_empty" and result.state == {"notes": ["late"]}
    records = await pg_store.read_records(board)
    assert [r.invocation for r in records if r.kind == "proposal"] == [dead.invocation.id]
    assert sum(ends_run(r) for r in records) == 1
    status, _, claims = (await _rows(pg_store, board))[dead.invocation.id]
    assert (status, claims) == ("done", 2)  # claimed again only after the dead runner's lease
    assert (stats.claims, stats.commits, stats.boards_ended) == (1, 1, 1)


async def test_worker_filter_serves_only_the_named_workers(pg_schema_url: str, pg_store: Store) -> None:
    board = await submit(pg_store, PAIR)
    functions = {"a": lambda view: note("a"), "b": lambda view: note("b")}
    committed = asyncio.Event()

    def seen(line: str) -> None:
        if line.startswith("commit "):
            committed.set()

    only_a = RunnerProcess(pg_store, worker_names=["a"], functions=functions, lease_s=5, log_line=seen)
    serving_a = asyncio.create_task(only_a.serve())
    await asyncio.wait_for(committed.wait(), 60)
    rows = await _rows(pg_store, board)
    assert sorted(rows.values()) == [("done", None, 1), ("pending", None, 0)]
    assert (await pg_store.board_info(board)).status == "running"  # b's invocation waits for a b runner
    other = await open_store(pg_schema_url)
    try:
        only_b = RunnerProcess(other, worker_names=["b"], functions=functions, lease_s=5)
        serving_b = asyncio.create_task(only_b.serve())
        result = await wait(pg_store, board, timeout=60)
        only_a.stop()
        only_b.stop()
        stats_a, stats_b = await serving_a, await serving_b
    finally:
        await other.close()
    assert result.end_reason == "agenda_empty" and sorted(result.state["notes"]) == ["a", "b"]
    records = await pg_store.read_records(board)
    assert {r.worker for r in records if r.kind == "proposal"} == {"a", "b"}
    assert (stats_a.claims, stats_b.claims) == (1, 1)


def test_runner_process_refuses_sqlite(tmp_path: Any) -> None:
    async def go() -> None:
        store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
        try:
            with pytest.raises(RuntimeError, match="needs a postgresql:// store"):
                RunnerProcess(store)
        finally:
            await store.close()

    asyncio.run(go())


async def test_sigterm_lets_the_invocation_in_flight_finish(
    pg_schema_url: str, pg_store: Store, workers: Workers
) -> None:
    board = await submit(pg_store, NOTES_PAIR, task="slow", model="python:scale_models:fixed_model")
    w = workers.start(pg_schema_url, "--concurrency", "1", "--grace", "60", SLATEBOARD_SOAK_LATENCY_MS="2000")
    while not any(s == "claimed" for s, _, _ in (await _rows(pg_store, board)).values()):
        assert w.proc.poll() is None, w.output()
        await asyncio.sleep(0.05)
    w.signal(signal.SIGTERM)
    assert w.finish() == 0, w.output()
    out = w.output()
    assert "stopping: waiting up to 60 s for 1 invocation(s) in flight" in out
    assert out.count("commit board=") == 1  # the one in flight was committed; nothing claimed after
    rows = await _rows(pg_store, board)
    assert sorted(s for s, _, _ in rows.values()).count("done") == 1
    assert not any(s == "claimed" for s, _, _ in rows.values())


async def test_sigterm_after_the_grace_period_gives_the_claim_back(
    pg_schema_url: str, pg_store: Store, workers: Workers
) -> None:
    board = await submit(pg_store, NOTES_PAIR, task="slow", model="python:scale_models:fixed_model")
    w = workers.start(pg_schema_url, "--concurrency", "1", "--grace", "0", SLATEBOARD_SOAK_LATENCY_MS="60000")
    while not any(s == "claimed" for s, _, _ in (await _rows(pg_store, board)).values()):
        assert w.proc.poll() is None, w.output()
        await asyncio.sleep(0.05)
    w.signal(signal.SIGTERM)
    assert w.finish() == 0, w.output()
    assert "gave back 1 claim(s)" in w.output()
    rows = await _rows(pg_store, board)
    assert {s for s, _, _ in rows.values()} == {"pending"}  # claimable at once by another runner
    assert all(owner is None for _, owner, _ in rows.values())
    assert await pg_store.read_records(board) == []


async def test_a_step_in_flight_when_the_board_ended_appends_nothing(pg_schema_url: str, pg_store: Store) -> None:
    board = await submit(pg_store, NOTES_PAIR)
    claim = await pg_store.claim(None, owner="slow", lease_s=30, worker_names=["a"])
    assert claim is not None
    gate = asyncio.Event()

    async def slow(view: Any) -> Any:
        await gate.wait()
        return [{"op": "add", "path": "/notes/-", "value": {"author": "a", "text": "late"}}]

    other = await open_store(pg_schema_url)
    try:
        mine = BoardSession(pg_store, board, functions={"a": slow}, shared=True)
        ender = BoardSession(other, board, functions={"a": slow}, shared=True)
        await mine.load()
        await ender.load()
        step = asyncio.create_task(mine.step(claim.invocation, "slow"))
        assert await ender.finish("done") == "done" and ender.finished_here
        assert await mine.refresh()  # another task of this process caught up with the run-end record
        gate.set()
        outcome = await step
    finally:
        await other.close()
    assert outcome.record is None and outcome.dropped == "the board ended meanwhile"
    records = await pg_store.read_records(board)
    assert [(r.kind, r.reason) for r in records] == [("run", "done")]
    assert (await pg_store.board_info(board)).status == "done"


async def test_no_wakeup_is_lost_when_slots_free_up(pg_schema_url: str, pg_store: Store) -> None:
    # More work than slots, and an idle wait that would outlast the test's own limit: a runner
    # that waited for a notification it had already consumed would stall here.
    from scale_models import SleepyModel

    ids = [await submit(pg_store, NOTES_PAIR, task=f"t{i}") for i in range(6)]
    runner = RunnerProcess(pg_store, concurrency=3, lease_s=7200, idle_s=3600, model=SleepyModel("m", 1, 5, 1))
    serving = asyncio.create_task(runner.serve())
    try:
        results = [await wait(pg_store, board, timeout=120) for board in ids]
    finally:
        runner.stop()
        stats = await serving
    assert [r.end_reason for r in results] == ["done"] * 6
    assert stats.boards_ended == 6 and stats.errors == 0
