"""Runner processes hold the spend limits a board was submitted with (issue 45, case 3): every
model call a ``RunnerProcess`` makes for the board is reserved against its ledgers and its
``max_cost`` cap; ``slateboard submit --ledger/--max-cost`` records them on the board."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest
from scale_testkit import invoke, one_line_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY, note_loop
from slateboard.runtime import RunnerProcess, submit, wait
from slateboard.runtime.ledger import SPEND_META, ledger_for, spend_meta
from slateboard.stores import Store, open_store

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
CALL = 320 / 1e6  # one call's cost at a dollar per million tokens
BP = note_loop("capped", until=6, limits={"prices": {"*": {"input": 1.0, "output": 1.0}}, "max_steps": 60})


async def _serve_until_ended(store: Store, board: str) -> str:
    runner = RunnerProcess(store, concurrency=1, lease_s=5.0)
    serving = asyncio.create_task(runner.serve())
    try:
        result = await wait(store, board, timeout=120)
    finally:
        runner.stop()
        await serving
    return result.end_reason


async def test_runner_processes_reserve_against_the_boards_ledger_and_cap(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))]).start()
    name = f"tenant_{uuid.uuid4().hex[:8]}"
    ledger = ledger_for(pg_store)
    await ledger.set_cap(name, 1.0)
    model = f"openai:m@{server.url}/v1"
    try:
        board = await submit(pg_store, BP, model=model, meta=spend_meta(None, [name]))
        await _serve_until_ended(pg_store, board)
        state = await ledger.state(name)
        assert state.spent == pytest.approx(6 * CALL) and state.reserved == 0
        sent = len(server.requests)
        capped = await submit(pg_store, BP, model=model, meta=spend_meta(0.001, []))
        assert await _serve_until_ended(pg_store, capped) == "budget:board"
        assert 0 < len(server.requests) - sent < 6  # stopped at the cap, before the notes were done
    finally:
        await server.close()


def test_submit_records_ledger_and_max_cost_on_the_board(pg_schema_url: str, blueprint_file: Path) -> None:
    bad = invoke("submit", str(blueprint_file), "--ledger", "nope", "--store", pg_schema_url)
    assert "'nope'" in one_line_error(bad, 2)
    assert one_line_error(invoke("submit", str(blueprint_file), "--max-cost", "-1", "--store", pg_schema_url), 2)
    name = f"tenant_{uuid.uuid4().hex[:8]}"

    async def check(board: str | None) -> dict[str, object]:
        store = await open_store(pg_schema_url)
        try:
            if board is None:
                await ledger_for(store).set_cap(name, 2.0)
                return {}
            return dict((await store.board_info(board)).meta)
        finally:
            await store.close()

    asyncio.run(check(None))
    made = invoke("submit", str(blueprint_file), "--ledger", name, "--max-cost", "0.5", "--store", pg_schema_url)
    assert made.exit_code == 0, made.output
    meta = asyncio.run(check(made.stdout.strip()))
    assert meta[SPEND_META] == {"max_cost": 0.5, "ledgers": [name]}
