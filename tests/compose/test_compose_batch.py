"""Timed batches at run time (issue 43): a batch rule fires with the events it collected once
``size`` have arrived, or ``seconds`` after the first of them; a timer's firing is a logged
``timer`` record, so replay reads no clock and gives the same records without waiting, and two
processes firing the same timer at once append one record."""

from __future__ import annotations

from typing import Any

from compose_kit import gathered, shop, step

from slateboard.blueprint import compile_blueprint
from slateboard.kernel.replay import replay
from slateboard.runtime import BoardSession, Runner, verify_board
from slateboard.runtime.runner import create_board
from slateboard.runtime.timers import fire_timers, next_timer
from slateboard.scheduling.gather import Gathers
from slateboard.stores import Store

HOUR = 3600.0


async def test_a_batch_fires_on_size(store: Store) -> None:
    board = await create_board(store, compile_blueprint(shop(0, alerts=5, batch={"size": 2})))
    result = await Runner(store, board).run()
    assert result.state["digests"] == [{"count": 2, "reason": "size"}] * 2
    batches = await gathered(store, board, "digest")
    assert [i.binding for i in batches] == [("digest", "#1"), ("digest", "#2")]
    assert [len(i.event["items"]) for i in batches] == [2, 2]
    assert not [r for r in await store.read_records(board) if r.kind == "timer"]  # size only: no timer


async def test_a_runner_fires_a_batch_on_time(store: Store) -> None:
    board = await create_board(store, compile_blueprint(shop(0, alerts=3, batch={"size": 10, "seconds": 0.05})))
    result = await Runner(store, board).run()
    assert result.end_reason == "agenda_empty"
    assert result.state["digests"] == [{"count": 3, "reason": "timer"}]
    (timer,) = [r for r in await store.read_records(board) if r.kind == "timer"]
    assert timer.meta["rule"] == "digest" and timer.meta["gather"][0]["timer"] is True
    assert (await verify_board(store, board)).ok


async def _alerts_in(store: Store, count: int, **batch: Any) -> tuple[str, BoardSession, list[float]]:
    board = await create_board(store, compile_blueprint(shop(0, alerts=count, batch=batch)))
    session = BoardSession(store, board, shared=True)
    await session.load()
    clock = [1000.0]
    session.scheduler.gathers.clock = lambda: clock[0]
    for k in range(count):
        await step(session, f"alert_{k}")
        clock[0] += 1.0
    return board, session, clock


async def test_a_timer_is_a_logged_record_and_replay_needs_no_clock(store: Store) -> None:
    board, session, _ = await _alerts_in(store, 3, size=10, seconds=HOUR)
    assert next_timer(session) == 1000.0 + HOUR  # from the first event's logged time
    assert await fire_timers(session, now=1000.0 + HOUR - 1) == []
    (timer,) = await fire_timers(session, now=1000.0 + HOUR)
    assert next_timer(session) is None and [i.worker for i in session.agenda.eligible()] == ["digester"]
    await step(session, "digester")
    assert session.kernel.state["digests"] == [{"count": 3, "reason": "timer"}]
    records = await store.read_records(board)
    # Replay: the log alone, no clock and no waiting for the hour (it would time the test out).
    loaded = await store.load_board(board)
    assert replay(session.blueprint, loaded.initial_state, records, revalidate=True).ok
    folded = Gathers(session.blueprint.rules)
    fired = [f for r in records for n in r.meta.get("gather", []) if (f := folded.apply(n)) is not None]
    batches = await gathered(store, board, "digest")
    assert [(f.binding, f.event) for f in fired] == [(i.binding, i.event) for i in batches]
    assert batches[0].id == f"t{timer.seq}.0" and batches[0].event["reason"] == "timer"
    # A fresh load folds the same log: nothing held, no timer pending.
    again = BoardSession(store, board)
    await again.load()
    assert next_timer(again) is None and again.scheduler.gathers.held("digest") == 0


async def test_a_waiting_batch_keeps_the_board_open_and_survives_a_reload(store: Store) -> None:
    board, session, _ = await _alerts_in(store, 2, size=10, seconds=HOUR)
    assert not session.agenda and session.end_reason() is None  # a batch waits for its timer
    later = BoardSession(store, board)
    await later.load()
    assert later.scheduler.gathers.held("digest") == 2
    assert next_timer(later) == 1000.0 + HOUR  # the first event's time, from the log


async def test_two_processes_firing_one_timer_append_one_record(store: Store) -> None:
    board, first, _ = await _alerts_in(store, 2, size=10, seconds=HOUR)
    second = BoardSession(store, board, shared=True)
    await second.load()
    assert next_timer(second) == next_timer(first)
    assert len(await fire_timers(first, now=5000.0)) == 1
    # second still holds the batch in memory: its append loses, it catches up, finds it flushed.
    assert await fire_timers(second, now=5000.0) == []
    records = await store.read_records(board)
    assert sum(r.kind == "timer" for r in records) == 1
    assert len(await gathered(store, board, "digest")) == 1
