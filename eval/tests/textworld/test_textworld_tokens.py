"""Token economy on TextWorld: in a 20-room world the actor always sees, and may only decode,
every admissible command; the default team makes one model call per command; a verifier is
advisory (it cannot end a game the environment tracks); games on disk play with --game-files;
tokens are counted with the model's own vocabulary when the provider reports none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.kernel import Kernel, Proposal
from slateboard.models import GenerationUsage, Message, ScriptedModel
from slateboard.views import build_view
from slateboard_eval.envs import AdmissibleActor, board_inputs, text_actor_blueprint
from slateboard_eval.envs.textworld import GameFile, GameSpec, TextWorldGame, existing_games, generate_games
from slateboard_eval.textworld_peers import ESTIMATE_METHOD, PROVIDER_METHOD, CountingModel

# Settings no suite uses: a 20-room world with a short quest (the hard tier's 20-room world
# has 30 objects and a 10-step quest).
TWENTY_ROOMS = GameSpec("custom", ("--world-size", "20", "--nb-objects", "12", "--quest-length", "4"), "test-w20")


@pytest.fixture(scope="module")
def twenty_rooms(tmp_path_factory: pytest.TempPathFactory) -> GameFile:
    (game,) = generate_games([TWENTY_ROOMS], seed=99, cache_dir=tmp_path_factory.mktemp("tw-w20"))
    return game


async def test_the_actor_sees_and_decodes_every_admissible_command_in_a_20_room_world(twenty_rooms: GameFile) -> None:
    bp = text_actor_blueprint("none")
    actor = AdmissibleActor(bp, "actor", ScriptedModel(["unused"]))
    env = TextWorldGame(twenty_rooms.path)
    turn = await env.reset()
    state: dict[str, Any] = {**bp.initial_state(), **board_inputs(env, turn, max_commands=60), "plan": ["go"]}
    most = 0
    for step in range(60):
        view = build_view(bp, "actor", state, step)
        admissible = list(turn.admissible)
        most = max(most, len(admissible))
        # Pinned: the whole list, whatever the actor's 3,000-character budget.
        assert view.data["/admissible"] == admissible
        schema, used = actor.patch_schema(view)
        assert used == "output+admissible"  # the typed actor: the command alone, narrowed
        assert json.dumps({"enum": admissible}) in json.dumps(schema)
        if turn.over or not env.policy():
            break
        command = env.policy()[0]
        state["actions"].append({"command": command})
        turn = await env.step(command)
        state["observations"].append({"step": step, "text": turn.observation})
        state.update(observation=turn.observation, admissible=list(turn.admissible), progress=turn.progress())
    assert turn.won
    assert most > 0
    env.close()


def test_a_verdict_cannot_end_a_tracked_game_nor_claim_a_false_success() -> None:
    bp = text_actor_blueprint("llm")
    progress = {"score": 0, "max_score": 1, "won": False, "lost": False, "tracked": True}
    state = {
        **bp.initial_state(),
        "actions": [{"command": "look"}],
        "observations": [{"step": 0, "text": "a room"}],
        "progress": progress,
    }
    kernel = Kernel(bp, state)
    success = {"op": "add", "path": "/verdicts/-", "value": {"step": 0, "status": "success", "reason": "done"}}
    assert kernel.submit(Proposal("verifier", [success])).stage == "invariants"
    failed = {"op": "add", "path": "/verdicts/-", "value": {"step": 0, "status": "failed", "reason": "stuck"}}
    result = {"op": "add", "path": "/result", "value": "gave up"}
    ending = kernel.submit(Proposal("verifier", [failed, result]))
    assert ending.stage == "invariants" and "advisory" in (ending.reason or "")
    assert kernel.submit(Proposal("verifier", [failed])).accepted
    assert bp.done is not None and not bp.done.test({"state": kernel.state}).value
    # In an environment that cannot tell, the verdict (with its result) is what ends the board.
    untracked = Kernel(bp, {**state, "progress": {**progress, "tracked": False}})
    assert untracked.submit(Proposal("verifier", [failed, result])).accepted
    assert bp.done.test({"state": untracked.state}).value


def test_without_a_verifier_the_template_has_no_verifier_worker_or_rule() -> None:
    bp = text_actor_blueprint("none")
    assert "verifier" not in bp.workers
    assert all(rule.spec.invoke != "verifier" for rule in bp.rules)
    with pytest.raises(ValueError, match="unknown verifier mode"):
        text_actor_blueprint("judge")  # type: ignore[arg-type]


def test_games_on_disk_play_with_game_files(tw_games: list[GameFile], tw_cache: Path, tmp_path: Path) -> None:
    found = existing_games([tw_cache])
    assert sorted(g.name for g in found) == sorted(g.name for g in tw_games)
    by_name = {g.name: g for g in found}
    for game in tw_games:
        assert by_name[game.name].walkthrough == game.walkthrough
    with pytest.raises(FileNotFoundError, match="no TextWorld game"):
        existing_games([tmp_path / "nothing.z8"])
    result = CliRunner().invoke(
        app,
        ["eval", "textworld", "--model", "walkthrough", "--systems", "slateboard,langgraph-lean", "--json",
         "--game-files", str(tw_games[1].path), "--counting", "estimate"],
        env={"SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'b.db'}", "XDG_DATA_HOME": str(tmp_path)},
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [e["game"] for e in data["episodes"]] == [tw_games[1].name] * 2
    for summary in data["systems"]:
        assert summary["wins"] == 1 and summary["counting"] == ESTIMATE_METHOD
    board = next(s for s in data["systems"] if s["system"] == "slateboard")
    lean = next(s for s in data["systems"] if s["system"] == "langgraph-lean")
    assert board["verified"] == 1 and set(board["components"]) == {"planner", "actor"}
    # One model call per command: the planner's (at the start, again each time its 5-step plan is
    # used up) and the actor's for every other command, since each plan's first step (the
    # walkthrough's, admissible) is issued by the executor; the lean graph asks an actor and a critic.
    commands = tw_games[1].walkthrough
    assert board["calls"] == commands < lean["calls"]


class Reported(ScriptedModel):
    """A scripted model that reports its usage (as a provider does)."""

    async def generate(self, messages: Any, **kwargs: Any) -> Any:
        gen = await super().generate(messages, **kwargs)
        from dataclasses import replace

        return replace(gen, usage=GenerationUsage(7, 3))


async def test_counting_prefers_the_provider_then_the_tokenizer_then_the_estimate() -> None:
    msgs = [Message.system("You are a player."), Message.user("Observation: a door.")]
    reported = CountingModel(Reported(["open door"]))
    await reported.generate(msgs)
    assert (reported.tokens_in, reported.tokens_out, reported.method) == (7, 3, PROVIDER_METHOD)
    estimated = CountingModel(ScriptedModel(["open door"]))
    await estimated.generate(msgs)
    assert estimated.method == ESTIMATE_METHOD and estimated.estimated
    pytest.importorskip("llama_cpp", reason="counting with a GGUF vocabulary needs llama-cpp-python")
    from slateboard.models import ModelConfigError
    from slateboard.models.local import GGUFTokenCounter

    try:
        tokenizer = GGUFTokenCounter()
    except ModelConfigError as exc:
        pytest.skip(f"the local model's weights are not installed: {exc}")
    counted = CountingModel(ScriptedModel(["open door"]), tokenizer=tokenizer)
    gen = await counted.generate(msgs)
    assert counted.method == tokenizer.name and not counted.estimated
    assert gen.usage.completion_tokens == tokenizer.count("open door") > 0
    # The chat template's own tokens are counted too: more than the contents alone.
    assert counted.tokens_in > tokenizer.count("You are a player.") + tokenizer.count("Observation: a door.")


def test_a_cut_admissible_list_fails_loudly_instead_of_narrowing_to_part_of_it() -> None:
    from slateboard.blueprint.compile import compile_blueprint
    from slateboard.blueprint.templates import template_spec
    from slateboard_eval.envs import TextEnvironmentError

    spec = template_spec("text_actor")
    spec["workers"]["actor"]["pinned"] = ["/task", "/observation"]  # /admissible left to the budget
    spec["workers"]["actor"]["view_budget"] = 400
    bp = compile_blueprint(spec)
    state = {**bp.initial_state(), "admissible": [f"go to room number {i}" for i in range(52)]}
    view = build_view(bp, "actor", state, 0)
    assert view.data.get("/admissible") != state["admissible"]
    actor = AdmissibleActor(bp, "actor", ScriptedModel(["unused"]))
    with pytest.raises(TextEnvironmentError, match="pin it"):
        actor.patch_schema(view)


class Hallway:
    """An environment that cannot list its commands: any command is tried, nothing ends it."""

    name = "hallway"
    objective = "Walk."

    def __init__(self) -> None:
        self.commands = 0
        self.last: Any = None

    async def reset(self) -> Any:
        from slateboard_eval.envs import TextTurn

        self.commands = 0
        self.last = TextTurn("A hallway.", (), max_score=1)
        return self.last

    async def step(self, command: str) -> Any:
        from slateboard_eval.envs import TextTurn

        self.commands += 1
        self.last = TextTurn(f"You {command}.", (), max_score=1)
        return self.last

    def policy(self) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        return None


async def test_after_a_replan_the_actor_acts_once_per_observation() -> None:
    from slateboard.stores import open_store
    from slateboard_eval.envs import play_on_board

    def patch(*ops: dict[str, Any]) -> str:
        return json.dumps({"patch": list(ops)})

    def add(path: str, value: Any) -> dict[str, Any]:
        return {"op": "add", "path": path, "value": value}

    script = [
        patch(add("/plan", ["walk"])),
        patch(add("/actions/-", {"command": "walk"})),
        patch(add("/verdicts/-", {"step": 0, "status": "replan", "reason": "try running"})),
        patch(add("/plan", ["run"])),
        patch(add("/actions/-", {"command": "run"})),
    ]
    store = await open_store("memory://")
    # without the executor, which would issue each plan's (admissible) first step itself
    model = ScriptedModel(script)
    episode = await play_on_board(Hallway(), store, model=model, max_commands=2, verifier="llm", executor=False)
    assert episode.outcome == "budget" and episode.commands == 2
    assert episode.result.usage_by_worker["actor"].calls == 2  # once per observation, none rejected
    assert episode.result.rejected == 0
    assert [a["command"] for a in episode.result.state["actions"]] == ["walk", "run"]  # type: ignore[index]
    await store.close()


def test_the_tiers() -> None:
    from slateboard_eval.envs.textworld import CI_GAMES, FULL_GAMES, HARD_GAMES, game_set

    assert game_set() == list(CI_GAMES) and game_set(full=True) == list(FULL_GAMES)
    assert game_set(tier="hard") == list(HARD_GAMES) and all(s.challenge == "custom" for s in HARD_GAMES)
    with pytest.raises(ValueError, match="unknown game tier"):
        game_set(tier="impossible")


class Door:
    """Two rooms: 'open door' then 'go east' wins."""

    name = "door"
    objective = "Get out."

    def __init__(self) -> None:
        self.commands = 0
        self.last: Any = None

    async def reset(self) -> Any:
        from slateboard_eval.envs import TextTurn

        self.commands = 0
        self.last = TextTurn("A closed door.", ("open door", "wait"), max_score=1)
        return self.last

    async def step(self, command: str) -> Any:
        from slateboard_eval.envs import TextTurn

        self.commands += 1
        if command == "open door" or (command == "go east" and "open" not in self.last.observation):
            self.last = TextTurn("The door is open.", ("go east", "wait"), max_score=1)
        elif command == "go east":
            self.last = TextTurn("You are out.", (), score=1, max_score=1, won=True)
        else:
            self.last = TextTurn(self.last.observation, self.last.admissible, max_score=1)
        return self.last

    def policy(self) -> tuple[str, ...]:
        if self.last is None or self.last.won:
            return ()
        return ("go east",) if "open" in self.last.observation else ("open door", "go east")

    def close(self) -> None:
        return None


async def test_the_langgraph_supervisor_is_a_model_call_with_subagents_as_tools() -> None:
    pytest.importorskip("langgraph", reason="the langgraph baseline needs langgraph (pip install 'slateboard[peers]')")
    from slateboard_eval.envs import WalkthroughModel
    from slateboard_eval.textworld_langgraph import play_langgraph_supervisor

    env = Door()
    model = CountingModel(WalkthroughModel(env))
    episode = await play_langgraph_supervisor(env, model, max_commands=5)
    assert episode.won and episode.trace == ["open door", "go east"]
    # Per command the supervisor calls the actor and the critic and then answers (4 supervisor
    # calls with the planner on the first turn, 3 after), and every subagent is one call.
    assert model.calls == (4 + 3) + (3 + 2)
    assert set(model.by_component) == {"supervisor", "planner", "actor", "verifier"}
    assert sum(model.by_component.values()) == model.total
