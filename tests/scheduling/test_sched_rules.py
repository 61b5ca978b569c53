"""Rules -> invocations: op filters, bindings, appends, CEL conditions, start rules, ids."""

from __future__ import annotations

from typing import Any

from sched_testkit import Board, blueprint

from slateboard.scheduling import Agenda, Diagnostic, Invocation, Scheduler
from slateboard.scheduling.rules import START_EVENT, _context


def run(
    rules: list[dict[str, Any]], patches: list[list[dict[str, Any]]], **kw: Any
) -> tuple[Scheduler, list[list[Invocation]]]:
    bp = blueprint(rules, **kw)
    board = Board(bp)
    sched = Scheduler(bp)
    out = [list(sched.start(board.state))]
    for patch in patches:
        events = board.commit(patch)
        out.append(list(sched.schedule(events, board.state, board.version)))
    return sched, out


def workers(batch: list[Invocation]) -> list[str]:
    return [inv.worker for inv in batch]


# -- op filters -------------------------------------------------------------------------------
def test_op_filter_matches_only_its_op() -> None:
    rules = [
        {"name": "on-add", "on": {"op": "add", "path": "/notes/*"}, "invoke": "writer"},
        {"name": "on-replace", "on": {"op": "replace", "path": "/notes/*"}, "invoke": "planner"},
    ]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/notes/a", "value": "x"}],
            [{"op": "replace", "path": "/notes/a", "value": "y"}],
        ],
    )
    assert workers(out[1]) == ["writer"]
    assert workers(out[2]) == ["planner"]


def test_any_matches_every_op() -> None:
    rules = [{"name": "any", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer"}]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/notes/a", "value": "x"}],
            [{"op": "replace", "path": "/notes/a", "value": "y"}],
            [{"op": "copy", "from": "/notes/a", "path": "/notes/b"}],
            [{"op": "remove", "path": "/notes/a"}],
        ],
    )
    assert [len(b) for b in out] == [0, 1, 1, 1, 1]
    assert [b[0].event["op"] for b in out[1:]] == ["add", "replace", "copy", "remove"]


def test_any_does_not_match_start_and_start_does_not_match_events() -> None:
    rules = [
        {"name": "any", "on": {"op": "any", "path": "/phase"}, "invoke": "writer"},
        {"name": "boot", "on": {"op": "start"}, "invoke": "planner"},
    ]
    _, out = run(rules, [[{"op": "replace", "path": "/phase", "value": "go"}]])
    assert workers(out[0]) == ["planner"]
    assert workers(out[1]) == ["writer"]


def test_remove_event_has_null_value() -> None:
    rules = [
        {
            "name": "gone",
            "on": {"op": "remove", "path": "/notes/*"},
            "when": "value == null && bindings[0] == 'a'",
            "invoke": "writer",
        }
    ]
    _, out = run(
        rules,
        [[{"op": "add", "path": "/notes/a", "value": "x"}], [{"op": "remove", "path": "/notes/a"}]],
    )
    assert workers(out[2]) == ["writer"]
    assert out[2][0].binding == ("a",)


# -- patterns ---------------------------------------------------------------------------------
def test_star_binds_segments() -> None:
    rules = [{"name": "verify", "on": {"op": "any", "path": "/claims/*/status"}, "invoke": "verifier"}]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/claims/-", "value": {"text": "t0"}}],
            [{"op": "add", "path": "/claims/-", "value": {"text": "t1"}}],
            [{"op": "add", "path": "/claims/1/status", "value": "open"}],
        ],
    )
    assert out[1] == [] and out[2] == []
    assert out[3][0].binding == ("1",)
    assert out[3][0].event == {"op": "add", "path": "/claims/1/status", "version": 3}


def test_dash_matches_appends_only() -> None:
    rules = [{"name": "new-claim", "on": {"op": "add", "path": "/claims/-"}, "invoke": "verifier"}]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/claims/-", "value": {"text": "a"}}],
            [{"op": "add", "path": "/claims/0", "value": {"text": "front"}}],  # insert, not append
            [{"op": "add", "path": "/claims/2", "value": {"text": "end"}}],  # index == len: an append
        ],
    )
    assert [b[0].binding if b else None for b in out[1:]] == [("0",), None, ("2",)]


def test_deep_pattern_and_root_default() -> None:
    rules = [
        {"name": "deep", "on": {"op": "any", "path": "/claims/**"}, "invoke": "verifier"},
        {"name": "root", "on": {"op": "any"}, "invoke": "planner"},  # path "" = only the root
    ]
    _, out = run(rules, [[{"op": "add", "path": "/claims/-", "value": {"text": "a"}}]])
    assert workers(out[1]) == ["verifier"]


# -- conditions -------------------------------------------------------------------------------
def test_condition_on_value() -> None:
    rules = [
        {
            "name": "open",
            "on": {"op": "add", "path": "/claims/-"},
            "when": "value.status == 'open'",
            "invoke": "verifier",
        }
    ]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/claims/-", "value": {"text": "a", "status": "open"}}],
            [{"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "done"}}],
        ],
    )
    assert [len(b) for b in out[1:]] == [1, 0]


def test_condition_on_bindings_and_event() -> None:
    rules = [
        {
            "name": "only-b",
            "on": {"op": "any", "path": "/notes/*"},
            "when": "bindings[0] == 'b' && event.op == 'add' && event.version == 2",
            "invoke": "writer",
        }
    ]
    _, out = run(
        rules,
        [[{"op": "add", "path": "/notes/a", "value": "x"}], [{"op": "add", "path": "/notes/b", "value": "y"}]],
    )
    assert [len(b) for b in out[1:]] == [0, 1]


def test_condition_on_state() -> None:
    rules = [
        {
            "name": "enough",
            "on": {"op": "add", "path": "/claims/-"},
            "when": "size(state.claims) >= 2",
            "invoke": "planner",
        }
    ]
    _, out = run(
        rules,
        [
            [{"op": "add", "path": "/claims/-", "value": {"text": "a"}}],
            [{"op": "add", "path": "/claims/-", "value": {"text": "b"}}],
        ],
    )
    assert [len(b) for b in out[1:]] == [0, 1]


def test_state_is_passed_only_when_used() -> None:
    bp = blueprint(
        [
            {"name": "v", "on": {"op": "any", "path": "/phase"}, "when": "value == 'x'", "invoke": "planner"},
            {"name": "s", "on": {"op": "any", "path": "/phase"}, "when": "state.count == 0", "invoke": "planner"},
        ]
    )
    board = Board(bp)
    events = board.commit([{"op": "replace", "path": "/phase", "value": "x"}])
    r_value, r_state = bp.rules
    assert set(_context(r_value, {}, events[0], (), board.state)) == {"value"}
    assert set(_context(r_state, {}, events[0], (), board.state)) == {"state"}


def test_erroring_condition_does_not_fire_and_is_reported() -> None:
    rules = [
        {"name": "bad", "on": {"op": "any", "path": "/notes/*"}, "when": "value.missing == 1", "invoke": "writer"},
        {"name": "notbool", "on": {"op": "any", "path": "/notes/*"}, "when": "size(bindings)", "invoke": "planner"},
        {"name": "good", "on": {"op": "any", "path": "/notes/*"}, "invoke": "editor"},
    ]
    bp = blueprint(rules)
    board = Board(bp)
    sched = Scheduler(bp)
    events = board.commit([{"op": "add", "path": "/notes/a", "value": "x"}])
    got = sched.schedule(events, board.state, board.version)
    assert workers(got) == ["editor"]
    assert [(d.source, d.name, d.version) for d in got.diagnostics] == [("rule", "bad", 1), ("rule", "notbool", 1)]
    assert got.diagnostics[0].event == {"op": "add", "path": "/notes/a", "version": 1}
    assert "not bool" in got.diagnostics[1].message
    # deterministic: the same inputs give the same diagnostics
    again = Scheduler(bp).schedule(events, board.state, board.version)
    assert again.diagnostics == got.diagnostics


# -- start rules ------------------------------------------------------------------------------
def test_start_rules_fire_once_in_blueprint_order() -> None:
    rules: list[dict[str, Any]] = [
        {"name": "s1", "on": {"op": "start"}, "invoke": "planner", "priority": 1},
        {"name": "e", "on": {"op": "any", "path": "/phase"}, "invoke": "writer"},
        {"name": "s2", "on": {"op": "start"}, "invoke": "writer", "priority": 5},
        {"name": "s3", "on": {"op": "start"}, "when": "state.phase == 'nope'", "invoke": "editor"},
    ]
    bp = blueprint(rules)
    sched = Scheduler(bp)
    got = sched.start(bp.initial_state())
    assert [(i.id, i.worker, i.rule, i.priority, i.order) for i in got] == [
        ("v0.0", "planner", "s1", 1, 0),
        ("v0.1", "writer", "s2", 5, 1),
    ]
    assert all(i.event == START_EVENT for i in got)
    assert sched.start(bp.initial_state()) == []
    assert sched.started


# -- ids, order, de-duplication, limits ------------------------------------------------------
PATCHES: list[list[dict[str, Any]]] = [
    [{"op": "add", "path": "/claims/-", "value": {"text": "a"}}, {"op": "add", "path": "/notes/k", "value": "v"}],
    [{"op": "add", "path": "/claims/0/status", "value": "open"}],
    [{"op": "replace", "path": "/phase", "value": "go"}],
]
RULES: list[dict[str, Any]] = [
    {"name": "boot", "on": {"op": "start"}, "invoke": "planner"},
    {"name": "claim", "on": {"op": "add", "path": "/claims/-"}, "invoke": "verifier", "priority": 2},
    {"name": "status", "on": {"op": "any", "path": "/claims/*/status"}, "invoke": "verifier"},
    {"name": "note", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer"},
    {"name": "phase", "on": {"op": "any", "path": "/phase"}, "invoke": "editor"},
]


def test_ids_are_deterministic() -> None:
    _, first = run(RULES, PATCHES)
    _, second = run(RULES, PATCHES)
    assert [[i.to_json() for i in b] for b in first] == [[i.to_json() for i in b] for b in second]
    ids = [i.id for b in first for i in b]
    assert ids == ["v0.0", "v1.0", "v1.1", "v2.0", "v3.0"]
    orders = [i.order for b in first for i in b]
    assert orders == sorted(orders) == list(range(len(orders)))


def test_order_counter_restores_from_json() -> None:
    bp = blueprint(RULES)
    board = Board(bp)
    sched = Scheduler(bp)
    sched.start(board.state)
    events = board.commit(PATCHES[0])
    sched.schedule(events, board.state, board.version)
    saved = sched.to_json()
    restored = Scheduler.from_json(bp, saved)
    assert restored.to_json() == saved
    assert restored.order == sched.order == 3
    events = board.commit(PATCHES[1])
    a = sched.schedule(events, board.state, board.version)
    b = restored.schedule(events, board.state, board.version)
    assert [i.to_json() for i in a] == [i.to_json() for i in b]
    assert a[0].order == 3
    assert restored.start(board.state) == []  # start already ran


def test_duplicates_within_a_batch_and_pending_are_not_recreated() -> None:
    rules: list[dict[str, Any]] = [
        {"name": "n1", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer", "when": "true"},
        {"name": "n2", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer", "priority": 9},
    ]
    bp = blueprint(rules)
    board = Board(bp)
    sched = Scheduler(bp)
    agenda = Agenda()
    events = board.commit(
        [{"op": "add", "path": "/notes/a", "value": "1"}, {"op": "replace", "path": "/notes/a", "value": "2"}]
    )
    got = sched.schedule(events, board.state, board.version, pending=agenda.pending_keys)
    assert [(i.rule, i.binding) for i in got] == [("n1", ("a",))]  # first in (event, rule) order wins
    for inv in got:
        assert agenda.push(inv)
    events = board.commit(
        [{"op": "add", "path": "/notes/a", "value": "3"}, {"op": "add", "path": "/notes/b", "value": "x"}]
    )
    got = sched.schedule(events, board.state, board.version, pending=agenda.pending_keys)
    assert [(i.id, i.binding) for i in got] == [("v2.0", ("b",))]


def test_max_invocations_limits_a_worker() -> None:
    rules = [{"name": "n", "on": {"op": "any", "path": "/notes/*"}, "invoke": "writer"}]
    bp = blueprint(rules, worker_overrides={"writer": {"max_invocations": 2}})
    board = Board(bp)
    sched = Scheduler(bp)
    made: list[Invocation] = []
    diags: list[Diagnostic] = []
    for key in "abc":
        events = board.commit([{"op": "add", "path": f"/notes/{key}", "value": "x"}])
        got = sched.schedule(events, board.state, board.version)
        made.extend(got)
        diags.extend(got.diagnostics)
    assert [i.binding for i in made] == [("a",), ("b",)]
    assert sched.issued("writer") == 2
    assert [(d.source, d.version) for d in diags] == [("limit", 3)]
    assert "max_invocations=2" in diags[0].message


def test_value_of_appended_item_is_the_committed_value() -> None:
    rules = [
        {
            "name": "claim",
            "on": {"op": "add", "path": "/claims/-"},
            "when": "value.text == 'hello'",
            "invoke": "verifier",
        }
    ]
    _, out = run(rules, [[{"op": "add", "path": "/claims/-", "value": {"text": "hello"}}]])
    assert len(out[1]) == 1
