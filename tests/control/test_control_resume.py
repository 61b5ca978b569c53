"""Issue 18: the control unit's state lives in the board's records, and runner processes ask the
board's control unit (not the agenda order) which invocation runs next.

Round robin over three workers whose agenda order differs from the round-robin order: the order
of committed workers is the same under the single-process Runner, under RunnerProcess (one or
two processes, memory store and PostgreSQL), and across a kill and a resume (the position
continues; no restart at the first worker)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.models import ScriptedModel
from slateboard.runtime import Runner, RunnerProcess, create_board, submit, wait
from slateboard.scheduling.control import RoundRobin, last_chosen, restore_control
from slateboard.stores import Store, open_store

# a writes with priority 5 and is asked again after each of its notes while it has fewer than 4:
# agenda order runs a, a, a, a, b, c, c; round robin alternates a, b, c, a, c, a, a.
BP: dict[str, Any] = {
    "name": "turns",
    "schema": {
        "type": "object",
        "properties": {w: {"type": "array", "items": {"type": "string"}} for w in ("a", "b", "c")},
    },
    "initial_state": {"a": [], "b": [], "c": []},
    "workers": {w: {"reads": [f"/{w}"], "writes": [f"/{w}/-"]} for w in ("a", "b", "c")},
    "rules": [
        {"on": {"op": "start"}, "invoke": "a", "priority": 5},
        {"on": {"op": "start"}, "invoke": "b"},
        {"on": {"op": "start"}, "invoke": "c"},
        {"on": {"op": "add", "path": "/a/-"}, "when": "size(state.a) < 4", "invoke": "a", "priority": 5},
        {"on": {"op": "add", "path": "/c/-"}, "when": "size(state.c) < 2", "invoke": "c"},
    ],
}


def functions(calls: list[str], on_call: Callable[[int], Any] | None = None) -> dict[str, Any]:
    def make(name: str) -> Any:
        async def propose(view: Any) -> Any:
            calls.append(name)
            if on_call is not None:
                await on_call(len(calls))
            return [{"op": "add", "path": f"/{name}/-", "value": f"{name}{len(calls)}"}]

        return propose

    return {w: make(w) for w in ("a", "b", "c")}


async def committed(store: Store, board: str) -> list[str]:
    return [r.worker or "" for r in await store.read_records(board) if r.kind == "proposal" and r.outcome == "accepted"]


async def runner_order(store: Store, control: str) -> list[str]:
    board = await create_board(store, BP)
    # One step at a time: the order compared here is the control unit's, not an interleaving
    # (with agenda order these independent workers would otherwise run at once: parallel="auto").
    result = await Runner(store, board, functions=functions([]), control=control, parallel=1).run()
    assert result.end_reason == "agenda_empty"
    return await committed(store, board)


async def test_round_robin_order_differs_from_agenda_order_and_is_deterministic() -> None:
    store = await open_store("memory://")
    agenda = await runner_order(store, "agenda")
    robin = await runner_order(store, "round-robin")
    assert agenda == ["a", "a", "a", "a", "b", "c", "c"]
    assert robin == ["a", "b", "c", "a", "c", "a", "a"]
    assert robin == await runner_order(store, "round-robin")
    await store.close()


def test_a_choice_that_never_committed_does_not_move_the_position() -> None:
    unit = RoundRobin(["a", "b", "c"], last="b")
    restore_control(unit, [])
    assert unit.last is None  # nothing committed yet: the start, whatever the object said


async def test_a_killed_run_resumes_the_round_robin_where_it_was(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    store = await open_store(url)
    expected = await runner_order(store, "round-robin")
    board = await create_board(store, BP)
    calls: list[str] = []
    runner_task: asyncio.Task[Any] | None = None

    async def kill_at_the_third_call(n: int) -> None:
        if n == 3:  # a and b are in the log; c's turn is in flight (a restart would run a)
            assert runner_task is not None
            runner_task.cancel()
            await asyncio.sleep(3600)

    first = Runner(store, board, functions=functions(calls, kill_at_the_third_call), control="round-robin", lease_s=0.2)
    runner_task = asyncio.create_task(first.run())
    with contextlib.suppress(asyncio.CancelledError):
        await runner_task
    assert await committed(store, board) == ["a", "b"]
    records = await store.read_records(board)
    assert last_chosen(records, ["a", "b", "c"]) == "b"
    assert all("round robin" in str(r.meta.get("control")) for r in records if r.kind == "proposal")
    await store.close()
    await asyncio.sleep(0.3)  # the dead run's lease has expired: the resumed run claims at once

    store = await open_store(url)  # another process resumes the board
    result = await Runner(store, board, functions=functions([]), control="round-robin").run()
    assert result.end_reason == "agenda_empty"
    assert await committed(store, board) == expected  # a's turn, not a restart at the first worker
    await store.close()


# -- runner processes ---------------------------------------------------------------------------
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def pg_skip_reason(dsn: str) -> str | None:
    """None when the PostgreSQL server at ``dsn`` answers, else why the case is skipped."""
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure means: no server for this case
        return f"PostgreSQL at {dsn} does not answer ({type(exc).__name__}: {exc})"
    return None


@pytest.fixture(params=["memory", "postgresql"])
async def shared_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        store = await open_store("memory://")
        yield store
        await store.close()
        return
    dsn = os.environ.get("SLATEBOARD_TEST_PG") or PG_DEFAULT
    if reason := pg_skip_reason(dsn):
        print(reason)
        pytest.skip(reason)
    psycopg = pytest.importorskip("psycopg")
    schema = f"sbt_ctl_{uuid.uuid4().hex[:12]}"
    store = await open_store(f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}")
    try:
        yield store
    finally:
        await store.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def serve_until_ended(store: Store, board: str, processes: list[RunnerProcess]) -> None:
    tasks = [asyncio.create_task(p.serve()) for p in processes]
    try:
        await wait(store, board, timeout=60)
    finally:
        for p in processes:
            p.stop()
        await asyncio.gather(*tasks)


@pytest.mark.parametrize("processes", [1, 2])
async def test_runner_processes_commit_in_the_order_the_runner_does(shared_store: Store, processes: int) -> None:
    expected = await runner_order(shared_store, "round-robin")
    board = await submit(shared_store, BP, control="round-robin")
    fleet = [
        RunnerProcess(shared_store, concurrency=2, functions=functions([]), lease_s=5, grace_s=1, owner=f"r{i}")
        for i in range(processes)
    ]
    await serve_until_ended(shared_store, board, fleet)
    assert await committed(shared_store, board) == expected
    info = await shared_store.board_info(board)
    assert info.status == "done" and (info.reason or "").startswith("agenda_empty")
    # Each choice is the control unit's, and says so in the record.
    reasons = [r.meta.get("control") for r in await shared_store.read_records(board) if r.kind == "proposal"]
    assert all(isinstance(x, str) and x.startswith("round robin") for x in reasons)


async def test_a_killed_runner_process_is_continued_by_another_at_the_same_turn(shared_store: Store) -> None:
    expected = await runner_order(shared_store, "round-robin")
    board = await submit(shared_store, BP, control="round-robin")
    first_task: asyncio.Task[Any] | None = None

    async def kill_at_the_third_call(n: int) -> None:
        if n == 3:  # a and b are in the log; c's turn is in flight (a restart would run a)
            assert first_task is not None
            first_task.cancel()
            await asyncio.sleep(3600)

    first = RunnerProcess(
        shared_store, concurrency=1, functions=functions([], kill_at_the_third_call), lease_s=1, grace_s=0.05
    )
    first_task = asyncio.create_task(first.serve())
    with contextlib.suppress(asyncio.CancelledError):
        await first_task
    assert await committed(shared_store, board) == ["a", "b"]
    second = RunnerProcess(shared_store, concurrency=1, functions=functions([]), lease_s=1, grace_s=1)
    await serve_until_ended(shared_store, board, [second])
    assert await committed(shared_store, board) == expected


async def test_submit_rejects_an_unknown_control_unit() -> None:
    store = await open_store("memory://")
    with pytest.raises(ValueError, match="unknown control unit 'lottery'"):
        await submit(store, BP, control="lottery")
    with pytest.raises(ValueError, match="needs a model"):
        await submit(store, BP, control="coordinator")
    await store.close()


def test_the_cli_submits_a_board_with_its_control_unit(tmp_path: Path) -> None:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(BP), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    cli = CliRunner()
    done = cli.invoke(app, ["submit", str(path), "--store", url, "--control", "round-robin", "--json"])
    assert done.exit_code == 0, done.output
    board = json.loads(done.stdout)["board_id"]

    async def meta() -> Any:
        store = await open_store(url)
        try:
            return (await store.board_info(board)).meta
        finally:
            await store.close()

    assert asyncio.run(meta())["control"] == "round-robin"
    bad = cli.invoke(app, ["submit", str(path), "--store", url, "--control", "lottery"])
    assert bad.exit_code == 2 and "--control: expected one of agenda, round-robin, coordinator" in bad.stderr


def test_run_refuses_an_unknown_control_unit_before_creating_a_board(tmp_path: Path) -> None:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(BP), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'run.db'}"
    bad = CliRunner().invoke(app, ["run", str(path), "--store", url, "--control", "lottery"])
    assert bad.exit_code == 2 and "--control: expected one of agenda, round-robin, coordinator" in bad.stderr

    async def boards() -> int:
        store = await open_store(url)
        try:
            return len(await store.list_boards())
        finally:
            await store.close()

    assert asyncio.run(boards()) == 0


def prefer_later_workers(messages: Any) -> str:
    """A coordinator's answer: c's invocation when there is one, else b's, else a's."""
    text = "\n".join(m.content for m in messages)
    for worker in ("c", "b", "a"):
        if f"worker={worker} " in text:
            return json.dumps({"choice": worker, "terminate": False, "reason": f"{worker} first"})
    return json.dumps({"choice": 1, "terminate": False, "reason": "the first"})


def coordinator_model() -> ScriptedModel:
    return ScriptedModel([prefer_later_workers], cycle=True, name="scripted-coordinator")


async def test_a_coordinator_board_runs_in_its_order_and_its_tokens_are_logged(shared_store: Store) -> None:
    board = await create_board(shared_store, BP)
    model = coordinator_model()
    result = await Runner(shared_store, board, functions=functions([]), control="coordinator", model=model).run()
    expected = await committed(shared_store, board)
    assert expected[:3] == ["c", "c", "b"] and expected != ["a", "a", "a", "a", "b", "c", "c"]

    board = await submit(shared_store, BP, control="coordinator", model="python:test_control_resume:coordinator_model")
    process = RunnerProcess(shared_store, concurrency=2, functions=functions([]), lease_s=5, grace_s=1)
    await serve_until_ended(shared_store, board, [process])
    assert await committed(shared_store, board) == expected
    records = await shared_store.read_records(board)
    spent = [r for r in records if r.kind == "spend"]
    assert spent and all(r.usage.component == "coordinator" for r in spent)
    ended = await wait(shared_store, board)
    assert ended.usage["coordinator"].tokens_in == sum(r.usage.tokens_in for r in spent) > 0
    assert sum(u.tokens_in + u.tokens_out for u in ended.usage.values()) == sum(
        r.usage.tokens_in + r.usage.tokens_out for r in records
    )
    assert result.usage["coordinator"].tokens_in > 0


async def test_runner_processes_serving_different_workers_keep_the_boards_order(shared_store: Store) -> None:
    expected = await runner_order(shared_store, "round-robin")
    board = await submit(shared_store, BP, control="round-robin")
    fleet = [
        RunnerProcess(shared_store, concurrency=2, functions=functions([]), lease_s=5, worker_names=names)
        for names in (["a", "b"], ["c"])
    ]
    await serve_until_ended(shared_store, board, fleet)
    assert await committed(shared_store, board) == expected
