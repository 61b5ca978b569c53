"""Issue 18, no silent losses: a stale proposal is re-queued with a fresh view up to the
blueprint's ``circuit.max_stale_requeues``, then its invocation fails with an
``invocation.failed`` record and the run's end reason names the lost work; the same worker and
binding never run twice at once; and (property) every invocation ends in a committed, failed or
cancelled record."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slateboard.runtime import Runner, create_board
from slateboard.scheduling.agenda import Agenda
from slateboard.scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from slateboard.status import base_reason, end_status
from slateboard.stores import open_store
from slateboard.stores.base import Store

RACE: dict[str, Any] = {
    "name": "race",
    "schema": {
        "type": "object",
        "properties": {"slot": {"type": "integer"}, "log": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"slot": 0, "log": []},
    "workers": {
        "bumper": {"reads": ["/slot"], "writes": ["/slot"]},
        "victim": {"reads": ["/slot"], "writes": ["/log/-"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "victim"},
        {"on": {"op": "start"}, "invoke": "bumper"},
        {"on": {"op": "replace", "path": "/slot"}, "when": "state.slot < 3", "invoke": "bumper"},
    ],
}


def race(max_stale_requeues: int) -> dict[str, Any]:
    bp = copy.deepcopy(RACE)
    bp["circuit"] = {"max_stale_requeues": max_stale_requeues, "max_consecutive_invalid": 10, "stuck_after": 50}
    return bp


async def run_race(max_stale_requeues: int) -> tuple[Store, str, Any]:
    """The victim's view is always overtaken by the bumper's next commit (it waits for it), so
    each of its proposals is stale while the bumper still bumps (three times)."""
    store = await open_store("memory://")
    board = await create_board(store, race(max_stale_requeues))
    runner: Runner

    def bumper(view: Any) -> Any:
        return [{"op": "replace", "path": "/slot", "value": view.data["/slot"] + 1}]

    async def victim(view: Any) -> Any:
        for _ in range(10_000):  # bounded: the bumper commits within a few loop turns
            if runner.kernel.version > view.version or view.data["/slot"] >= 3:
                break
            await asyncio.sleep(0)
        return [{"op": "add", "path": "/log/-", "value": f"saw {view.data['/slot']}"}]

    runner = Runner(store, board, functions={"bumper": bumper, "victim": victim}, parallel=2)
    result = await runner.run()
    return store, board, result


async def test_stale_past_the_limit_fails_with_a_record_and_the_end_reason_names_it() -> None:
    store, board, result = await run_race(1)
    records = await store.read_records(board)
    stale = [r for r in records if r.stage == "stale"]
    assert [r.worker for r in stale] == ["victim", "victim"]  # first stale re-queued, second is over the limit
    failed = [r for r in records if r.meta.get("event") == "invocation.failed"]
    assert len(failed) == 1
    assert failed[0].invocation == stale[-1].invocation and failed[0].worker == "victim"
    assert "stale 2 times" in (failed[0].reason or "")
    assert failed[0].seq == stale[-1].seq + 1  # logged right after the record that ended it
    assert result.end_reason.startswith("agenda_empty; lost work: 1 invocation(s) failed")
    assert failed[0].invocation in result.end_reason
    assert base_reason(result.end_reason) == "agenda_empty"
    assert end_status("done", result.end_reason) == "exhausted"
    assert result.state["log"] == []  # the victim's work is indeed lost, and said so
    run_end = records[-1]
    assert run_end.kind == "run" and run_end.reason == result.end_reason
    await store.close()


async def test_stale_within_the_limit_runs_again_with_a_fresh_view_until_accepted() -> None:
    store, board, result = await run_race(5)
    records = await store.read_records(board)
    stale = [r for r in records if r.stage == "stale"]
    assert len(stale) == 3 and {r.worker for r in stale} == {"victim"}
    assert not [r for r in records if r.meta.get("event") == "invocation.failed"]
    assert result.state["log"] == ["saw 3"]  # judged at last on a view nobody overtook
    assert result.end_reason == "agenda_empty"
    await store.close()


# -- de-duplication of claimed work -----------------------------------------------------------
DUP: dict[str, Any] = {
    "name": "dup",
    "schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    "initial_state": {"a": 0, "b": 0},
    "workers": {"slow": {"reads": ["/b"], "writes": ["/b"]}, "fast": {"reads": ["/a"], "writes": ["/a"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "slow"},
        {"on": {"op": "start"}, "invoke": "fast"},
        {"on": {"op": "replace", "path": "/a"}, "invoke": "slow"},
    ],
}


def test_active_keys_cover_pending_and_claimed_but_the_one_being_decided() -> None:
    agenda = Agenda([Invocation("1", "w", 0, 0), Invocation("2", "v", 0, 1, binding=("x",))])
    first = agenda.pop()
    assert first is not None and first.id == "1"
    keys = agenda.active_keys()
    assert first.key in keys and Invocation("2", "v", 0, 1, binding=("x",)).key in keys
    assert first.key not in agenda.active_keys(excluding="1")
    assert first.key not in agenda.pending_keys  # only the new set covers claimed work


async def test_a_running_worker_and_binding_is_not_scheduled_again() -> None:
    store = await open_store("memory://")
    board = await create_board(store, DUP)
    started = asyncio.Event()
    runner: Runner

    async def slow(view: Any) -> Any:
        started.set()
        for _ in range(10_000):  # wait (bounded) until fast has committed while slow runs
            if runner.kernel.version > view.version:
                break
            await asyncio.sleep(0)
        return [{"op": "replace", "path": "/b", "value": view.data["/b"] + 1}]

    async def fast(view: Any) -> Any:
        await started.wait()
        return [{"op": "replace", "path": "/a", "value": 1}]

    runner = Runner(store, board, functions={"slow": slow, "fast": fast}, parallel=2)
    result = await runner.run()
    records = [r for r in await store.read_records(board) if r.kind == "proposal"]
    assert [r.worker for r in records] == ["fast", "slow"]  # fast's commit did not queue slow again
    every = await store.agenda(board, (PENDING, CLAIMED, DONE, CANCELLED))
    assert sorted(i.worker for i in every) == ["fast", "slow"]
    assert result.state == {"a": 1, "b": 1}
    await store.close()


# -- the property: nothing is ever dropped silently -------------------------------------------
def contention(n: int, bumps: int, limit: int) -> dict[str, Any]:
    names = [f"w{i}" for i in range(n)]
    return {
        "name": "contention",
        "schema": {"type": "object", "properties": {"slot": {"type": "integer"}}},
        "initial_state": {"slot": 0},
        "workers": {w: {"reads": ["/slot"], "writes": ["/slot"]} for w in names},
        "rules": [{"on": {"op": "start"}, "invoke": w} for w in names]
        + [{"on": {"op": "replace", "path": "/slot"}, "when": f"state.slot < {bumps}", "invoke": w} for w in names],
        "circuit": {"max_stale_requeues": limit, "max_consecutive_invalid": 50, "stuck_after": 500},
        "limits": {"max_steps": 400},
    }


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 4),
    parallel=st.integers(1, 4),
    bumps=st.integers(1, 6),
    limit=st.integers(0, 2),
    yields=st.lists(st.integers(0, 4), min_size=4, max_size=4),
)
def test_every_invocation_ends_committed_failed_or_cancelled(
    n: int, parallel: int, bumps: int, limit: int, yields: list[int]
) -> None:
    async def scenario() -> None:
        store = await open_store("memory://")
        board = await create_board(store, contention(n, bumps, limit))

        def worker(i: int) -> Any:
            async def propose(view: Any) -> Any:
                for _ in range(yields[i]):  # interleavings vary with the drawn number of loop turns
                    await asyncio.sleep(0)
                return [{"op": "replace", "path": "/slot", "value": view.data["/slot"] + 1}]

            return propose

        runner = Runner(store, board, functions={f"w{i}": worker(i) for i in range(n)}, parallel=parallel)
        result = await runner.run()
        records = await store.read_records(board)
        every = await store.agenda(board, (PENDING, CLAIMED, DONE, CANCELLED))
        failed = {r.invocation for r in records if r.meta.get("event") == "invocation.failed"}
        for inv in every:
            assert inv.status in (DONE, CANCELLED), inv
            if inv.status == CANCELLED:
                continue
            mine = [r for r in records if r.kind == "proposal" and r.invocation == inv.id]
            assert mine, f"invocation {inv.id} completed without any record"
            last = mine[-1]
            if last.stage == "stale":
                assert inv.id in failed, f"invocation {inv.id} lost without an invocation.failed record"
            else:
                assert last.outcome in ("accepted", "rejected")
        if failed:
            assert f"lost work: {len(failed)} invocation(s) failed" in result.end_reason
        else:
            assert "lost work" not in result.end_reason
        await store.close()

    asyncio.run(scenario())
