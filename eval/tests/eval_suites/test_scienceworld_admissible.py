"""ScienceWorld's bounded admissible list (issue 34): the enumeration is filtered and capped in a
fixed order, the walkthrough's alias joins it only for the gold policy, and on a board the
kernel rejects an invented command at stage ``invariants`` before ScienceWorld sees it."""

from __future__ import annotations

from typing import Any

import pytest

from slateboard.models.erring import ErringModel, ErrorKind, ErrorSchedule
from slateboard.stores import open_store
from slateboard_eval.envs import WalkthroughModel, play_on_board
from slateboard_eval.envs.scienceworld import (
    SCIENCEWORLD_ADMISSIBLE,
    ScienceWorldSpec,
    ScienceWorldTask,
    admissible_commands,
)
from slateboard_eval.erring import SlateboardFormat, WatchedEnvironment, tally_board
from slateboard_eval.textworld_peers import CountingModel

REFERENTS = {"1": "door to kitchen", "2": "orange box", "3": "chair", "4": "air", "5": "table"}
VALID: list[dict[str, Any]] = [
    {"action": "connect chair to air", "obj_ids": [3, 4]},
    {"action": "move table to orange box", "obj_ids": [5, 2]},
    {"action": "look at chair", "obj_ids": [3]},
    {"action": "open door to kitchen", "obj_ids": [1]},
    {"action": "reset task", "obj_ids": []},
    {"action": "look around", "obj_ids": []},
    {"action": "look around", "obj_ids": []},
    {"action": "x" * 121, "obj_ids": []},
]
TASK = "Your task is to find a(n) non-living thing. Then, move it to the orange box in the kitchen."


def test_the_list_keeps_tiers_in_order_and_leaves_out_reset_and_long_commands() -> None:
    assert admissible_commands(VALID, REFERENTS, TASK) == (
        "look around",  # no object
        "open door to kitchen",  # one object: opening before looking
        "look at chair",
        "move table to orange box",  # two objects, one named in the task
        "connect chair to air",  # two objects the task does not name ("air" is not "chair")
    )


def test_the_cap_cuts_the_last_tiers_first_and_the_head_is_kept() -> None:
    assert admissible_commands(VALID, REFERENTS, TASK, limit=3) == (
        "look around",
        "open door to kitchen",
        "look at chair",
    )
    listed = admissible_commands(VALID, REFERENTS, TASK, first=("examine table",), limit=2)
    assert listed == ("examine table", "look around")


def _seed_for(episode: str, call: int, kind: ErrorKind) -> ErrorSchedule:
    for seed in range(20000):
        schedule = ErrorSchedule(0.3, seed=seed, kinds=(kind,))
        if dict(schedule.errors(episode, 12)) == {call: kind}:
            return schedule
    raise AssertionError(f"no seed gives {kind} at call {call} alone")


@pytest.mark.usefixtures("sw_ready")
async def test_the_kernel_rejects_an_invented_command_before_scienceworld_sees_it() -> None:
    env = ScienceWorldTask(ScienceWorldSpec("find-non-living-thing", 3), walkthrough_aliases=True)
    watch = WatchedEnvironment(env)
    schedule = _seed_for("sw", 1, "hallucinated")  # call 0 is the planner's, call 1 the actor's
    erring = ErringModel(
        WalkthroughModel(watch), schedule, episode="sw", format=SlateboardFormat(), context=watch.context
    )
    store = await open_store("memory://")
    try:
        ep = await play_on_board(watch, store, model=CountingModel(erring), max_commands=10)
        records = await store.read_records(ep.result.board_id)
        first = env.gold[0]
    finally:
        await store.close()
        env.close()
    assert [(i.call, i.kind) for i in erring.injections] == [(1, "hallucinated")]
    rejected = [r for r in records if r.outcome == "rejected"]
    assert len(rejected) == 1 and rejected[0].stage == "invariants"
    tally = tally_board(erring.injections, records, watch, ("hallucinated",))
    assert tally["hallucinated"]["caught"] == 1 and tally["hallucinated"]["to_game"] == 0
    # the invented command spent no step: the gold path was played as it is, and won
    assert ep.won and ep.commands == len(env.gold) and first == "open door to kitchen"
    assert watch.off_policy == [False] * len(env.gold)


@pytest.mark.usefixtures("sw_ready")
async def test_a_real_model_gets_the_enumeration_only_and_the_walkthrough_its_alias() -> None:
    spec = ScienceWorldSpec("find-living-thing", 3)
    plain, walk = ScienceWorldTask(spec), ScienceWorldTask(spec, walkthrough_aliases=True)
    try:
        for env in (plain, walk):
            turn = await env.reset()
            for command in env.gold[:-1]:
                assert 0 < len(turn.admissible) <= SCIENCEWORLD_ADMISSIBLE and "reset task" not in turn.admissible
                turn = await env.step(command)
        alias = walk.gold[-1]  # "move egg butterfly egg in inventory to orange box": not enumerated
        assert plain.last is not None and walk.last is not None
        assert alias not in plain.last.admissible and walk.last.admissible[0] == alias
        assert len(walk.last.admissible) <= SCIENCEWORLD_ADMISSIBLE and alias not in walk.last.admissible[1:]
    finally:
        plain.close()
        walk.close()
