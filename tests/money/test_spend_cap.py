"""A hard spend cap that holds (issue 33): each LLM call's worst case is reserved before it is
made, a call that does not fit is never sent (the loopback fake's request count proves it), and the
board ends ``budget:<ledger>`` (exhausted). Settlement uses the provider's usage, or the worst case
when it reports none (and the record says so)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY, add_note, note_loop
from slateboard.errors import InvalidInput
from slateboard.runtime import Runner, create_board
from slateboard.runtime.ledger import MemoryLedger
from slateboard.stores import open_store

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
PRICES = {"*": {"input": 1.0, "output": 1.0}}  # a dollar per million tokens, any model
BP = note_loop("capped", until=30, limits={"prices": PRICES, "max_steps": 60})


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))]).start()
    yield server
    await server.close()


async def _run(server: StubServer, **kw: Any) -> tuple[Any, list[Any]]:
    store = await open_store("memory://")
    board = await create_board(store, BP)
    runner = Runner(store, board, model=f"openai:stub-model@{server.url}/v1", parallel=1, **kw)
    result = await runner.run()
    records = await store.read_records(board)
    await store.close()
    return result, records


async def test_without_a_cap_the_run_goes_to_its_end(fake: StubServer) -> None:
    result, _ = await _run(fake)
    assert len(result.state["notes"]) == 30 and len(fake.requests) == 30
    assert result.cost_usd == pytest.approx(30 * 320 / 1e6)


async def test_max_cost_makes_no_request_beyond_the_cap_and_ends_budget(fake: StubServer) -> None:
    cap = 0.004  # ~12 calls at $0.00032 each, but the worst case (prompt bytes + max_tokens) is reserved
    result, records = await _run(fake, max_cost=cap)
    assert result.end_reason == "budget:board" and result.end_status == "exhausted"
    made = len(fake.requests)
    assert 0 < made < 30
    # Every request made was booked at its real usage, and stayed under the cap.
    assert result.cost_usd == pytest.approx(made * 320 / 1e6) and result.cost_usd <= cap
    # The refused call is in the log, was never sent, and says why.
    refused = [r for r in records if "budget:board" in json.dumps(r.meta)]
    assert refused and all(r.usage.tokens_in == 0 for r in refused)
    assert sum(1 for r in records if r.usage.tokens_in) == made


async def test_a_provider_without_usage_is_settled_at_its_worst_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY))]).start()
    try:
        result, records = await _run(server, max_cost=0.004)
    finally:
        await server.close()
    assert result.end_reason == "budget:board"
    said = [r for r in records if r.meta.get("spend_settled")]
    assert said and "worst case" in str(said[0].meta["spend_settled"])
    # Worst-case settlement is much dearer than 320 tokens: fewer calls fit than with usage.
    assert 0 < len(server.requests) < 12


async def test_a_shared_ledger_also_caps_the_run(fake: StubServer) -> None:
    shared = MemoryLedger()
    await shared.set_cap("tenant", 0.003)
    result, _ = await _run(fake, max_cost=1.0, ledgers=[(shared, "tenant")])
    assert result.end_reason == "budget:tenant"
    state = await shared.state("tenant")
    assert state.spent <= 0.003 and state.reserved == 0
    assert state.spent == pytest.approx(len(fake.requests) * 320 / 1e6)


@pytest.mark.parametrize("bad", [-1.0, 0, float("nan"), float("inf"), "5", True])
def test_a_bad_cap_is_refused_naming_it(bad: Any) -> None:
    with pytest.raises(InvalidInput, match="max_cost"):
        Runner(None, "b", max_cost=bad)  # type: ignore[arg-type]


async def _cli(tmp_path: Path, server: StubServer, *args: str) -> tuple[int, str, str]:
    import asyncio
    import os

    bp = tmp_path / "capped.yaml"
    bp.write_text(json.dumps(BP), encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from slateboard.cli import main; main()",
        "run",
        str(bp),
        "--model",
        f"openai:stub-model@{server.url}/v1",
        "--store",
        "memory://",
        "--parallel",
        "1",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-secret"},
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cli_max_cost_stops_before_the_cap_and_reports_the_cost(fake: StubServer, tmp_path: Path) -> None:
    _code, out, err = await _cli(tmp_path, fake, "--max-cost", "0.004", "--json")
    data = json.loads(out)
    assert data["end_reason"] == "budget:board" and data["end_status"] == "exhausted", err
    made = len(fake.requests)
    assert 0 < made < 30
    assert data["cost_usd"] == pytest.approx(made * 320 / 1e6) and data["cost_usd"] <= 0.004


@pytest.mark.parametrize("cap", ["0.004", "0.000001"])  # stopped mid-run; refused from the first call
async def test_cli_run_stopped_by_its_cap_exits_2_with_one_line(fake: StubServer, tmp_path: Path, cap: str) -> None:
    code, out, err = await _cli(tmp_path, fake, "--max-cost", cap, "--json")
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "budget:board" in lines[0] and "--max-cost" in lines[0], err
    assert json.loads(out)["end_reason"] == "budget:board"  # the result is still printed
    if cap == "0.000001":
        assert fake.requests == []


@pytest.mark.parametrize("bad", ["-1", "abc", "0", "inf"])
async def test_cli_bad_cap_is_a_one_line_usage_error(fake: StubServer, tmp_path: Path, bad: str) -> None:
    code, _out, err = await _cli(tmp_path, fake, "--max-cost", bad)
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "--max-cost" in lines[0] and repr(bad) in lines[0]
    assert fake.requests == []  # nothing ran


async def test_two_boards_on_one_postgres_ledger_never_exceed_it_together(fake: StubServer) -> None:
    import os
    import uuid

    from slateboard.runtime.ledger import PostgresLedger

    dsn = os.environ.get("SLATEBOARD_TEST_PG")
    if not dsn:
        pytest.skip("SLATEBOARD_TEST_PG not set: no PostgreSQL to share a ledger on")
    table = f"ledger_cap_{uuid.uuid4().hex[:10]}"
    shared = PostgresLedger(dsn, table=table)
    await shared.set_cap("tenant", 0.005)
    try:
        import asyncio

        first, second = await asyncio.gather(
            _run(fake, ledgers=[(shared, "tenant")]), _run(fake, ledgers=[(shared, "tenant")])
        )
        assert first[0].end_reason == second[0].end_reason == "budget:tenant"
        state = await shared.state("tenant")
        assert state.reserved == 0 and state.spent <= 0.005
        assert state.spent == pytest.approx(len(fake.requests) * 320 / 1e6)
        assert (first[0].cost_usd or 0) + (second[0].cost_usd or 0) == pytest.approx(state.spent)
    finally:
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f"DROP TABLE IF EXISTS {table}")


async def test_cli_summary_shows_the_cost(fake: StubServer, tmp_path: Path) -> None:
    _code, out, err = await _cli(tmp_path, fake)
    assert len(fake.requests) == 30, err
    assert f"${30 * 320 / 1e6:.4f}" in out and "cost" in out


async def test_a_coordinator_control_unit_reserves_its_calls_too() -> None:
    from slateboard.models.scripted import ScriptedModel
    from slateboard.scheduling.coordinator import CoordinatorControl

    model = ScriptedModel([json.dumps({"choice": None, "terminate": False, "reason": "go"})], cycle=True)
    unit = CoordinatorControl(model, ask_when_single=True)
    store = await open_store("memory://")
    board = await create_board(store, BP)
    cap = 0.01  # $1 per million tokens: a few coordinator calls' worst case (prompt bytes + 160)
    result = await Runner(store, board, functions={"a": add_note}, control=unit, max_cost=cap).run()
    records = await store.read_records(board)
    await store.close()
    assert result.end_reason == "budget:board" and result.end_status == "exhausted"
    assert 0 < len(model.calls) < 30 and result.cost_usd is not None and result.cost_usd <= cap
    assert result.cost_by_component["coordinator"] == result.cost_usd  # every dollar was the unit's
    assert str(records[-1].meta["ledgers"][0]).startswith("ledger board: cap $0.0100")


async def test_a_resumed_board_counts_what_its_log_already_cost(fake: StubServer) -> None:
    store = await open_store("memory://")
    board = await create_board(store, BP)
    model = f"openai:stub-model@{fake.url}/v1"
    first = await Runner(store, board, model=model, parallel=1, max_steps=5).run()
    assert first.cost_usd == pytest.approx(5 * 320 / 1e6)
    # A runner opening the board under a cap starts from what the log already cost.
    again = Runner(store, board, model=model, parallel=1, max_cost=0.01)
    await again.open()
    guard = again.session.spend_guard
    assert guard is not None
    assert await guard.lines() == ["ledger board: cap $0.0100, spent $0.0016, reserved $0.0000"]
    await store.close()
