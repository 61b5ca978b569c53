"""A spend cap belongs to the board (issue 45): the ledgers and ``--max-cost`` a board was started
with are recorded on it and hold on every later run of it. A ``run --ledger`` killed with SIGKILL
mid-call, then ``resume``d: the ledger counts what the resumed run spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from models_testkit import StubServer
from spend_testkit import CALL, LIMITS, cli, killed_mid_call, resumed

from _support.boards import note_loop
from slateboard.runtime.ledger import SPEND_META, Ledger, SqliteLedger
from slateboard.stores import open_store


async def test_a_resumed_board_reserves_against_the_ledger_it_was_started_with(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer]
) -> None:
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=8, limits=LIMITS)))
    url = f"sqlite:///{tmp_path / 'board.db'}"
    await (await open_store(url)).close()  # the store's file first: the ledgers live in it
    ledger = SqliteLedger(tmp_path / "board.db")
    await ledger.set_cap("tenant", 1.0)
    board = await killed_mid_call(env, servers, url, "run", str(bp), "--ledger", "tenant", "--max-cost", "0.5")
    store = await open_store(url)
    try:
        assert (await store.board_info(board)).meta[SPEND_META] == {"max_cost": 0.5, "ledgers": ["tenant"]}
    finally:
        await store.close()
    killed = await ledger.state("tenant")
    assert killed.spent == pytest.approx(2 * CALL) and killed.reserved > 0  # the dead call's reservation
    shown = await cli(env, "ledger", "show", "tenant", "--store", url, "--json")
    out, _ = await shown.communicate()
    assert json.loads(out)[0]["held_by"] == {board: killed.reserved}  # ledger show names the holder
    data, _ = await resumed(env, servers, url, board)  # no --ledger: the board remembers it
    assert data["end_reason"] != "budget:tenant", data
    assert data["cost_usd"] == pytest.approx(8 * CALL)
    state = await ledger.state("tenant")
    assert state.spent == pytest.approx(8 * CALL)  # the killed run's 2 calls and the resumed run's 6
    assert state.reserved == 0  # the dead run's reservation was released when the board resumed
    assert await ledger.holders("tenant") == {}


@pytest.mark.slow  # eleven subprocess runs per store
async def test_after_ten_kills_the_ledger_equals_what_the_log_says(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer], where: tuple[str, Ledger, str]
) -> None:
    url, ledger, name = where
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=24, limits=LIMITS)))
    board = await killed_mid_call(env, servers, url, "run", str(bp), "--ledger", name)
    one_call = (await ledger.state(name)).reserved
    for kills in range(2, 11):  # each resume makes two calls and is killed during its third
        await killed_mid_call(env, servers, url, "resume", board)
        state = await ledger.state(name)
        assert state.spent == pytest.approx(2 * kills * CALL)
        assert one_call <= state.reserved < 2 * one_call  # the last dead call's hold, never two
    data, _ = await resumed(env, servers, url, board)
    state = await ledger.state(name)
    assert state.spent == pytest.approx(24 * CALL) == pytest.approx(data["cost_usd"])
    assert state.reserved == 0


async def test_resume_ledger_adds_one_and_never_drops_the_recorded_one(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer]
) -> None:
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=8, limits=LIMITS)))
    url = f"sqlite:///{tmp_path / 'board.db'}"
    await (await open_store(url)).close()  # the store's file first: the ledgers live in it
    ledger = SqliteLedger(tmp_path / "board.db")
    await ledger.set_cap("tenant", 1.0)
    await ledger.set_cap("extra", None)
    board = await killed_mid_call(env, servers, url, "run", str(bp), "--ledger", "tenant")
    await resumed(env, servers, url, board, "--ledger", "extra")
    assert (await ledger.state("tenant")).spent == pytest.approx(8 * CALL)
    assert (await ledger.state("extra")).spent == pytest.approx(6 * CALL)
