"""A spend cap belongs to the board (issue 45): the ledgers and ``--max-cost`` a board was started
with are recorded on it and hold on every later run of it. A ``run --ledger`` killed with SIGKILL
mid-call, then ``resume``d: the ledger counts what the resumed run spent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))
from models_testkit import StubReply, StubServer, chat_completion
from stores_testkit import pg_url, scratch_pg_schema

from _support.boards import NOTE_REPLY, note_loop
from slateboard.runtime.ledger import SPEND_META, Ledger, SqliteLedger, ledger_for
from slateboard.stores import open_store

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
CALL = 320 / 1e6  # one call's cost at a dollar per million tokens
LIMITS = {"prices": {"*": {"input": 1.0, "output": 1.0}}, "max_steps": 60}
OK = StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture
async def servers() -> AsyncIterator[list[StubServer]]:
    started: list[StubServer] = []
    yield started
    for server in started:
        await server.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def where(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, Ledger, str]]:
    """A store's URL, its ledgers and a fresh ledger's name (capped at $1) on SQLite and on a
    scratch schema of the test PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'board.db'}"
        await (await open_store(url)).close()
        ledger: Ledger = SqliteLedger(tmp_path / "board.db")
        await ledger.set_cap("tenant", 1.0)
        yield url, ledger, "tenant"
        return
    schemas = scratch_pg_schema("sbt_spend")
    url = pg_url(next(schemas))
    store = await open_store(url)
    try:
        ledger = ledger_for(store)
    finally:
        await store.close()
    name = f"tenant_{uuid.uuid4().hex[:8]}"  # the ledgers live in the database, shared by schemas
    await ledger.set_cap(name, 1.0)
    yield url, ledger, name
    next(schemas, None)  # drops the schema


async def _cli(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from slateboard.cli import main; main()",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def _killed_mid_call(env: dict[str, str], servers: list[StubServer], url: str, *args: str) -> str:
    """Run the command ``args`` (``run BP ...`` or ``resume BOARD``) against a model that answers
    twice and then never; SIGKILL it during its third call. Returns the board's id."""
    hanging = await StubServer([OK, OK, StubReply(hang=True)]).start()
    servers.append(hanging)
    proc = await _cli(env, *args, "--model", f"openai:m@{hanging.url}/v1", "--store", url, "--json")
    for _ in range(1200):  # polls, not a timing claim: the third request arrives when it arrives
        if len(hanging.requests) >= 3 or proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    if proc.returncode is None:
        proc.kill()
    _, err = await proc.communicate()
    assert len(hanging.requests) >= 3, f"the run never reached its third model call: {err.decode()}"
    store = await open_store(url)
    try:
        (board,) = await store.list_boards()
    finally:
        await store.close()
    return board.board_id


async def _resume(
    env: dict[str, str], servers: list[StubServer], url: str, board: str, *extra: str
) -> dict[str, object]:
    answering = await StubServer([OK]).start()
    servers.append(answering)
    proc = await _cli(env, "resume", board, "--model", f"openai:m@{answering.url}/v1", "--store", url, "--json", *extra)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    data: dict[str, object] = json.loads(out)
    return data


async def test_a_resumed_board_reserves_against_the_ledger_it_was_started_with(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer]
) -> None:
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=8, limits=LIMITS)))
    url = f"sqlite:///{tmp_path / 'board.db'}"
    await (await open_store(url)).close()  # the store's file first: the ledgers live in it
    ledger = SqliteLedger(tmp_path / "board.db")
    await ledger.set_cap("tenant", 1.0)
    board = await _killed_mid_call(env, servers, url, "run", str(bp), "--ledger", "tenant", "--max-cost", "0.5")
    store = await open_store(url)
    try:
        assert (await store.board_info(board)).meta[SPEND_META] == {"max_cost": 0.5, "ledgers": ["tenant"]}
    finally:
        await store.close()
    killed = await ledger.state("tenant")
    assert killed.spent == pytest.approx(2 * CALL) and killed.reserved > 0  # the dead call's reservation
    shown = await _cli(env, "ledger", "show", "tenant", "--store", url, "--json")
    out, _ = await shown.communicate()
    assert json.loads(out)[0]["held_by"] == {board: killed.reserved}  # ledger show names the holder
    data = await _resume(env, servers, url, board)  # no --ledger: the board remembers it
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
    board = await _killed_mid_call(env, servers, url, "run", str(bp), "--ledger", name)
    one_call = (await ledger.state(name)).reserved
    for kills in range(2, 11):  # each resume makes two calls and is killed during its third
        await _killed_mid_call(env, servers, url, "resume", board)
        state = await ledger.state(name)
        assert state.spent == pytest.approx(2 * kills * CALL)
        assert one_call <= state.reserved < 2 * one_call  # the last dead call's hold, never two
    data = await _resume(env, servers, url, board)
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
    board = await _killed_mid_call(env, servers, url, "run", str(bp), "--ledger", "tenant")
    await _resume(env, servers, url, board, "--ledger", "extra")
    assert (await ledger.state("tenant")).spent == pytest.approx(8 * CALL)
    assert (await ledger.state("extra")).spent == pytest.approx(6 * CALL)
