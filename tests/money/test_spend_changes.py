"""A ledger changed under running boards, and a resume's own cap (issue 45).

A ledger deleted, or re-capped below what it has spent, while a board runs: the board's next
reservation is refused with one line naming the ledger, its cap and spend and what to do, the
board ends ``budget:<ledger>``, and no call is made past it. ``resume --max-cost`` may lower the
cap the board was started with, never raise it. A run killed between a model call's completion
and its booking leaves, after resume, the ledger equal to what the log says was spent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from models_testkit import ReceivedRequest, StubReply, StubServer
from spend_testkit import CALL, LIMITS, OK, cli, killed_mid_call, only_board, resumed

from _support.boards import note_loop
from slateboard.runtime import Runner, create_board
from slateboard.runtime.ledger import Ledger
from slateboard.stores import open_store


def _blocking(job: Coroutine[Any, Any, Any]) -> None:
    """Run ``job`` to its end on an event loop of its own (another client of the store)."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, job).result()


def _stop_line(err: str) -> str:
    """The one line that says the board stopped at its spend cap (stderr may log more before it)."""
    (line,) = [x for x in err.splitlines() if "stopped at its spend cap" in x]
    return line


@pytest.mark.parametrize("change", ["re-capped", "deleted"])
async def test_a_ledger_changed_while_a_board_runs_stops_it_at_its_next_call(
    where: tuple[str, Ledger, str], env: dict[str, str], change: str
) -> None:
    url, ledger, name = where

    def second_call(request: ReceivedRequest) -> StubReply:
        # while the board's second call is in flight, someone changes its ledger
        _blocking(ledger.set_cap(name, 0.0002) if change == "re-capped" else ledger.delete(name))
        return OK

    server = await StubServer([OK, second_call, OK]).start()
    store = await open_store(url)
    try:
        board = await create_board(store, note_loop("capped", until=8, limits=LIMITS))
        runner = Runner(store, board, model=f"openai:m@{server.url}/v1", parallel=1, ledgers=[(ledger, name)])
        result = await runner.run()
        records = await store.read_records(board)
    finally:
        await store.close()
        await server.close()
    assert result.end_reason == f"budget:{name}" and result.end_status == "exhausted"
    assert len(server.requests) == 2  # the call in flight was made; none after the change
    assert result.cost_usd == pytest.approx(2 * CALL)
    errors = [str(r.meta["error"]) for r in records if "error" in r.meta]
    assert len(errors) == 1 and "\n" not in errors[0]
    if change == "re-capped":
        state = await ledger.state(name)
        assert state.spent == pytest.approx(2 * CALL) and state.reserved == 0  # both calls booked, nothing held
        assert f"ledger {name} has spent $0.0006, at or over its cap $0.0002" in errors[0]
        assert f"slateboard ledger set {name} USD" in errors[0]
    else:
        assert f"ledger {name} no longer exists in the store" in errors[0]
        assert f"slateboard ledger set {name} USD" in errors[0]
        assert [r.spent for r in await ledger.history(name)] == [pytest.approx(CALL)]  # spend stays in view


@pytest.mark.parametrize("change", ["re-capped", "deleted"])
async def test_resume_of_a_board_whose_ledger_was_deleted_or_recapped_is_one_actionable_line(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer], where: tuple[str, Ledger, str], change: str
) -> None:
    url, _, name = where
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=8, limits=LIMITS)))
    board = await killed_mid_call(env, servers, url, "run", str(bp), "--ledger", name)
    if change == "re-capped":
        recap = await cli(env, "ledger", "set", name, "0.0001", "--store", url)
        assert (await recap.wait()) == 0
    else:
        deleted = await cli(env, "ledger", "delete", name, "--store", url)
        out, _ = await deleted.communicate()
        assert deleted.returncode == 0
        assert out.decode().startswith(f"deleted ledger {name}: cap $1.0000, spent $0.0006")
    data, err = await resumed(env, servers, url, board, code=2)
    line = _stop_line(err)
    assert data["end_reason"] == f"budget:{name}" and len(servers[-1].requests) == 0  # no call made
    assert f"slateboard ledger set {name} USD" in line and "http" not in line  # no model URL in it
    if change == "re-capped":
        assert f"ledger {name} has spent $0.0006, at or over its cap $0.0001" in line
        return
    assert f"ledger {name} no longer exists in the store" in line
    history = await cli(env, "ledger", "history", name, "--store", url, "--json")
    out, _ = await history.communicate()
    assert [row["spent_usd"] for row in json.loads(out)] == [pytest.approx(2 * CALL)]  # spend stays in view
    missing = await cli(env, "ledger", "delete", name, "--store", url)
    _, err_bytes = await missing.communicate()
    assert missing.returncode == 2 and f"'{name}'" in err_bytes.decode() and err_bytes.decode().count("\n") == 1


async def test_resume_max_cost_may_lower_the_boards_cap_never_raise_it(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer], where: tuple[str, Ledger, str]
) -> None:
    url, ledger, name = where
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=12, limits=LIMITS)))
    board = await killed_mid_call(env, servers, url, "run", str(bp), "--ledger", name, "--max-cost", "0.5")
    _, err = await resumed(env, servers, url, board, "--max-cost", "0.6", code=2)
    assert err.count("\n") == 1 and "--max-cost: $0.6000 is above the $0.5000" in err and "never raise" in err
    assert len(servers[-1].requests) == 0
    for bad in ("0", "-1", "lots"):
        _, err = await resumed(env, servers, url, board, "--max-cost", bad, code=2)
        assert f"{bad!r}" in err and err.count("\n") == 1
    data, err = await resumed(env, servers, url, board, "--max-cost", "0.0017", code=2)
    made = len(servers[-1].requests)
    assert data["end_reason"] == "budget:board" and "board's cap, --max-cost" in _stop_line(err)
    assert 0 < made < 10 and float(str(data["cost_usd"])) <= 0.0017  # the whole board under the lower cap
    state = await ledger.state(name)
    assert state.spent == pytest.approx((2 + made) * CALL) == pytest.approx(data["cost_usd"])
    assert state.reserved == 0


_DIES_BOOKING = textwrap.dedent(
    """
    import os, signal, sys
    from slateboard.runtime import ledger

    real, n = ledger.SpendGuard.settle, int(os.environ["DIE_AT_SETTLE"])

    async def settle(self, *args, **kwargs):
        global n
        n -= 1
        if n == 0:  # the model call completed; its cost is not booked yet
            os.kill(os.getpid(), signal.SIGKILL)
        return await real(self, *args, **kwargs)

    ledger.SpendGuard.settle = settle
    from slateboard.cli import main
    main()
    """
)


async def _killed_mid_settle(
    env: dict[str, str], servers: list[StubServer], url: str, die_at: int, *args: str
) -> asyncio.subprocess.Process:
    server = await StubServer([OK]).start()
    servers.append(server)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _DIES_BOOKING,
        *args,
        "--model",
        f"openai:m@{server.url}/v1",
        "--store",
        url,
        "--json",
        env={**env, "DIE_AT_SETTLE": str(die_at)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await proc.communicate()
    assert proc.returncode == -9 and len(server.requests) == die_at  # killed after its call completed
    return proc


async def test_kill_9_between_a_calls_completion_and_its_booking_leaves_the_ledger_equal_to_the_log(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer], where: tuple[str, Ledger, str]
) -> None:
    url, ledger, name = where
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=10, limits=LIMITS)))
    await _killed_mid_settle(env, servers, url, 3, "run", str(bp), "--ledger", name)
    board = await only_board(url)
    state = await ledger.state(name)
    assert state.spent == pytest.approx(2 * CALL) and state.reserved > 0  # the unbooked call's hold
    await _killed_mid_settle(env, servers, url, 2, "resume", board)  # and once more, from a resume
    assert (await ledger.state(name)).spent == pytest.approx(3 * CALL)
    data, _ = await resumed(env, servers, url, board)
    state = await ledger.state(name)
    # the log holds the 10 calls that were booked; the two whose process died unbooked are not in it
    assert state.spent == pytest.approx(10 * CALL) == pytest.approx(data["cost_usd"])
    assert state.reserved == 0 and await ledger.holders(name) == {}
    assert os.environ.get("DIE_AT_SETTLE") is None
