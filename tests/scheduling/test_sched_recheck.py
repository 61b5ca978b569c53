"""A rule with ``recheck``: its ``when`` is evaluated again when its invocation comes up, and an
invocation whose condition no longer holds does not call its worker; the runtime declines for it
(a logged no-op that replays), so a commit that did its work between scheduling and running
leaves it nothing to spend a call on."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sched_testkit import Board, blueprint

from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.runtime.verify import verify_board
from slateboard.scheduling import Scheduler
from slateboard.stores import open_store
from slateboard.vocabulary import LAPSED_META, OUTCOME_NOOP, RECHECK_META

WHILE_ZERO = "state.count == 0"


def test_lapsed_checks_the_rule_again_on_the_state_then_committed() -> None:
    rules: list[dict[str, Any]] = [
        {"name": "rechecked", "on": {"op": "add", "path": "/notes/*"}, "when": WHILE_ZERO, "recheck": True,
         "invoke": "writer"},
        {"name": "once", "on": {"op": "add", "path": "/notes/*"}, "when": WHILE_ZERO, "invoke": "planner"},
        {"name": "on value", "on": {"op": "add", "path": "/notes/*"}, "when": "value == 'x'", "recheck": True,
         "invoke": "verifier"},
    ]  # fmt: skip
    bp = blueprint(rules)
    board, sched = Board(bp), Scheduler(bp)
    queued = list(sched.schedule(board.commit([{"op": "add", "path": "/notes/a", "value": "x"}]), board.state, 1))
    by_worker = {inv.worker: inv for inv in queued}
    assert set(by_worker) == {"writer", "planner", "verifier"}
    assert by_worker["writer"].meta[RECHECK_META] == 0 and RECHECK_META not in by_worker["planner"].meta
    assert all(sched.lapsed(inv, board.state) is None for inv in queued)  # nothing changed yet
    board.commit([{"op": "replace", "path": "/count", "value": 1}, {"op": "replace", "path": "/notes/a", "value": "y"}])
    why = sched.lapsed(by_worker["writer"], board.state)
    assert why is not None and "'rechecked'" in why and WHILE_ZERO in why
    assert sched.lapsed(by_worker["planner"], board.state) is None  # no recheck: it runs as queued
    # ``value`` is what the event's path holds now
    assert "no longer holds" in (sched.lapsed(by_worker["verifier"], board.state) or "")
    # a condition that errors when rechecked no longer holds either
    broken = replace(by_worker["verifier"], event={"op": "add", "path": "/nowhere", "version": 1})
    assert sched.lapsed(broken, board.state) is not None


def test_start_rules_are_rechecked_too() -> None:
    rules = [{"name": "go", "on": {"op": "start"}, "when": WHILE_ZERO, "recheck": True, "invoke": "writer"}]
    bp = blueprint(rules)
    board, sched = Board(bp), Scheduler(bp)
    (inv,) = sched.start(board.state)
    assert sched.lapsed(inv, board.state) is None
    board.commit([{"op": "replace", "path": "/count", "value": 2}])
    assert sched.lapsed(inv, board.state) is not None


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"on": {"op": "start"}, "recheck": True, "invoke": "writer"}, "needs a 'when'"),
        (
            {"on": {"op": "add", "path": "/notes/*"}, "batch": {"size": 2}, "when": WHILE_ZERO, "recheck": True,
             "invoke": "writer"},
            "not a join or a batch",
        ),
    ],
)  # fmt: skip
def test_recheck_needs_a_plain_rule_with_a_condition(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(BlueprintError, match=message):
        blueprint([rule])


def _board(recheck: bool) -> dict[str, Any]:
    """``editor`` (priority 1) and ``writer`` are both queued at the start; the editor may do the
    writer's work first (set /count), after which the writer has nothing to do."""
    rule: dict[str, Any] = {"name": "write", "on": {"op": "start"}, "when": WHILE_ZERO, "invoke": "writer"}
    if recheck:
        rule["recheck"] = True
    return {
        "schema": {"type": "object", "properties": {"count": {"type": "integer"}}},
        "initial_state": {"count": 0},
        "workers": {"editor": {"reads": ["/count"], "writes": ["/count"]}, "writer": {"reads": ["/count"], "writes": ["/count"]}},
        "rules": [{"name": "edit", "on": {"op": "start"}, "invoke": "editor", "priority": 1}, rule],
    }  # fmt: skip


@pytest.mark.parametrize("edits", [True, False])
async def test_a_lapsed_invocation_calls_no_worker_and_the_board_verifies(edits: bool) -> None:
    called: list[str] = []

    def editor(view: Any) -> Any:
        called.append("editor")
        return [{"op": "replace", "path": "/count", "value": 1}] if edits else {"decline": "nothing to edit"}

    def writer(view: Any) -> Any:
        called.append("writer")
        return [{"op": "replace", "path": "/count", "value": 2}]

    store = await open_store("memory://")
    try:
        board = await create_board(store, compile_blueprint(_board(recheck=True)))
        result = await Runner(store, board, functions={"editor": editor, "writer": writer}).run()
        records = await store.read_records(board)
        assert (await verify_board(store, board, revalidate=True)).ok
    finally:
        await store.close()
    mine = next(r for r in records if r.worker == "writer")
    if edits:
        # The writer's rule no longer holds when it comes up: declined for it, never called.
        assert called == ["editor"] and result.state == {"count": 1}
        assert mine.outcome == OUTCOME_NOOP and mine.stage == "decline" and mine.meta[LAPSED_META] is True
        assert "'write'" in (mine.reason or "") and "no longer holds" in (mine.reason or "")
        assert "writer" not in result.usage_by_worker  # a lapsed invocation is no call
        assert "writer" not in result.cost_by_worker
    else:
        assert called == ["editor", "writer"] and result.state == {"count": 2}
        assert LAPSED_META not in mine.meta


async def test_without_recheck_the_queued_worker_runs_as_before() -> None:
    called: list[str] = []

    def editor(view: Any) -> Any:
        called.append("editor")
        return [{"op": "replace", "path": "/count", "value": 1}]

    def writer(view: Any) -> Any:
        called.append("writer")
        return [{"op": "replace", "path": "/count", "value": 2}]

    store = await open_store("memory://")
    try:
        board = await create_board(store, compile_blueprint(_board(recheck=False)))
        result = await Runner(store, board, functions={"editor": editor, "writer": writer}).run()
    finally:
        await store.close()
    assert called == ["editor", "writer"] and result.state == {"count": 2}
