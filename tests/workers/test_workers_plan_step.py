"""The text_actor template's plan steps without a model: ``advance`` keeps ``/plan`` to the steps
still to take after each command (issue 42), against the template's own blueprint and views, and
the kernel accepts what it proposes."""

from __future__ import annotations

from typing import Any

import pytest

from slateboard.blueprint import compile_blueprint
from slateboard.blueprint.templates import template_spec
from slateboard.kernel import Kernel, Proposal
from slateboard.scheduling.parallel import conflict_map
from slateboard.views import build_view
from slateboard.workers.plan_step import advance, first_step

BLUEPRINT = compile_blueprint(template_spec("text_actor"))


def _board(plan: list[str] | None, commands: list[str]) -> Kernel:
    kernel = Kernel(BLUEPRINT)
    ops: list[dict[str, Any]] = [{"op": "replace", "path": "/admissible", "value": ["walk", "run", "rest"]}]
    assert kernel.submit(Proposal("environment", ops)).accepted
    if plan is not None:
        assert kernel.submit(Proposal("planner", [{"op": "add", "path": "/plan", "value": plan}])).accepted
    for i, command in enumerate(commands):
        act = [{"op": "add", "path": "/actions/-", "value": {"command": command}}]
        assert kernel.submit(Proposal("actor", act)).accepted
        seen = [{"op": "add", "path": "/observations/-", "value": {"step": i, "text": f"you {command}"}}]
        if i < len(commands) - 1:  # the newest command still awaits its observation
            assert kernel.submit(Proposal("environment", seen)).accepted
    return kernel


def _advance(kernel: Kernel) -> Any:
    proposed = advance(build_view(BLUEPRINT, "advance", kernel.state, kernel.version))
    if isinstance(proposed, list):  # what it proposes, the kernel accepts
        assert kernel.submit(Proposal("advance", proposed)).accepted
    return proposed


@pytest.mark.parametrize(
    ("plan", "commands", "left"),
    [
        (["walk", "run", "rest"], ["walk"], ["run", "rest"]),  # the first step
        (["walk", "run", "rest"], ["run"], ["rest"]),  # a step later: the one it skipped goes too
        (["walk", "run", "rest"], ["rest"], None),  # the last step: the plan is used up
        (["walk", "run"], ["rest"], ["run"]),  # on no step: it counts as the first
        (["walk", "walk", "run"], ["walk"], ["walk", "run"]),  # a repeated step: its first one only
        (["walk"], ["walk"], None),
        (["fly"], ["run"], None),
    ],
)
def test_advance_keeps_the_steps_still_to_take(plan: list[str], commands: list[str], left: list[str] | None) -> None:
    kernel = _board(plan, commands)
    _advance(kernel)
    assert kernel.state.get("plan") == left


def test_advance_reads_the_newest_command_of_a_long_board() -> None:
    # the window of one shows the newest command, whatever came before
    kernel = _board(None, ["walk", "run", "walk", "rest"])
    assert kernel.submit(
        Proposal("planner", [{"op": "add", "path": "/plan", "value": ["walk", "rest", "run"]}])
    ).accepted
    _advance(kernel)
    assert kernel.state["plan"] == ["run"]


def test_advance_declines_without_a_plan_or_a_command() -> None:
    assert _advance(_board(None, ["walk"])) == {"decline": "no plan"}
    assert _advance(_board(["walk"], [])) == {"decline": "no command"}


def test_the_executor_and_advance_through_a_plan() -> None:
    kernel = _board(["walk", "fly"], [])
    issued = first_step(build_view(BLUEPRINT, "executor", kernel.state, kernel.version))
    assert issued == [{"op": "add", "path": "/actions/-", "value": {"command": "walk"}}]
    assert kernel.submit(Proposal("executor", issued)).accepted
    _advance(kernel)
    assert kernel.state["plan"] == ["fly"]
    # "fly" is not admissible: the executor would not issue it
    assert first_step(build_view(BLUEPRINT, "executor", kernel.state, kernel.version)) == {
        "decline": "the plan's first step 'fly' is not an admissible command"
    }


def test_advance_never_runs_beside_the_environment() -> None:
    # The rules an observation fires read /plan ("plan used up"), so the plan must be advanced
    # before the observation commits: a runner with parallel="auto" runs the two one at a time,
    # advance first (priority 1 against 0).
    assert "environment" in conflict_map(BLUEPRINT)["advance"]
    priorities = {r.spec.invoke: r.spec.priority for r in BLUEPRINT.rules if r.spec.on.path == "/actions/-"}
    assert priorities == {"advance": 1, "environment": 0}
