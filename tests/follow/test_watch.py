"""``watch``: a board's records in seq order from another process, resumable, on every store."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scale_testkit import Workers, cli_env, invoke, one_line_error

from slateboard.kernel.record import Record
from slateboard.runtime import WatchPastEnd, watch
from slateboard.stores import BoardNotFound, open_store

MODEL = "python:scale_models:fixed_model"


def submit(url: str, blueprint_file: Path, task: str = "count") -> str:
    result = invoke("submit", str(blueprint_file), "--task", task, "--model", MODEL, "--store", url)
    assert result.exit_code == 0, result.output
    return str(result.stdout.strip())


async def collect(url: str, board: str, after: int = 0, limit: int | None = None) -> list[Record]:
    store = await open_store(url)
    try:
        out: list[Record] = []
        async for record in watch(store, board, after=after):
            out.append(record)
            if limit is not None and len(out) == limit:
                break
        return out
    finally:
        await store.close()


async def whole_log(url: str, board: str) -> tuple[list[Record], str]:
    store = await open_store(url)
    try:
        return await store.read_records(board), (await store.board_info(board)).status
    finally:
        await store.close()


def assert_in_order(seen: list[Record], log: list[Record], after: int = 0) -> None:
    assert [r.seq for r in seen] == list(range(after + 1, len(log) + 1))
    assert [r.hash for r in seen] == [r.hash for r in log[after:]]


RUN_ONE = """
import asyncio, sys
from slateboard.runtime import Runner, resolve_runner_model
from slateboard.stores import open_store
async def main():
    store = await open_store(sys.argv[1])
    try:
        info = await store.board_info(sys.argv[2])
        await Runner(store, sys.argv[2], model=resolve_runner_model(str(info.meta["model"]))).run()
    finally:
        await store.close()
asyncio.run(main())
"""


def test_watch_follows_a_board_run_by_another_process_on_sqlite(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board = submit(url, blueprint_file)
    # a second process runs the board slowly (50 ms a model call) while this one watches it
    proc = subprocess.Popen([sys.executable, "-c", RUN_ONE, url, board], env=cli_env(SLATEBOARD_SOAK_LATENCY_MS="50"))
    try:
        seen = asyncio.run(collect(url, board))
    finally:
        assert proc.wait(timeout=120) == 0
    log, status = asyncio.run(whole_log(url, board))
    assert status == "done" and len(log) >= 7
    assert_in_order(seen, log)


def test_watch_follows_a_worker_process_on_postgresql(
    pg_follow_url: str, blueprint_file: Path, follow_workers: Workers
) -> None:
    board = submit(pg_follow_url, blueprint_file)
    runner = follow_workers.start(pg_follow_url, SLATEBOARD_SOAK_LATENCY_MS="30")

    async def first_then_rest() -> tuple[list[Record], list[Record]]:
        head = await collect(pg_follow_url, board, limit=2)  # stop early, as a dropped connection would
        rest = await collect(pg_follow_url, board, after=head[-1].seq)  # resume from the last seq seen
        return head, rest

    head, rest = asyncio.run(first_then_rest())
    log, status = asyncio.run(whole_log(pg_follow_url, board))
    assert status == "done"
    assert_in_order(head + rest, log)
    runner.signal(2)
    runner.finish()


def test_resuming_from_every_seq_loses_and_repeats_nothing(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board = submit(url, blueprint_file)
    subprocess.run([sys.executable, "-c", RUN_ONE, url, board], env=cli_env(SLATEBOARD_SOAK_LATENCY_MS="1"), check=True)
    log, _ = asyncio.run(whole_log(url, board))
    for after in range(len(log) + 1):
        assert_in_order(asyncio.run(collect(url, board, after=after)), log, after)


def test_watch_on_memory_wakes_for_appends_in_process(blueprint_file: Path) -> None:
    from slateboard.runtime import Runner
    from slateboard.runtime import submit as submit_board
    from slateboard.stores import MemoryStore

    async def go() -> tuple[list[Record], list[Record]]:
        store = MemoryStore()
        board = await submit_board(store, json.loads(blueprint_file.read_text()), task="count", model=MODEL)
        from slateboard.runtime import resolve_runner_model

        watcher = asyncio.create_task(_drain(store, board))
        await Runner(store, board, model=resolve_runner_model(MODEL)).run()
        return await watcher, await store.read_records(board)

    seen, log = asyncio.run(go())
    assert_in_order(seen, log)


async def _drain(store: Any, board: str) -> list[Record]:
    return [r async for r in watch(store, board)]


def test_cli_watch_prints_every_record_and_resumes(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board = submit(url, blueprint_file)
    subprocess.run([sys.executable, "-c", RUN_ONE, url, board], env=cli_env(SLATEBOARD_SOAK_LATENCY_MS="1"), check=True)
    log, _ = asyncio.run(whole_log(url, board))
    lines = invoke("watch", board[:8], "--store", url).stdout.splitlines()
    assert [int(line.split()[0]) for line in lines] == [r.seq for r in log]
    assert lines[0].split()[1] == f"v{log[0].version}" and log[0].kind in lines[0]
    data = [json.loads(x) for x in invoke("watch", board, "--store", url, "--json", "--after", "3").stdout.splitlines()]
    assert [d["hash"] for d in data] == [r.hash for r in log[3:]]
    assert invoke("watch", board, "--store", url, "--after", str(len(log))).stdout == ""


@pytest.mark.parametrize("after", ["-1", "999"])
def test_cli_watch_after_outside_the_log(tmp_path: Path, blueprint_file: Path, after: str) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board = submit(url, blueprint_file)
    before = asyncio.run(whole_log(url, board))
    line = one_line_error(invoke("watch", board, "--store", url, "--after", after), 2)
    assert f"--after {after}" in line and board in line
    assert asyncio.run(whole_log(url, board)) == before  # nothing written


def test_cli_watch_of_an_unknown_board(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    submit(url, blueprint_file)
    line = one_line_error(invoke("watch", "nosuchboard", "--store", url), 2)
    assert "'nosuchboard'" in line


def test_python_watch_errors(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    board = submit(url, blueprint_file)
    with pytest.raises(BoardNotFound):
        asyncio.run(collect(url, "nosuchboard"))
    with pytest.raises(WatchPastEnd, match=r"--after 5 is outside board"):
        asyncio.run(collect(url, board, after=5))
