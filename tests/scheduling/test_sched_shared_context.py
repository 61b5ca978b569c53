"""Rule conditions evaluated on one CEL context per event (``_EventContext``, issue 14) decide
exactly what a fresh dict of each rule's own variables decides: same invocations, same
diagnostics (including evaluation errors), for any patches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_testkit import Board, blueprint

from slateboard.kernel import Proposal
from slateboard.kernel.cel import CelExpr
from slateboard.scheduling import Scheduler
from slateboard.scheduling import rules as rules_module

RULES: list[dict[str, Any]] = [
    {"name": "value", "on": {"op": "add", "path": "/notes/*"}, "when": "value == 'x'", "invoke": "writer"},
    {"name": "bind", "on": {"op": "any", "path": "/notes/*"}, "when": "bindings[0] != 'b'", "invoke": "planner"},
    {"name": "event", "on": {"op": "any", "path": "/claims/*"}, "when": "event.op == 'add'", "invoke": "verifier"},
    {"name": "state", "on": {"op": "any", "path": "/count"}, "when": "state.count > 1", "invoke": "planner"},
    {"name": "error", "on": {"op": "any", "path": "/claims/*"}, "when": "value.text + 1 == 2", "invoke": "editor"},
    {"name": "missing", "on": {"op": "any", "path": "/notes/*"}, "when": "value.nope == 1", "invoke": "editor"},
    {
        "name": "all",
        "on": {"op": "any", "path": "/claims/*/status"},
        "when": "state.claims.all(c, c.status != 'bad') && bindings.size() == 1",
        "invoke": "verifier",
    },
    {"name": "plain", "on": {"op": "any", "path": "/phase"}, "invoke": "planner"},
    # matches the same events as "bind" with no bindings: each rule must see its own
    {"name": "deep", "on": {"op": "any", "path": "/**"}, "when": "bindings.size() == 0", "invoke": "writer"},
]

_patch = st.one_of(
    st.builds(
        lambda k, v: [{"op": "add", "path": f"/notes/{k}", "value": v}],
        st.sampled_from("abc"),
        st.sampled_from(["x", "y"]),
    ),
    st.builds(
        lambda t, s: [{"op": "add", "path": "/claims/-", "value": {"text": t, "status": s}}],
        st.sampled_from(["p", "q"]),
        st.sampled_from(["ok", "bad"]),
    ),
    st.builds(lambda n: [{"op": "replace", "path": "/count", "value": n}], st.integers(0, 3)),
    st.builds(lambda p: [{"op": "replace", "path": "/phase", "value": p}], st.sampled_from(["plan", "do"])),
)


def _per_rule_dict(self: Any, expr: CelExpr, binding: tuple[str, ...]) -> dict[str, Any]:
    """The reference: a fresh dict of the variables the rule names (what schedule used before)."""
    ctx: dict[str, Any] = {}
    if expr.uses("event"):
        ctx["event"] = self.event_json
    if expr.uses("bindings"):
        ctx["bindings"] = list(binding)
    if expr.uses("value"):
        ctx["value"] = rules_module._value(self.event, self.state)
    if expr.uses("state"):
        ctx["state"] = self.state
    return ctx


def _run(patches: list[list[dict[str, Any]]]) -> list[Any]:
    bp = blueprint(RULES)
    board = Board(bp)
    sched = Scheduler(bp)
    out: list[Any] = []
    for patch in patches:
        decision = board.kernel.submit(Proposal("editor", patch))
        if not decision.accepted:  # a replace by the same value is a no-op: no events
            continue
        got = sched.schedule(decision.events, board.state, board.version)
        out.append(([(i.worker, i.rule, i.binding, i.event) for i in got], got.diagnostics))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(_patch, min_size=1, max_size=8))
def test_shared_context_decides_as_per_rule_dicts(patches: list[list[dict[str, Any]]]) -> None:
    shared = _run(patches)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rules_module._EventContext, "bind", _per_rule_dict)
        reference = _run(patches)
    assert shared == reference


def test_rules_see_their_own_bindings_and_errors() -> None:
    out = _run([[{"op": "add", "path": "/notes/b", "value": "x"}], [{"op": "add", "path": "/notes/a", "value": "y"}]])
    first, second = out
    # value matched, bindings[0] == 'b' refused planner, and "deep" saw its own empty bindings
    assert [(w, rule, b) for w, rule, b, _ in first[0]] == [("writer", "value", ("b",)), ("writer", "deep", ())]
    assert [(w, rule, b) for w, rule, b, _ in second[0]] == [("planner", "bind", ("a",)), ("writer", "deep", ())]
    assert [d.message for d in first[1]] == [
        "condition 'value.nope == 1' failed: No such overload: the operation is not defined for the given operand types"
    ]
