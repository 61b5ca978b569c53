"""What the text_actor team without a verifier sends (issue 42): the actor follows the plan and
the observation and never reads the task; the planner reads the task, not the /observations
history (its newest item is /observation again), and is asked again whenever the plan is used
up, before the actor acts on that observation; a first observation that opens with the
objective is stored without it. Needs no TextWorld: the environment is a Python hallway."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from slateboard.models import Message, ScriptedModel
from slateboard.stores import open_store
from slateboard_eval.envs import TextTurn, board_inputs, play_on_board, text_actor_blueprint

OBJECTIVE = "Reach the far end of the hallway, then rest."


class Hallway:
    """Three commands are admissible in every room; nothing ends the game but the budget. The
    first observation opens with the objective, as a TextWorld game's does."""

    name = "hallway"
    objective = OBJECTIVE
    COMMANDS = ("walk", "run", "rest")

    def __init__(self) -> None:
        self.commands = 0
        self.last: TextTurn | None = None

    async def reset(self) -> TextTurn:
        self.commands = 0
        self.last = TextTurn(f"{OBJECTIVE}\n\nA long hallway.", self.COMMANDS, max_score=1)
        return self.last

    async def step(self, command: str) -> TextTurn:
        self.commands += 1
        self.last = TextTurn(f"You {command} (room {self.commands}).", self.COMMANDS, max_score=1)
        return self.last

    def policy(self) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        return None


def _reply(value: Any) -> Any:
    """A scripted typed reply (the value itself: no verifier, typed workers) that keeps the
    prompt it answered."""

    def answer(messages: Sequence[Message]) -> str:
        prompts.append("\n".join(m.content for m in messages))
        return json.dumps(value)

    return answer


prompts: list[str] = []


def _plan(*steps: str) -> Any:
    return _reply(list(steps))


def _act(command: str) -> Any:
    return _reply({"command": command})


def test_the_views_without_a_verifier() -> None:
    bp = text_actor_blueprint("none")
    actor, planner = bp.workers["actor"].spec, bp.workers["planner"].spec
    assert "/task" not in actor.reads and "/task" not in (actor.pinned or [])
    assert actor.pinned == ["/plan", "/admissible", "/observation"] and "/actions" not in actor.reads
    assert (actor.output, planner.output) == ("/actions/-", "/plan")
    assert "/task" in planner.reads and "/observations" not in planner.reads and "/verdicts" not in planner.reads
    assert [r.spec.name for r in bp.rules if r.spec.invoke == "planner"] == ["begin", "plan used up"]
    # with a verifier the template is as it is: a "replan" verdict asks the planner too
    full = text_actor_blueprint("llm")
    assert "/task" in full.workers["actor"].spec.reads
    assert [r.spec.name for r in full.rules if r.spec.invoke == "planner"] == ["begin", "plan used up", "replan"]


async def test_the_planner_is_asked_again_when_the_plan_is_used_up() -> None:
    prompts.clear()
    script = [_plan("walk", "run"), _act("walk"), _act("run"), _plan("rest"), _act("rest"), _plan("walk"), _act("walk")]
    store = await open_store("memory://")
    try:
        # without the executor: the actor picks every command (the executor's own tests follow)
        episode = await play_on_board(
            Hallway(), store, model=ScriptedModel(script), max_commands=4, executor=False
        )  # fmt: skip
    finally:
        await store.close()
    assert episode.outcome == "budget" and episode.result.rejected == 0
    state: Any = episode.result.state
    assert [a["command"] for a in state["actions"]] == ["walk", "run", "rest", "walk"]
    # plans at the start, after 2 observations (a 2-step plan) and after 3 (a 1-step plan)
    assert episode.result.usage_by_worker["planner"].calls == 3
    assert episode.result.usage_by_worker["actor"].calls == 4  # once per observation
    planners = [p for p in prompts if "You are worker 'planner'" in p]
    actors = [p for p in prompts if "You are worker 'actor'" in p]
    assert len(planners) == 3 and len(actors) == 4
    assert all(OBJECTIVE not in p for p in actors)  # the task never reaches the actor
    assert all(p.count(OBJECTIVE) == 1 for p in planners)  # once: /task, not also /observation
    assert all("/observations" not in p for p in planners)
    assert '/plan = ["walk","run"]' in actors[0] and '/plan = ["run"]' in actors[1]  # the steps still to take
    assert '/plan = ["rest"]' in actors[2]  # the actor after the replan acts on the new plan
    # The actor reads no /actions: the observation names the command it answers, after the plan
    # and the admissible commands (what changes least leads, for a provider's prompt cache).
    assert all("\n/actions" not in p for p in actors)  # no /actions line on the board
    assert actors[1].index("/plan = ") < actors[1].index("/admissible = ") < actors[1].index("/observation = > walk")
    assert all("Reply with one JSON value for " in p and "JSON Schema" not in p for p in prompts)


def test_the_first_observation_is_stored_without_the_objective_it_opens_with() -> None:
    env = Hallway()
    first = TextTurn(f"{OBJECTIVE}\n\nA long hallway.", Hallway.COMMANDS)
    inputs = board_inputs(env, first)
    assert inputs["task"] == OBJECTIVE and inputs["observation"] == "A long hallway."
    # nothing but the objective, or an observation that does not open with it: kept whole
    assert board_inputs(env, TextTurn(OBJECTIVE))["observation"] == OBJECTIVE
    assert board_inputs(env, TextTurn("A room."))["observation"] == "A room."
