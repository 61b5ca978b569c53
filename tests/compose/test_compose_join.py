"""Correlated joins at run time (issue 43): a join rule fires once per key when every part has
happened for it, within its window; what it binds (the key, each part's event) is the
invocation's trigger, logged in its worker's record; a key that fails to evaluate is logged
naming the rule and part; and the join's state comes back from the log on load and on catch-up,
so a join fires exactly once per key under concurrent commits."""

from __future__ import annotations

from typing import Any

from compose_kit import gathered, shop, step

from slateboard.blueprint import compile_blueprint
from slateboard.runtime import BoardSession, Runner, verify_board
from slateboard.runtime.runner import create_board
from slateboard.scheduling.gather import Gathers
from slateboard.stores import Store


async def _run(store: Store, blueprint: dict[str, Any], *, parallel: int | None = None) -> tuple[str, Any]:
    board = await create_board(store, compile_blueprint(blueprint))
    return board, await Runner(store, board, parallel=parallel or "auto").run()


async def test_a_join_fires_once_per_key_and_logs_what_it_binds(store: Store) -> None:
    board, result = await _run(store, shop(3))
    assert result.end_reason == "agenda_empty"
    assert sorted(result.state["shipped"]) == ["o0", "o1", "o2"]
    ships = await gathered(store, board, "ship")
    assert [i.binding for i in ships] == [("ship", f'"o{k}"') for k in range(3)]
    records = await store.read_records(board)
    logged = [r.event for r in records if r.worker == "shipper"]
    assert [e["key"] for e in logged] == ["o0", "o1", "o2"]
    assert logged[0]["op"] == "join" and logged[0]["rule"] == "ship"
    assert logged[0]["parts"] == {
        "order": {"op": "add", "path": "/orders/0", "version": 1},
        "payment": {"op": "add", "path": "/payments/0", "version": 2},
    }
    assert (await verify_board(store, board)).ok


async def test_a_key_arriving_again_after_its_join_fired_fires_nothing(store: Store) -> None:
    blueprint = shop(1)
    blueprint["workers"]["pay_0_again"] = {**blueprint["workers"]["pay_0"]}  # pays o0 a second time
    blueprint["workers"]["order_0_again"] = {**blueprint["workers"]["order_0"]}
    blueprint["rules"] += [{"on": {"op": "start"}, "invoke": w} for w in ("pay_0_again", "order_0_again")]
    board, result = await _run(store, blueprint)
    assert result.state["shipped"] == ["o0"]
    assert len(result.state["payments"]) == 2 and len(result.state["orders"]) == 2
    assert len(await gathered(store, board, "ship")) == 1


async def test_a_key_that_fails_to_evaluate_is_logged_naming_the_rule(store: Store) -> None:
    blueprint = shop(1, join={"parts": {
        "order": {"on": {"op": "add", "path": "/orders/-"}, "key": "value.id"},
        "payment": {"on": {"op": "add", "path": "/payments/-"}, "key": "value.order_id"},  # no such member
    }})  # fmt: skip
    board, result = await _run(store, blueprint)
    assert result.state["shipped"] == [] and result.end_reason == "agenda_empty"
    records = await store.read_records(board)
    (noted,) = [n for r in records for n in r.meta.get("gather", []) if "error" in n]
    assert noted["rule"] == "ship" and noted["part"] == "payment" and noted["path"] == "/payments/0"
    assert "key 'value.order_id' failed" in noted["error"]
    assert await gathered(store, board, "ship") == []


def _ordered_first(keys: int, **join: Any) -> dict[str, Any]:
    """Every order placed before any payment (orders have the higher priority)."""
    blueprint = shop(keys, join={**shop(1)["rules"][0]["join"], **join})
    for rule in blueprint["rules"]:
        if rule.get("invoke", "").startswith("order_"):
            rule["priority"] = 10
    return blueprint


async def test_parts_outside_the_window_in_versions_do_not_join(store: Store) -> None:
    # orders at versions 1-3, payments at 4-6: each payment comes 3 versions after its order
    _, wide = await _run(store, _ordered_first(3, within_versions=3), parallel=1)
    assert sorted(wide.state["shipped"]) == ["o0", "o1", "o2"]
    _, narrow = await _run(store, _ordered_first(3, within_versions=2), parallel=1)
    assert narrow.state["shipped"] == [] and len(narrow.state["payments"]) == 3


async def test_parts_outside_the_window_in_seconds_do_not_join(store: Store) -> None:
    board = await create_board(store, compile_blueprint(_ordered_first(2, within_seconds=60)))
    session = BoardSession(store, board, shared=True)
    await session.load()
    now = [1000.0]
    session.scheduler.gathers.clock = lambda: now[0]
    await step(session, "order_0")
    await step(session, "order_1")
    now[0] = 1059.0
    await step(session, "pay_1")  # 59 s after its order: joins
    now[0] = 1061.0
    await step(session, "pay_0")  # 61 s after its order: too late
    assert [i.binding for i in await gathered(store, board, "ship")] == [("ship", '"o1"')]
    records = await store.read_records(board)
    assert [n["at"] for r in records for n in r.meta.get("gather", [])] == [1000.0, 1000.0, 1059.0, 1061.0]


async def test_a_join_comes_back_from_the_log_on_load(store: Store) -> None:
    board = await create_board(store, compile_blueprint(shop(2)))
    first = BoardSession(store, board)
    await first.load()
    await step(first, "order_0")
    await step(first, "order_1")
    await step(first, "pay_1")
    # A new process: nothing of the first session's memory, only the store.
    later = BoardSession(store, board)
    await later.load()
    assert later.scheduler.gathers.held("ship") == 1  # o0 open, o1 fired
    await step(later, "pay_0")
    assert [i.binding[1] for i in await gathered(store, board, "ship")] == ['"o1"', '"o0"']
    again = Gathers.of(later.blueprint, await store.read_records(board))
    assert again.held("ship") == 0


async def test_concurrent_commits_complete_a_key_exactly_once(store: Store) -> None:
    board = await create_board(store, compile_blueprint(shop(2)))
    a, b = BoardSession(store, board, shared=True), BoardSession(store, board, shared=True)
    await a.load()
    await b.load()
    await step(a, "order_0")
    # b has not seen the order: its commit loses the compare-and-set, catches up (folding a's
    # notes into its join), decides again on the new head, and completes the key there.
    claim = await store.claim(board, owner="b", lease_s=30, worker_names=["pay_0"])
    assert claim is not None
    outcome = await b.step(claim.invocation, "test")
    assert outcome.conflicts == 1 and outcome.record is not None
    assert [n["key"] for n in outcome.record.meta["gather"]] == ["o0"]
    assert len(await gathered(store, board, "ship")) == 1
    # and a, behind in turn, sees the key fired: a second order for o0 fires nothing
    await step(a, "order_1")
    await a.refresh()
    assert a.scheduler.gathers.held("ship") == 1  # o1 waits; o0 is fired, not open
    assert len(await gathered(store, board, "ship")) == 1
    assert (await verify_board(store, board)).ok
