"""The text_actor team's executor (issue 42): a plan's first step, when it is an admissible
command, is issued by a function worker instead of an actor call, because the planner has just
planned from that observation and those commands. It acts only on a plan written while no command
awaits its observation, and only when that step is admissible; otherwise (or when the planner's
write is rejected or changes nothing) the actor queued by the same observation acts. Once the
executor acted, that actor's invocation lapses (its rule is rechecked) and calls no model. Needs
no TextWorld: the environment is a Python corridor, the model a scripted one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, replay
from slateboard.models import Message, ScriptedModel
from slateboard.scheduling import Scheduler
from slateboard.stores import open_store
from slateboard.vocabulary import LAPSED_META
from slateboard_eval.envs import BoardEpisode, TextTurn, play_on_board, text_actor_blueprint


class Corridor:
    """Three commands are admissible in every room; nothing ends the game but the budget."""

    name = "corridor"
    objective = "Walk, run and rest."
    COMMANDS = ("walk", "run", "rest")

    def __init__(self) -> None:
        self.commands = 0
        self.last: TextTurn | None = None

    async def reset(self) -> TextTurn:
        self.commands = 0
        self.last = TextTurn("A corridor.", self.COMMANDS, max_score=1)
        return self.last

    async def step(self, command: str) -> TextTurn:
        self.commands += 1
        self.last = TextTurn(f"You {command} (room {self.commands}).", self.COMMANDS, max_score=1)
        return self.last

    def policy(self) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        return None


asked: list[str] = []


def _reply(value: Any, raw: str | None = None) -> Any:
    """A scripted typed reply that notes which worker it answered."""

    def answer(messages: Sequence[Message]) -> str:
        text = "\n".join(m.content for m in messages)
        asked.append("planner" if "You are worker 'planner'" in text else "actor")
        return raw if raw is not None else json.dumps(value)

    return answer


def plan(*steps: str) -> Any:
    return _reply(list(steps))


def act(command: str) -> Any:
    return _reply(command)


def garbled() -> Any:
    return _reply(None, raw='["walk"')


async def play(script: list[Any], commands: int, **kw: Any) -> tuple[BoardEpisode, list[Any]]:
    """Play the corridor on a text_actor board; the episode and its records, after checking that
    the log replays (every proposal decided again) and that every scripted reply was used."""
    asked.clear()
    model = ScriptedModel(script)
    store = await open_store("memory://")
    try:
        episode = await play_on_board(Corridor(), store, model=model, max_commands=commands, **kw)
        records = await store.read_records(episode.result.board_id)
        loaded = await store.load_board(episode.result.board_id)
    finally:
        await store.close()
    report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True)
    assert report.ok, str(report)
    assert len(asked) == len(script)  # no call more, none fewer
    return episode, records


def issued(records: list[Any]) -> list[tuple[str, str]]:
    """(worker, command) of every accepted command, in order."""
    return [
        (r.worker, json.loads(r.patch)[0]["value"]["command"])
        for r in records
        if r.outcome == "accepted" and r.worker in ("actor", "executor")
    ]


def lapsed(records: list[Any]) -> list[str]:
    """The rules of the actor invocations that lapsed (declined for it, no model called)."""
    return [r.reason.split("'")[1] for r in records if r.worker == "actor" and r.meta.get(LAPSED_META)]


async def test_the_executor_issues_a_fresh_admissible_first_step_and_the_actor_the_rest() -> None:
    script = [
        plan("walk", "run"),  # at the start: the executor issues "walk"
        act("run"),  # after 1 observation, on the plan ["run"]: it is used up
        plan("fly", "rest"),  # its first step is not admissible: no executor, the actor acts
        act("rest"),  # skips "fly": the plan is used up again
        plan("fly", "rest"),
        act("walk"),  # on no step of the plan: it counts as the first one ("fly")
        act("run"),  # after 4 observations, on the plan ["rest"]
    ]
    episode, records = await play(script, commands=5)
    assert episode.outcome == "budget" and episode.result.rejected == 0
    assert asked == ["planner", "actor", "planner", "actor", "planner", "actor", "actor"]
    assert issued(records) == [
        ("executor", "walk"), ("actor", "run"), ("actor", "rest"), ("actor", "walk"), ("actor", "run")
    ]  # fmt: skip
    # The actor queued at the start found the command issued: it declined without a model call.
    assert lapsed(records) == ["first act"]
    assert episode.result.usage_by_worker["actor"].calls == 4
    declined = [r for r in records if r.worker == "executor" and r.outcome != "accepted"]
    assert declined == []  # the executor is queued only when it has something to do


async def test_after_every_replan_with_an_admissible_first_step_the_executor_acts() -> None:
    script = [plan("walk", "run"), act("run"), plan("rest", "walk"), act("walk"), plan("run")]
    episode, records = await play(script, commands=5)
    assert episode.outcome == "budget"
    assert issued(records) == [
        ("executor", "walk"), ("actor", "run"), ("executor", "rest"), ("actor", "walk"), ("executor", "run")
    ]  # fmt: skip
    assert lapsed(records) == ["first act", "next", "next"]
    assert episode.result.usage_by_worker["planner"].calls == 3
    assert episode.result.usage_by_worker["actor"].calls == 2


async def test_an_erring_planner_leaves_the_actor_to_act() -> None:
    # The planner's first reply is garbled (rejected), its retry too: no plan, so no executor,
    # and the actor queued at the start acts on the observation alone. The circuit's retry of
    # the planner then plans, but only once "walk" awaits its observation: that plan was not
    # written from the current observation, so the executor does not act on it; the actor does.
    script = [garbled(), garbled(), act("walk"), plan("rest", "run"), act("run")]
    episode, records = await play(script, commands=2)
    assert episode.outcome == "budget" and episode.result.rejected == 2
    assert asked == ["planner", "planner", "actor", "planner", "actor"]
    assert issued(records) == [("actor", "walk"), ("actor", "run")]
    assert lapsed(records) == []


async def test_a_planner_that_errs_once_then_plans_lets_the_executor_act() -> None:
    script = [garbled(), plan("run", "rest"), act("rest")]
    episode, records = await play(script, commands=2)
    assert episode.outcome == "budget" and episode.result.rejected == 1
    assert issued(records) == [("executor", "run"), ("actor", "rest")]
    assert lapsed(records) == ["first act"]


async def test_without_the_executor_the_actor_picks_every_command() -> None:
    script = [plan("walk", "run"), act("walk"), act("run")]
    _episode, records = await play(script, commands=2, executor=False)
    assert issued(records) == [("actor", "walk"), ("actor", "run")] and lapsed(records) == []
    assert "executor" not in text_actor_blueprint("none", executor=False).workers


def test_the_executor_does_not_act_on_a_stale_plan() -> None:
    # A plan written while a command awaits its observation (not from the current observation)
    # queues no executor; one queued before a command was issued lapses when it comes up.
    bp = text_actor_blueprint("none")
    kernel, sched = Kernel(bp), Scheduler(bp)
    kernel.submit(Proposal("environment", [{"op": "replace", "path": "/admissible", "value": ["walk", "run"]}]))
    fresh = kernel.submit(Proposal("planner", [{"op": "add", "path": "/plan", "value": ["walk", "run"]}]))
    queued = [i for i in sched.schedule(fresh.events, kernel.state, kernel.version) if i.worker == "executor"]
    assert len(queued) == 1 and sched.lapsed(queued[0], kernel.state) is None
    assert kernel.submit(
        Proposal("actor", [{"op": "add", "path": "/actions/-", "value": {"command": "walk"}}])
    ).accepted
    assert sched.lapsed(queued[0], kernel.state) is not None  # a command awaits its observation now
    stale = kernel.submit(Proposal("planner", [{"op": "add", "path": "/plan", "value": ["run"]}]))
    assert stale.accepted
    assert [i for i in sched.schedule(stale.events, kernel.state, kernel.version) if i.worker == "executor"] == []
    # and an inadmissible first step queues none either
    kernel.submit(
        Proposal("environment", [{"op": "add", "path": "/observations/-", "value": {"step": 0, "text": "."}}])
    )
    odd = kernel.submit(Proposal("planner", [{"op": "add", "path": "/plan", "value": ["fly", "run"]}]))
    assert [i for i in sched.schedule(odd.events, kernel.state, kernel.version) if i.worker == "executor"] == []
