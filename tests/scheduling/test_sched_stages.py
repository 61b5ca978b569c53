"""Stages: entry/exit conditions, gating of rules, lifecycle events, JSON round-trip."""

from __future__ import annotations

from typing import Any

import pytest
from sched_testkit import Board, blueprint

from slateboard.scheduling import STAGE_ENTERED, Scheduler, StageEvent, StageTracker
from slateboard.scheduling.rules import SchedulerBusy
from slateboard.scheduling.stages import STAGE_EXITED

STAGES: list[dict[str, Any]] = [
    {"name": "plan", "exit": "state.phase != 'plan'"},
    {"name": "work", "enter": "state.phase == 'work'", "exit": "state.count >= 2"},
    {"name": "review", "enter": "state.count >= 2"},
]
RULES: list[dict[str, Any]] = [
    {"name": "plan-note", "on": {"op": "any", "path": "/notes/*"}, "invoke": "planner", "stage": "plan"},
    {"name": "work-note", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer", "stage": "work"},
    {"name": "work-phase", "on": {"op": "any", "path": "/phase"}, "invoke": "editor", "stage": "work"},
    {"name": "plan-phase", "on": {"op": "any", "path": "/phase"}, "invoke": "verifier", "stage": "plan"},
    {"name": "free", "on": {"op": "any", "path": "/count"}, "invoke": "verifier"},
]


def ev(kind: str, stage: str, version: int) -> StageEvent:
    return StageEvent(kind, stage, version)


def test_lifecycle_events_and_statuses() -> None:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    start = sched.start(board.state)
    assert start.stage_events == (ev(STAGE_ENTERED, "plan", 0),)
    assert sched.stages.active == ("plan",)
    assert sched.stages.status("work") == "pending"

    got = sched.schedule(board.commit([{"op": "replace", "path": "/phase", "value": "work"}]), board.state, 1)
    assert got.stage_events == (ev(STAGE_EXITED, "plan", 1), ev(STAGE_ENTERED, "work", 1))
    # stages are evaluated before rules: the commit that enters "work" triggers its rules,
    # the commit that exits "plan" does not trigger plan's rules
    assert [i.rule for i in got] == ["work-phase"]

    got = sched.schedule(board.commit([{"op": "replace", "path": "/count", "value": 1}]), board.state, 2)
    assert got.stage_events == ()
    got = sched.schedule(board.commit([{"op": "replace", "path": "/count", "value": 2}]), board.state, 3)
    assert got.stage_events == (ev(STAGE_EXITED, "work", 3), ev(STAGE_ENTERED, "review", 3))
    assert sched.stages.active == ("review",)


def test_exited_stage_stays_exited() -> None:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    sched.start(board.state)
    sched.schedule(board.commit([{"op": "replace", "path": "/phase", "value": "work"}]), board.state, 1)
    got = sched.schedule(board.commit([{"op": "replace", "path": "/phase", "value": "plan"}]), board.state, 2)
    # plan's exit condition no longer holds, but an exited stage never comes back
    assert sched.stages.status("plan") == "exited"
    assert got.stage_events == ()
    assert [i.rule for i in got] == ["work-phase"]


def test_gating_by_stage() -> None:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    sched.start(board.state)
    got = sched.schedule(board.commit([{"op": "add", "path": "/notes/a", "value": "x"}]), board.state, 1)
    assert [i.rule for i in got] == ["plan-note"]
    assert got[0].meta == {"stage": "plan"}
    sched.schedule(board.commit([{"op": "replace", "path": "/phase", "value": "work"}]), board.state, 2)
    got = sched.schedule(board.commit([{"op": "add", "path": "/notes/b", "value": "x"}]), board.state, 3)
    assert [i.rule for i in got] == ["work-note"]
    got = sched.schedule(board.commit([{"op": "replace", "path": "/count", "value": 5}]), board.state, 4)
    assert [i.rule for i in got] == ["free"]  # rules without a stage always fire


def test_enter_and_exit_at_the_same_evaluation() -> None:
    stages = [{"name": "blink", "enter": "state.count == 0", "exit": "state.phase == 'plan'"}]
    bp = blueprint([], stages=stages)
    tracker = StageTracker.from_blueprint(bp)
    update = tracker.update(bp.initial_state(), 0)
    assert update.events == (ev(STAGE_ENTERED, "blink", 0), ev(STAGE_EXITED, "blink", 0))
    assert tracker.status("blink") == "exited"


def test_stage_with_enter_waits_and_no_enter_is_active_from_start() -> None:
    bp = blueprint([], stages=STAGES)
    tracker = StageTracker.from_blueprint(bp)
    assert tracker.evaluated_version is None
    before = tracker.active
    tracker.update(bp.initial_state(), 0)
    assert before == ()
    assert tracker.active == ("plan",)
    assert tracker.status("review") == "pending"


def test_update_is_idempotent_per_version() -> None:
    bp = blueprint([], stages=STAGES)
    tracker = StageTracker.from_blueprint(bp)
    state = bp.initial_state()
    assert tracker.update(state, 0).events
    assert tracker.update(state, 0).events == ()
    state["phase"] = "work"
    assert tracker.update(state, 0).events == ()  # version 0 was already evaluated
    assert [e.kind for e in tracker.update(state, 1).events] == [STAGE_EXITED, STAGE_ENTERED]


def test_erroring_condition_counts_as_false_and_is_reported() -> None:
    stages = [{"name": "broken", "enter": "state.nothing.deeper == 1"}, {"name": "fine"}]
    bp = blueprint([], stages=stages)
    tracker = StageTracker.from_blueprint(bp)
    update = tracker.update(bp.initial_state(), 0)
    assert update.events == (ev(STAGE_ENTERED, "fine", 0),)
    assert [(d.source, d.name, d.version) for d in update.diagnostics] == [("stage", "broken", 0)]
    assert "enter condition" in update.diagnostics[0].message
    assert tracker.status("broken") == "pending"


def test_json_round_trip_and_restore() -> None:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    sched.start(board.state)
    sched.schedule(board.commit([{"op": "replace", "path": "/phase", "value": "work"}]), board.state, 1)
    saved = sched.stages.to_json()
    assert saved == {
        "evaluated": 1,
        "stages": {
            "plan": {"status": "exited", "since": 1},
            "work": {"status": "active", "since": 1},
            "review": {"status": "pending", "since": None},
        },
    }
    restored = StageTracker.from_json(bp.stages, saved)
    assert restored.to_json() == saved
    assert restored.active == ("work",)
    with pytest.raises(ValueError, match="unknown stage"):
        StageTracker.from_json(bp.stages, {"stages": {"nope": {"status": "active"}}})
    with pytest.raises(ValueError, match="unknown status"):
        StageTracker.from_json(bp.stages, {"stages": {"plan": {"status": "weird"}}})


def test_rules_of_exited_stages() -> None:
    bp = blueprint(RULES, stages=STAGES)
    tracker = StageTracker.from_blueprint(bp)
    assert tracker.rules_of(bp.rules, ["plan"]) == frozenset({"plan-note", "plan-phase"})


def test_stage_event_json() -> None:
    e = ev(STAGE_ENTERED, "plan", 3)
    assert StageEvent.from_json(e.to_json()) == e
    assert e.to_json() == {"kind": "stage.entered", "stage": "plan", "version": 3}


def test_prepare_abort_restores_order_issued_and_stages_and_commit_keeps_them() -> None:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    sched.start(board.state)
    saved = sched.to_json()
    events = board.commit([{"op": "replace", "path": "/phase", "value": "work"}])
    first = sched.prepare(events, board.state, 1)
    assert first.stage_events == (ev(STAGE_EXITED, "plan", 1), ev(STAGE_ENTERED, "work", 1))
    assert [i.worker for i in first] == ["editor"] and sched.to_json() != saved
    with pytest.raises(SchedulerBusy):
        sched.prepare(events, board.state, 1)
    sched.abort()
    assert sched.to_json() == saved and sched.stages.active == ("plan",)
    # The same events prepared again give the same invocations, and commit keeps them.
    again = sched.prepare(events, board.state, 1)
    assert [i.to_json() for i in again] == [i.to_json() for i in first]
    sched.commit()
    sched.abort()  # nothing prepared: a no-op
    assert sched.stages.active == ("work",) and sched.order == saved["order"] + 1
    assert sched.issued("editor") == 1


def test_a_scheduler_without_event_rules_or_stages_does_not_react() -> None:
    assert Scheduler(blueprint(RULES, stages=STAGES)).reacts
    assert Scheduler(blueprint([RULES[-1]])).reacts  # an event rule, no stage
    assert not Scheduler(blueprint([], stages=[])).reacts
