"""``Team.blackboard`` on the Temporal engine (issue 40), on a real dev server: a team submitted
by reference (``engine_teams:pair``) plays one round per activity on the workers and ends with
the answer and the log a run in one process writes; a worker SIGKILLed mid-round is replaced and
the round finished once; an entry held for approval pauses the workflow until ``slateboard
approve``; ``slateboard cancel`` interrupts the board and ``resume --engine temporal`` finishes
it; and the bad input: a reference that imports nothing or names no Team, a worker whose team is
not the submitted one, ``--team`` without the engine or with a blueprint."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_testkit import serving
from scale_testkit import Workers, invoke, one_line_error
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

import engine_teams

from slateboard.kernel.record import Record
from slateboard.runtime import verify_board, wait
from slateboard.stores import Store
from slateboard.temporal import (
    EngineError,
    TeamRefError,
    TeamStart,
    connect,
    start_board,
    stored_start,
    submit_team,
    team_result,
)

HERE = Path(__file__).resolve().parent
WAIT_S = 180.0
PAIR = "engine_teams:pair"


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Workers]:
    workers = Workers(tmp_path)
    yield workers
    workers.kill_all()


def queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


async def cli(*args: str) -> Any:
    """The CLI in-process, in a thread (it runs its own event loop)."""
    return await asyncio.to_thread(invoke, *args)


def projection(records: list[Record]) -> list[tuple[Any, ...]]:
    """What a run decided, without what differs between runs (times, usage, who ran it)."""
    return [(r.kind, r.outcome, r.worker, r.invocation, r.patch, r.stage, r.reason, r.state_after) for r in records]


async def reference(store: Store, team: str = PAIR) -> tuple[Any, list[tuple[Any, ...]]]:
    """The result and log of the same team run in this process."""
    result = await getattr(engine_teams, team.split(":")[1])(store).run("count")
    return result, projection(list(await store.read_records(result.board_id)))


async def check_played_once(store: Store, board: str, expected: list[tuple[Any, ...]], rounds: int = 4) -> None:
    records = list(await store.read_records(board))
    assert [r.seq for r in records] == list(range(1, len(records) + 1))  # contiguous: none lost, none twice
    decided = Counter(r.invocation for r in records if r.kind == "control")
    assert decided == {f"round-{n}": 1 for n in range(1, rounds + 1)}, decided  # each round decided once
    turns = Counter(r.invocation for r in records if r.kind == "proposal")
    assert all(n == 1 for n in turns.values()), turns  # each turn committed once
    assert projection(records) == expected
    assert (await verify_board(store, board)).ok


@pytest.mark.parametrize(
    ("team", "answer", "end", "rounds"),
    [(PAIR, "3 notes", "terminated", 4), ("engine_teams:parallel", "4 notes", "rounds_played", 2)],
)
async def test_a_team_runs_on_the_engine_to_the_answer_and_log_of_one_process(
    temporal_server: TemporalServer, store: Store, team: str, answer: str, end: str, rounds: int
) -> None:
    expected_result, expected = await reference(store, team)
    q = queue()
    async with serving(temporal_server.address, store, q):
        board = await submit_team(team, "count", store=store, address=temporal_server.address, task_queue=q)
        result = await team_result(team, board, store=store, timeout=WAIT_S)
    assert result.output == expected_result.output == answer
    assert (result.end_reason, result.rounds, result.board_id) == (end, rounds, board)
    assert result.state == expected_result.state
    await check_played_once(store, board, expected, rounds)
    info = await store.board_info(board)
    assert info.status == "done" and info.meta["team"] == {"ref": team}
    assert info.meta["engine"]["task_queue"] == q


@pytest.mark.slow
async def test_a_worker_killed_mid_round_is_replaced_and_the_round_played_once(
    temporal_server: TemporalServer, url: str, store: Store, pool: Workers
) -> None:
    expected_result, expected = await reference(store)
    q = queue()
    args = ["--engine", "temporal", "--temporal", temporal_server.address, "--task-queue", q]
    first = pool.start(url, *args, cwd=HERE, SLATEBOARD_TEAM_LATENCY_MS="600")
    first.wait_for("serving")
    board = await submit_team(PAIR, "count", store=store, address=temporal_server.address, task_queue=q)
    # Mid-round: round 2's decision is logged and its turn claimed, its model call under way.
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        claimed = [i.id for i in await store.agenda(board, ("claimed",))]
        if claimed == ["round-2"]:
            break
        await asyncio.sleep(0.02)
    assert claimed == ["round-2"] and (await store.board_info(board)).seq == 3
    first.signal(signal.SIGKILL)
    first.finish()
    second = pool.start(url, *args, cwd=HERE, SLATEBOARD_TEAM_LATENCY_MS="50")
    second.wait_for("serving")
    result = await team_result(PAIR, board, store=store, timeout=WAIT_S)
    second.signal(signal.SIGTERM)
    assert second.finish() == 0, second.output()[-2000:]
    assert result.output == expected_result.output and result.end_reason == "terminated"
    await check_played_once(store, board, expected)
    assert f"board {board} ended: terminated" in second.output()


async def test_an_entry_held_for_approval_pauses_the_workflow_until_approve(
    temporal_server: TemporalServer, url: str, store: Store
) -> None:
    q = queue()
    ref = "engine_teams:held"
    async with serving(temporal_server.address, store, q):
        board = await submit_team(ref, "count", store=store, address=temporal_server.address, task_queue=q)
        for n in (1, 2):
            paused = await team_result(ref, board, store=store, timeout=WAIT_S)
            assert paused.end_reason.startswith("paused: awaiting approval") and paused.rounds == n
            assert (await store.board_info(board)).status == "paused"
            approved = await cli("approve", board, "--store", url)
            assert approved.exit_code == 0, approved.output
            assert "its Temporal workflow runs on" in approved.output
            while (await store.board_info(board)).status == "paused":
                await asyncio.sleep(0.05)
        result = await team_result(ref, board, store=store, timeout=WAIT_S)
    assert result.end_reason == "rounds_played" and result.output == "2 notes"
    assert [e["content"] for e in result.state["public"][1:]] == ["note 1 by a", "note 2 by a"]
    records = list(await store.read_records(board))
    assert [r.kind for r in records].count("approval") == 2
    assert (await verify_board(store, board)).ok


async def test_cancel_interrupts_a_team_board_and_resume_finishes_it(
    temporal_server: TemporalServer, url: str, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected_result, expected = await reference(store)
    monkeypatch.setenv("SLATEBOARD_TEAM_LATENCY_MS", "1500")  # the in-process worker's models: slow
    q = queue()
    client = await connect(temporal_server.address)
    async with serving(temporal_server.address, store, q):
        board = await submit_team(PAIR, "count", store=store, client=client, task_queue=q)
        while (await store.board_info(board)).seq < 1:
            await asyncio.sleep(0.05)  # round 1 decided: a round is under way
        cancelled = await cli("cancel", board, "--store", url)
        assert cancelled.exit_code == 0, cancelled.output
        deadline = time.monotonic() + WAIT_S
        while (info := await store.board_info(board)).reason != "interrupted" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert (info.status, info.reason) == ("running", "interrupted")
        assert (await store.board_info(board)).seq < 9  # the run had not ended
        monkeypatch.setenv("SLATEBOARD_TEAM_LATENCY_MS", "0")  # the resumed run: quick
        assert isinstance(await stored_start(store, board), TeamStart)
        resumed = await cli(
            "resume", board, "--engine", "temporal", "--temporal", temporal_server.address, "--store", url
        )
        assert resumed.exit_code == 0, resumed.output
        result = await team_result(PAIR, board, store=store, timeout=WAIT_S)
    assert result.output == expected_result.output and result.end_reason == "terminated"
    await check_played_once(store, board, expected)


@pytest.mark.parametrize("ref", ["engine_teams:nowhere", "no_such_module_x:team", "engine_teams:NOT_A_TEAM", "pair"])
async def test_a_reference_that_gives_no_team_is_refused_before_anything_is_created(
    temporal_server: TemporalServer, url: str, store: Store, ref: str
) -> None:
    with pytest.raises(TeamRefError, match=f"team '{ref}'"):
        await submit_team(ref, "count", store=store, address=temporal_server.address, task_queue=queue())
    result = await cli(
        "submit", "--team", ref, "--engine", "temporal", "--temporal", temporal_server.address, "--store", url,
        "--task", "count",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"team '{ref}'" in one_line_error(result, 2)
    assert await store.list_boards() == []


@pytest.mark.parametrize(
    ("ref", "digest", "expected"),
    [
        ("engine_teams:gone", None, "cannot import engine_teams:gone"),
        (PAIR, "0" * 64, "digest 000000000000"),
    ],
)
async def test_a_worker_that_cannot_rebuild_the_submitted_team_fails_the_board_committing_nothing(
    temporal_server: TemporalServer, store: Store, ref: str, digest: str | None, expected: str
) -> None:
    client = await connect(temporal_server.address)
    board = await submit_team(PAIR, "count", store=store, client=client, task_queue=queue())  # no worker serves it
    await client.get_workflow_handle(f"slateboard-board-{board}").terminate()
    start = await stored_start(store, board)
    assert isinstance(start, TeamStart)
    q = queue()
    await start_board(client, TeamStart(board, start.version, ref, digest or start.digest), task_queue=q)
    async with serving(temporal_server.address, store, q):
        await wait(store, board, timeout=WAIT_S)
    info = await store.board_info(board)
    assert info.status == "failed" and info.seq == 0, info  # nothing committed
    assert expected in (info.reason or "")
    if digest is not None:
        assert f"digest {start.digest[:12]}" in (info.reason or "")  # both named
    with pytest.raises(EngineError, match="no run of its team ended"):
        await team_result(PAIR, board, store=store, timeout=WAIT_S)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--team", PAIR, "--task", "t"], f"--team {PAIR} runs on the Temporal engine: add --engine temporal"),
        (["pair.yaml", "--team", PAIR, "--engine", "temporal", "--task", "t"], "--team takes no blueprint"),
        (["--team", PAIR, "--engine", "temporal"], "--team needs --task"),
        (["--team", PAIR, "--engine", "temporal", "--task", "t", "--model", "m"], "--model: not for --team"),
        (["--engine", "temporal", "--task", "t"], "submit needs a blueprint"),
    ],
)
async def test_bad_team_arguments_are_one_line_exit_2(url: str, store: Store, args: list[str], expected: str) -> None:
    result = await cli("submit", *args, "--store", url)
    assert result.exit_code == 2, result.output
    assert expected in one_line_error(result, 2)
    assert await store.list_boards() == []
