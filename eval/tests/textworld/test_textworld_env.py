"""A TextWorld game as a TextEnvironment, and the environment worker on a text_actor board:
command -> observation, invalid commands, won/lost ends the board, resynchronisation."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from slateboard.blueprint.templates import load_template
from slateboard.kernel import Kernel, Proposal
from slateboard.models import ScriptedModel
from slateboard.stores import open_store
from slateboard.views import build_view
from slateboard_eval.envs import (
    AdmissibleActor,
    EnvironmentWorker,
    TextEnvironmentError,
    TextTurn,
    TurnVerifier,
    admissible_match,
    board_inputs,
    play_on_board,
    text_actor_blueprint,
)
from slateboard_eval.envs.textworld import GameFile, TextWorldGame, clean_feedback


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


class CliffEnv:
    """A two-command environment: 'walk' wins, 'jump' loses, anything else is not understood."""

    def __init__(self) -> None:
        self.commands = 0
        self.last: TextTurn | None = None
        self.name = "cliff"
        self.objective = "Get home without jumping."

    async def reset(self) -> TextTurn:
        self.commands = 0
        self.last = TextTurn("You stand on a cliff.", ("walk", "jump"), max_score=1)
        return self.last

    async def step(self, command: str) -> TextTurn:
        self.commands += 1
        if command == "walk":
            self.last = TextTurn("You are home.", ("walk",), score=1, max_score=1, won=True)
        elif command == "jump":
            self.last = TextTurn("You fall.", (), max_score=1, lost=True)
        else:
            self.last = TextTurn("What?", ("walk", "jump"), max_score=1)
        return self.last

    def policy(self) -> tuple[str, ...]:
        return ("walk",)

    def close(self) -> None:
        pass


async def test_a_game_resets_to_a_clean_first_turn_with_its_walkthrough(tw_games: list[GameFile]) -> None:
    game = TextWorldGame(tw_games[2].path)  # tw-simple: a detailed objective
    first = await game.reset()
    assert game.objective and game.objective in first.observation
    assert "$$" not in first.observation and not first.observation.rstrip().endswith(">")
    assert first.admissible and "look" in first.admissible
    assert not first.won and not first.lost and first.score == 0 and first.max_score == tw_games[2].max_score
    policy = game.policy()
    assert len(policy) == tw_games[2].walkthrough and policy[0] in first.admissible
    game.close()


async def test_an_invalid_command_is_answered_by_the_game(tw_games: list[GameFile]) -> None:
    game = TextWorldGame(tw_games[0].path)
    first = await game.reset()
    turn = await game.step("dance wildly")
    assert "not a verb I recognise" in turn.observation
    assert game.commands == 1 and not turn.won and not turn.lost and turn.score == 0
    assert turn.admissible == first.admissible
    game.close()


def test_clean_feedback_drops_banner_prompt_and_status_line() -> None:
    raw = "  ________  __\n | $$ $$ |\n\nHello there.\n\n\n\n-= Hall =-\nA hall.\n\n>   -= Hall =-0/1"
    assert clean_feedback(raw) == "Hello there.\n\n-= Hall =-\nA hall."


def test_admissible_match_reads_free_text() -> None:
    cmds = ["go east", "take old key", "open door"]
    assert admissible_match("Go East", cmds) == "go east"
    assert admissible_match("I think we should take old key now.", cmds) == "take old key"
    assert admissible_match("the door, open it", cmds) == "open door"
    assert admissible_match("zzz", cmds) == "zzz" and admissible_match(" look ", []) == "look"


async def test_the_environment_worker_answers_the_latest_command_on_the_board(tw_games: list[GameFile]) -> None:
    game = TextWorldGame(tw_games[2].path)
    first = await game.reset()
    bp = load_template("text_actor")
    state = {**bp.initial_state(), **board_inputs(game, first, max_commands=5)}
    kernel = Kernel(bp, state)
    worker = EnvironmentWorker(game)
    # A command that is not admissible is rejected by the kernel and never reaches the game.
    bad = kernel.submit(Proposal("actor", [add("/actions/-", {"command": "fly to the moon"})]))
    assert bad.stage == "invariants" and "an admissible command" in (bad.reason or "")
    for step, command in enumerate(game.policy()[:2]):
        assert kernel.submit(Proposal("actor", [add("/actions/-", {"command": command})])).accepted
        view = build_view(bp, "environment", kernel.state, kernel.version)
        patch = await worker(view)
        decision = kernel.submit(Proposal("environment", patch))
        assert decision.accepted, decision.reason
        obs = kernel.state["observations"][-1]
        assert obs["step"] == step and obs["text"] == kernel.state["observation"] == game.last.observation  # type: ignore[union-attr]
        assert kernel.state["admissible"] == list(game.last.admissible)  # type: ignore[union-attr]
        assert kernel.state["progress"]["score"] == game.last.score and kernel.state["progress"]["tracked"] is True  # type: ignore[union-attr]
    assert game.commands == 2
    # Asked again for the same command (a re-queued invocation): the same turn, not a second step.
    again = await worker(build_view(bp, "environment", kernel.state, kernel.version))
    assert again == EnvironmentWorker.patch(1, worker.turns[1]) and game.commands == 2
    # A fresh worker over a fresh game (a resumed board in another process) replays the board's
    # commands first and then answers the latest one exactly as the first game did.
    third = game.policy()[0]
    assert kernel.submit(Proposal("actor", [add("/actions/-", {"command": third})])).accepted
    view = build_view(bp, "environment", kernel.state, kernel.version)
    expected = await worker(view)
    other = TextWorldGame(tw_games[2].path)
    assert await EnvironmentWorker(other)(view) == expected and other.commands == 3
    game.close()
    other.close()


async def test_the_environment_worker_needs_a_command() -> None:
    bp = load_template("text_actor")
    env = CliffEnv()
    view = build_view(bp, "environment", bp.initial_state(), 0)
    with pytest.raises(TextEnvironmentError, match="no command"):
        await EnvironmentWorker(env)(view)


@pytest.mark.parametrize(("command", "outcome"), [("walk", "won"), ("jump", "lost")])
async def test_won_or_lost_ends_the_board(command: str, outcome: str) -> None:
    store = await open_store("memory://")
    env = CliffEnv()
    # without a verifier the planner and the actor reply typed values: the plan, the command
    plan, act = json.dumps(["get home"]), json.dumps(command)
    model = ScriptedModel([plan, act])
    episode = await play_on_board(env, store, model=model, max_commands=5)
    assert episode.result.end_reason == "done" and episode.outcome == outcome and episode.commands == 1
    assert episode.won is (outcome == "won")
    assert episode.result.state["progress"][outcome] is True  # type: ignore[index]
    # The board ended on the environment's turn: the verifier was never asked.
    assert "verifier" not in episode.result.usage_by_worker
    await store.close()


class OpenEnv(CliffEnv):
    """An environment that cannot list its admissible commands: any command is tried."""

    async def reset(self) -> TextTurn:
        self.commands = 0
        self.last = TextTurn("You stand on a cliff.", (), max_score=1)
        return self.last

    async def step(self, command: str) -> TextTurn:
        self.commands += 1
        self.last = TextTurn(f"You {command}.", (), max_score=1)
        return self.last


async def test_the_command_budget_ends_the_board() -> None:
    store = await open_store("memory://")
    # no admissible list to decode from: the actor replies the /actions item
    plan, act = json.dumps(["wait"]), json.dumps({"command": "wait"})
    # a one-step plan is used up by each command: the planner is asked again before the next one
    episode = await play_on_board(OpenEnv(), store, model=ScriptedModel([plan, act, plan, act]), max_commands=2)
    assert episode.outcome == "budget" and episode.commands == 2 and not episode.won
    assert [o["text"] for o in episode.result.state["observations"]] == ["You wait.", "You wait."]  # type: ignore[index]
    await store.close()


def test_the_admissible_actor_decodes_only_admissible_commands() -> None:
    bp = load_template("text_actor")
    actor = AdmissibleActor(bp, "actor", ScriptedModel(["unused"]))
    state = {**bp.initial_state(), "admissible": ["go east", "look"]}
    schema, used = actor.patch_schema(build_view(bp, "actor", state, 0))
    assert used == "contract+admissible"
    text = json.dumps(schema)
    assert '"command": {"enum": ["go east", "look"]}' in text and "why" not in text
    # No admissible list: the plain contract schema.
    _, plain = actor.patch_schema(build_view(bp, "actor", bp.initial_state(), 0))
    assert plain == "contract"
    # The typed actor of the team without a verifier: the command alone, one of the admissible.
    typed = text_actor_blueprint("none")
    value_actor = AdmissibleActor(typed, "actor", ScriptedModel(["unused"]), output_hint=True)
    value, used = value_actor.patch_schema(build_view(typed, "actor", {**typed.initial_state(), **state}, 0))
    assert used == "output+admissible" and value_actor.constrains(used)
    assert value == {"enum": ["go east", "look"]}


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('"go east"', {"command": "go east"}),  # the command alone: proposed as the item it names
        ('{"command":"look"}', {"command": "look"}),  # already an item: as it is
        ('"go ea', '"go ea'),  # cut short: no JSON string, the kernel's to reject at stage schema
    ],
)
async def test_the_typed_actor_proposes_a_bare_command_as_an_item(reply: str, value: object) -> None:
    typed = text_actor_blueprint("none")
    actor = AdmissibleActor(typed, "actor", ScriptedModel([reply]), output_hint=True)
    state = {**typed.initial_state(), "admissible": ["go east", "look"]}
    proposed = await actor.propose(build_view(typed, "actor", state, 0))
    assert proposed.patch == [{"op": "add", "path": "/actions/-", "value": value}]


def test_the_turn_verifier_decodes_the_latest_step_and_no_false_success() -> None:
    bp = load_template("text_actor")
    verifier = TurnVerifier(bp, "verifier", ScriptedModel(["unused"]))
    state = {
        **bp.initial_state(),
        "actions": [{"command": "go east"}, {"command": "look"}],
        "observations": [{"step": 0, "text": "A hall."}, {"step": 1, "text": "Still a hall."}],
        "progress": {"score": 0, "max_score": 1, "won": False, "lost": False, "tracked": True},
    }
    schema, used = verifier.patch_schema(build_view(bp, "verifier", state, 4))
    text = json.dumps(schema)
    assert used == "contract+turn"
    assert '"step": {"const": 1}' in text and '"status": {"enum": ["continue", "replan", "failed"]}' in text
    # Where the environment cannot tell won from not won, success may be claimed.
    untracked = {**state, "progress": {**state["progress"], "tracked": False}}
    text = json.dumps(verifier.patch_schema(build_view(bp, "verifier", untracked, 4))[0])
    assert '"status": {"enum": ["continue", "replan", "success", "failed"]}' in text
    # Before any observation there is nothing to narrow.
    assert verifier.patch_schema(build_view(bp, "verifier", bp.initial_state(), 0))[1] == "contract"
