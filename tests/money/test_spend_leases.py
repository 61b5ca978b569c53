"""Reservations are bounded by a lease (issue 45): a hold whose run died is released when its
lease lapses, even if its board is never resumed; a live run renews its holds, so a call that
outlasts the lease keeps its hold; two runs of one board at once never release each other's
holds, so nothing goes over the cap and nothing is released (or booked) twice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from models_testkit import StubServer
from spend_testkit import CALL, LIMITS, cli, killed_mid_call

from _support.boards import NOTE_REPLY, note_loop
from slateboard.errors import InvalidInput
from slateboard.models import Generation, Message
from slateboard.models.pricing import PriceTable
from slateboard.models.protocol import GenerationUsage
from slateboard.runtime import Runner, create_board
from slateboard.runtime.boards import BoardBusy
from slateboard.runtime.ledger import LEASE_ENV, Ledger, MemoryLedger, SpendGuard, check_lease, lease_seconds
from slateboard.stores import open_store


async def test_an_expired_hold_stops_counting_and_is_released_by_the_next_reserve_or_show(
    any_ledger: Ledger,
) -> None:
    ledger = any_ledger
    for name in ("day", "night"):
        await ledger.set_cap(name, 1.0)
        assert await ledger.reserve(name, 0.6, owner="b1", holder="dead-run", lease_s=0.2)
        assert not await ledger.reserve(name, 0.6, owner="b2", holder="live-run", lease_s=600)
    await asyncio.sleep(0.5)  # past the dead run's lease: nothing renewed it
    assert await ledger.holders("day") == {}  # what `ledger show` reads: it released the hold
    assert (await ledger.state("day")).reserved == 0.0
    assert await ledger.reserve("night", 0.6, owner="b2", holder="live-run", lease_s=600)  # the reserve releases it
    assert await ledger.holders("night") == {"b2": 0.6}
    # the dead run's settle, arriving late, books its cost but releases nothing it no longer holds
    await ledger.settle("night", 0.6, 0.1, owner="b1", holder="dead-run")
    state = await ledger.state("night")
    assert state.spent == pytest.approx(0.1) and state.reserved == pytest.approx(0.6)
    assert await ledger.holders("night") == {"b2": 0.6}


async def test_a_live_call_longer_than_its_lease_keeps_its_hold(any_ledger: Ledger) -> None:
    ledger = any_ledger
    await ledger.set_cap("day", 0.001)
    guard = SpendGuard(PriceTable.from_mapping({"*": {"input": 1.0, "output": 1.0}}), [(ledger, "day")], owner="b1")
    guard.lease_s = 1.5  # renewed every 0.5 s while the call holds it
    worst = await guard.reserve("m", 300, 384)
    await asyncio.sleep(4.0)  # the call runs well past its lease
    assert not await ledger.reserve("day", 0.001 - worst / 2, owner="b2", holder="other")  # still held
    assert await ledger.holders("day") == {"b1": pytest.approx(worst)}
    await guard.settle("m", worst, (300, 20))
    state = await ledger.state("day")
    assert state.reserved == 0 and state.spent == pytest.approx(CALL)


def test_the_lease_is_configurable_and_bad_values_name_what(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LEASE_ENV, raising=False)
    assert lease_seconds() == 300.0 and check_lease(None) == 300.0 and check_lease(2) == 2.0
    monkeypatch.setenv(LEASE_ENV, "45")
    assert lease_seconds() == 45.0
    assert SpendGuard(PriceTable(), [(MemoryLedger(), "x")]).lease_s == 45.0
    for bad in ("0", "-3", "soon", "inf", "nan"):
        monkeypatch.setenv(LEASE_ENV, bad)
        with pytest.raises(InvalidInput, match=f"{LEASE_ENV}.*{bad!r}"):
            lease_seconds()
    for value in (0, -1.0, float("inf"), True, "5"):
        with pytest.raises(InvalidInput, match="lease"):
            check_lease(value)  # type: ignore[arg-type]


async def test_a_killed_runs_hold_is_released_when_its_lease_lapses_without_a_resume(
    tmp_path: Path, env: dict[str, str], servers: list[StubServer], where: tuple[str, Ledger, str]
) -> None:
    url, _, name = where
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(note_loop("capped", until=8, limits=LIMITS)))
    board = await killed_mid_call({**env, LEASE_ENV: "1"}, servers, url, "run", str(bp), "--ledger", name)
    await asyncio.sleep(2.5)  # past the killed run's last renewal plus its 1 s lease
    shown = await cli(env, "ledger", "show", name, "--store", url, "--json")
    out, err = await shown.communicate()
    assert shown.returncode == 0, err.decode()
    (row,) = json.loads(out)
    assert row["held_by"] == {} and row["reserved_usd"] == 0.0  # released: the board was never resumed
    assert row["spent_usd"] == pytest.approx(2 * CALL)  # what the killed run's log says it spent
    store = await open_store(url)
    try:
        assert (await store.board_info(board)).status == "running"  # not resumed, not ended
    finally:
        await store.close()


class GatedModel:
    """A model that answers ``NOTE_REPLY`` with 300/20 tokens of usage once ``gate`` is set;
    ``called`` is set when a call is waiting (or made)."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.called = asyncio.Event()
        self.calls = 0

    @property
    def name(self) -> str:
        """The model string (priced by the board's ``*`` price)."""
        return "gated"

    async def generate(
        self, messages: Sequence[Message], *, json_schema: Mapping[str, Any] | None = None, **_: Any
    ) -> Generation:
        """``NOTE_REPLY`` once the gate is open."""
        self.calls += 1
        self.called.set()
        await self.gate.wait()
        return Generation(NOTE_REPLY, GenerationUsage(300, 20), "stop", self.name, 0.0)


async def test_two_runs_resuming_one_board_at_once_one_wins_and_nothing_goes_over_the_cap(
    where: tuple[str, Ledger, str],
) -> None:
    url, ledger, name = where
    store = await open_store(url)
    try:
        board = await create_board(store, note_loop("capped", until=4, limits=LIMITS))
        gate = asyncio.Event()
        first = GatedModel(gate)
        a = Runner(store, board, model=first, parallel=1, ledgers=[(ledger, name)])
        running = asyncio.create_task(a.run())
        await first.called.wait()  # A's first call is in flight: its worst case is held
        (worst,) = (await ledger.holders(name)).values()
        await ledger.set_cap(name, worst * 1.5)  # the cap fits A's hold and nothing more
        second = GatedModel(asyncio.Event())
        b = Runner(store, board, model=second, parallel=1, ledgers=[(ledger, name)])
        await b.open()  # a second resume of the board while A runs
        assert await ledger.holders(name) == {board: worst}  # A's live hold stays A's
        assert not await ledger.reserve(name, worst, owner="elsewhere")  # nothing over the cap
        losing = asyncio.create_task(b.run())
        gate.set()
        result = await running
        with pytest.raises(BoardBusy):
            await losing
        assert second.calls == 0  # the loser made no model call
        state = await ledger.state(name)
        # A made one call, then its next worst case did not fit: booked once, released once
        assert result.end_reason == f"budget:{name}" and first.calls == 1
        assert state.spent == pytest.approx(CALL) == pytest.approx(result.cost_usd)
        assert state.reserved == 0 and await ledger.holders(name) == {}
    finally:
        await store.close()
