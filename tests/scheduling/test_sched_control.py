"""Control units: the protocol, agenda order, round robin, selections."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slateboard.scheduling import AgendaOrder, BoardSummary, ControlUnit, Invocation, Selection
from slateboard.scheduling.control import RoundRobin

SUMMARY = BoardSummary(version=3, state_hash="h", steps=2, tokens_used=10, active_stages=("plan",))


def inv(n: int, worker: str) -> Invocation:
    return Invocation(f"v{n}.0", worker, 0, n, binding=(str(n),))


async def test_agenda_order_picks_first_and_terminates_when_empty() -> None:
    unit = AgendaOrder()
    eligible = [inv(0, "a"), inv(1, "b")]
    sel = await unit.select(eligible, SUMMARY)
    assert sel.invocation is eligible[0] and not sel.terminate
    assert "v0.0" in sel.reason
    stop = await unit.select([], SUMMARY)
    assert stop.terminate and stop.invocation is None and stop.reason


async def test_round_robin_cycles_and_skips_workers_without_work() -> None:
    unit = RoundRobin(["a", "b", "c"])
    eligible = [inv(0, "a"), inv(1, "a"), inv(2, "c"), inv(3, "b")]
    picks = []
    for _ in range(4):
        sel = await unit.select(eligible, SUMMARY)
        assert sel.invocation is not None
        picks.append(sel.invocation.id)
        eligible = [e for e in eligible if e.id != sel.invocation.id]
    assert picks == ["v0.0", "v3.0", "v2.0", "v1.0"]
    # "b" and "c" have nothing: after "a" comes "a" again, with the skip in the reason
    unit = RoundRobin(["a", "b", "c"], last="a")
    sel = await unit.select([inv(5, "a")], SUMMARY)
    assert sel.invocation is not None and sel.invocation.id == "v5.0"
    assert "skipped 2" in sel.reason


async def test_round_robin_unlisted_workers_and_json() -> None:
    unit = RoundRobin(["a", "b"])
    sel = await unit.select([inv(0, "z")], SUMMARY)
    assert sel.invocation is not None and sel.invocation.worker == "z"
    assert unit.last is None
    await unit.select([inv(1, "b")], SUMMARY)
    restored = RoundRobin.from_json(unit.to_json())
    assert restored.last == "b"
    eligible = [inv(2, "b"), inv(3, "a")]
    a = await unit.select(eligible, SUMMARY)
    b = await restored.select(eligible, SUMMARY)
    assert a == b and a.invocation is not None and a.invocation.worker == "a"
    assert (await unit.select([], SUMMARY)).terminate
    with pytest.raises(ValueError):
        RoundRobin([])
    with pytest.raises(ValueError):
        RoundRobin(["a", "a"])


def test_selection_invariants() -> None:
    with pytest.raises(ValueError):
        Selection(None, False, "neither")
    with pytest.raises(ValueError):
        Selection(inv(0, "a"), True, "both")
    sel = Selection.choose(inv(0, "a"), "why")
    assert sel.to_json() == {"invocation": "v0.0", "worker": "a", "terminate": False, "reason": "why"}
    sel.check([inv(0, "a")])
    with pytest.raises(ValueError, match="not eligible"):
        sel.check([inv(1, "a")])
    Selection.stop("done").check([])
    assert SUMMARY.to_json()["active_stages"] == ["plan"]


class ScriptedCoordinator:
    """A stand-in for the coordinator-model unit: awaits something, then chooses by worker."""

    def __init__(self, choices: list[str]) -> None:
        self.choices = choices

    async def select(self, eligible: Sequence[Invocation], board_summary: BoardSummary) -> Selection:
        import asyncio

        await asyncio.sleep(0)
        want = self.choices.pop(0)
        if want == "TERMINATE":
            return Selection.stop("coordinator: the answer is complete")
        return Selection.choose(next(e for e in eligible if e.worker == want), f"coordinator chose {want}")


async def test_protocol_fits_async_implementations() -> None:
    units: list[ControlUnit] = [AgendaOrder(), RoundRobin(["a"]), ScriptedCoordinator(["b", "TERMINATE"])]
    for unit in units:
        assert isinstance(unit, ControlUnit)
    coord = units[2]
    eligible = [inv(0, "a"), inv(1, "b")]
    sel = await coord.select(eligible, SUMMARY)
    sel.check(eligible)
    assert sel.invocation is not None and sel.invocation.worker == "b"
    assert (await coord.select(eligible, SUMMARY)).terminate
