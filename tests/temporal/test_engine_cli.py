"""The engine's command line (issue 40): ``submit``/``worker --engine temporal``, ``approve`` on a
paused board that runs on Temporal, ``cancel``, and its bad input: an unreachable server, a
board submitted twice, a worker of another slateboard version; each one line, exit 2, nothing
created or committed twice."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from engine_testkit import MODEL, NOTES_PAIR, serving
from scale_testkit import invoke, one_line_error
from temporal_testkit import TemporalServer, free_port

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

from temporalio.client import WorkflowFailureError
from temporalio.exceptions import CancelledError

from _support.boards import notes_blueprint
from slateboard.runtime import verify_board, wait
from slateboard.stores import Store, open_store
from slateboard.temporal import BoardStart, EngineError, connect, start_board, stored_start, submit_board

WAIT_S = 120.0


@pytest.fixture
def blueprint_path(tmp_path: Path) -> Path:
    import yaml

    path = tmp_path / "pair.yaml"
    path.write_text(yaml.safe_dump(NOTES_PAIR), encoding="utf-8")
    return path


async def cli(*args: str) -> Any:
    """The CLI in-process, in a thread (it runs its own event loop)."""
    return await asyncio.to_thread(invoke, *args)


def queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


async def test_temporal_unreachable_is_one_line_exit_2_and_no_board(
    url: str, store: Store, blueprint_path: Path
) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = await cli(
        "submit", str(blueprint_path), "--engine", "temporal", "--temporal", address, "--store", url,
        "--task", "t", "--model", MODEL,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = one_line_error(result, 2)
    assert f"cannot reach Temporal at {address}" in line
    assert await store.list_boards() == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--engine", "kubernetes"], "--engine 'kubernetes': expected one of runners, temporal"),
        (["--engine", "temporal", "--temporal", "no-port"], "Temporal address 'no-port': expected HOST:PORT"),
        (["--engine", "temporal", "--temporal", "h:99999"], "expected HOST:PORT"),
        (["--engine", "temporal", "--task-queue", "a b"], "--task-queue 'a b': expected a name without spaces"),
        (["--engine", "temporal", "--task-queue", "q" * 300], "expected a name without spaces (1-200 characters)"),
    ],
)
async def test_bad_engine_arguments_are_one_line_exit_2(
    url: str, store: Store, blueprint_path: Path, args: list[str], expected: str
) -> None:
    result = await cli("submit", str(blueprint_path), *args, "--store", url, "--task", "t", "--model", MODEL)
    assert result.exit_code == 2, result.output
    assert expected in one_line_error(result, 2)
    assert await store.list_boards() == []
    served = await cli("worker", *args, "--store", url)
    assert served.exit_code == 2, served.output
    assert expected in one_line_error(served, 2)


async def test_submit_and_wait_on_the_cli(
    temporal_server: TemporalServer, url: str, store: Store, blueprint_path: Path
) -> None:
    q = queue()
    async with serving(temporal_server.address, store, q):
        submitted = await cli(
            "submit", str(blueprint_path), "--engine", "temporal", "--temporal", temporal_server.address,
            "--task-queue", q, "--store", url, "--task", "t", "--model", MODEL,
        )  # fmt: skip
        assert submitted.exit_code == 0, submitted.output
        board = submitted.output.strip()
        waited = await cli("wait", board, "--store", url, "--timeout", str(WAIT_S))
    assert waited.exit_code == 0, waited.output
    assert f"board {board} done: done" in waited.output
    assert (await verify_board(store, board)).ok


async def test_a_board_runs_once_at_a_time(temporal_server: TemporalServer, store: Store) -> None:
    client = await connect(temporal_server.address)
    q = queue()
    board = await submit_board(
        client, store, NOTES_PAIR, address=temporal_server.address, task_queue=q, task="t", model=MODEL
    )
    with pytest.raises(EngineError, match=f"board {board} already runs on Temporal"):
        await start_board(client, await stored_start(store, board), task_queue=q)
    async with serving(temporal_server.address, store, q):
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done"
    records = list(await store.read_records(board))
    assert sum(r.kind == "run" for r in records) == 1  # one run, ended once


async def test_a_worker_of_another_version_ends_the_board_failed_naming_both(
    temporal_server: TemporalServer, store: Store
) -> None:
    client = await connect(temporal_server.address)
    q = queue()
    from slateboard.runtime import submit

    board = await submit(store, NOTES_PAIR, task="t", model=MODEL)
    start = await stored_start(store, board)
    await start_board(client, BoardStart(board, "0.0.1", start.digest), task_queue=q)
    async with serving(temporal_server.address, store, q):
        await wait(store, board, timeout=WAIT_S)
    info = await store.board_info(board)
    assert info.status == "failed"
    assert "this worker runs slateboard" in (info.reason or "") and "submitted with slateboard 0.0.1" in (
        info.reason or ""
    )
    assert info.seq == 0  # nothing committed


async def test_a_worker_of_another_store_ends_the_workflow_with_a_named_error(
    temporal_server: TemporalServer, store: Store, tmp_path: Path
) -> None:
    client = await connect(temporal_server.address)
    q = queue()
    board = await submit_board(
        client, store, NOTES_PAIR, address=temporal_server.address, task_queue=q, task="t", model=MODEL
    )
    other = await open_store(f"sqlite:///{tmp_path / 'other.db'}")
    # The message names the worker's store; a store URL may carry a password (PostgreSQL), which
    # must reach neither the outcome nor Temporal's history.
    other.url = "postgresql://worker:s3cr3t-pw@db.internal:5432/boards"
    try:
        async with serving(temporal_server.address, other, q):
            handle = client.get_workflow_handle(f"slateboard-board-{board}")
            outcome = await asyncio.wait_for(handle.result(), WAIT_S)
            history = await handle.fetch_history()
    finally:
        await other.close()
    assert outcome["status"] == "failed"
    assert f"board {board} is not in this worker's store" in outcome["ended"]
    assert "postgresql://worker:" in outcome["ended"] and "s3cr3t-pw" not in outcome["ended"]
    assert "s3cr3t-pw" not in history.to_json()
    assert (await store.board_info(board)).seq == 0  # the board's own store: untouched


APPROVAL = notes_blueprint(
    name="approved-notes",
    max_text=None,
    workers={
        "a": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "b": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "decider": {"instruction": "Answer.", "reads": ["/**"], "writes": ["/answer"], "ops": ["add"]},
    },
    rules=NOTES_PAIR["rules"],
    approval=["/answer"],
)


async def test_approve_signals_the_paused_workflow_and_the_board_finishes(
    temporal_server: TemporalServer, url: str, store: Store
) -> None:
    client = await connect(temporal_server.address)
    q = queue()
    async with serving(temporal_server.address, store, q):
        board = await submit_board(
            client, store, APPROVAL, address=temporal_server.address, task_queue=q, task="t", model=MODEL
        )
        paused = await wait(store, board, timeout=WAIT_S)
        assert (await store.board_info(board)).status == "paused", paused.end_reason
        approved = await cli("approve", board, "--store", url)
        assert approved.exit_code == 0, approved.output
        assert "its Temporal workflow runs on" in approved.output
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done"
    assert isinstance(result.answer, str) and result.answer.endswith(" notes")
    records = list(await store.read_records(board))
    assert [r.kind for r in records].count("approval") == 1
    assert (await verify_board(store, board)).ok


async def test_cancel_interrupts_the_board_and_a_new_workflow_finishes_it(
    temporal_server: TemporalServer, url: str, store: Store
) -> None:
    client = await connect(temporal_server.address)
    q = queue()
    board = await submit_board(
        client, store, NOTES_PAIR, address=temporal_server.address, task_queue=q, task="t", model=MODEL
    )
    # No worker yet: the workflow waits for one; cancel it there.
    cancelled = await cli("cancel", board, "--store", url)
    assert cancelled.exit_code == 0, cancelled.output
    async with serving(temporal_server.address, store, q):
        handle = client.get_workflow_handle(f"slateboard-board-{board}")
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), WAIT_S)
        assert isinstance(failed.value.cause, CancelledError)
        info = await store.board_info(board)
        assert (info.status, info.reason) == ("running", "interrupted")
        assert not [i for i in await store.agenda(board) if i.status == "claimed"]  # claims given back
        await start_board(client, await stored_start(store, board), task_queue=q)
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done"
    assert (await verify_board(store, board)).ok


async def test_cancel_of_a_board_not_on_temporal_says_so(url: str, store: Store) -> None:
    from slateboard.runtime import submit

    board = await submit(store, NOTES_PAIR, task="t", model=MODEL)
    result = await cli("cancel", board, "--store", url)
    assert result.exit_code == 2, result.output
    assert f"board {board} does not run on Temporal" in one_line_error(result, 2)


@pytest.mark.slow
async def test_ctrl_c_while_following_cancels_the_workflow_and_leaves_the_board_resumable(
    temporal_server: TemporalServer, url: str, store: Store, blueprint_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal
    import subprocess
    import sys

    from scale_testkit import CLI, cli_env

    monkeypatch.setenv("SLATEBOARD_SOAK_LATENCY_MS", "3000")  # the in-process worker's model: slow
    q = queue()
    async with serving(temporal_server.address, store, q):
        proc = subprocess.Popen(
            [sys.executable, *CLI, "submit", str(blueprint_path), "--engine", "temporal", "--temporal",
             temporal_server.address, "--task-queue", q, "--store", url, "--task", "t", "--model", MODEL, "--wait"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )  # fmt: skip
        assert proc.stdout is not None
        board = await asyncio.to_thread(proc.stdout.readline)
        board = board.strip()
        while not [i for i in await store.agenda(board) if i.status == "claimed"]:
            await asyncio.sleep(0.1)  # a step is under way
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
        assert proc.returncode == 130, (out, err)
        assert (
            f"board {board}'s workflow is cancelled; resume it with: slateboard resume {board} --engine temporal" in err
        )
        for _ in range(300):
            info = await store.board_info(board)
            if info.reason == "interrupted":
                break
            await asyncio.sleep(0.1)
        assert (info.status, info.reason) == ("running", "interrupted")
        resumed = await cli(
            "resume", board, "--engine", "temporal", "--temporal", temporal_server.address, "--store", url
        )
        assert resumed.exit_code == 0, resumed.output
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done"
    assert (await verify_board(store, board)).ok


@pytest.mark.parametrize("option", [["--lease", "5"], ["--worker-timeout", "9"], ["--json"]])
async def test_runner_process_options_on_a_temporal_worker_are_refused(url: str, option: list[str]) -> None:
    result = await cli("worker", "--engine", "temporal", *option, "--store", url)
    assert result.exit_code == 2, result.output
    assert "for runner processes" in one_line_error(result, 2)


async def test_a_board_whose_stored_blueprint_is_not_the_submitted_one_is_failed_naming_both_digests(
    temporal_server: TemporalServer, store: Store
) -> None:
    from slateboard.runtime import submit

    client = await connect(temporal_server.address)
    q = queue()
    board = await submit(store, NOTES_PAIR, task="t", model=MODEL)
    start = await stored_start(store, board)
    await start_board(client, BoardStart(board, start.version, "0" * 64), task_queue=q)
    async with serving(temporal_server.address, store, q):
        await wait(store, board, timeout=WAIT_S)
    info = await store.board_info(board)
    assert info.status == "failed" and info.seq == 0  # nothing committed
    assert f"digest {start.digest[:12]}" in (info.reason or "") and "digest 000000000000" in (info.reason or "")
