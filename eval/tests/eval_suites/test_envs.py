"""ScienceWorld and TextWorldExpress as TextEnvironments: the gold path wins, the policy follows
the episode, and a game is the same game for the same spec and seed."""

from __future__ import annotations

import pytest

from slateboard_eval.envs import TextEnvironment
from slateboard_eval.envs._gold import GoldTracker
from slateboard_eval.envs.scienceworld import ScienceWorldSpec, ScienceWorldTask
from slateboard_eval.envs.twx import CI_GAMES, FULL_GAMES, TwxGame, game_specs


def test_gold_tracker_leaves_the_path_on_a_foreign_command() -> None:
    g = GoldTracker(["a", "b", "c"])
    g.executed("a")
    assert g.remaining() == ("b", "c")
    g.executed("x")
    assert g.remaining() == ()
    g.reset(["z"])
    assert g.remaining() == ("z",)


def test_twx_game_specs() -> None:
    assert game_specs() == list(CI_GAMES)
    assert [s.label for s in game_specs(full=True, only=["twc-l1p2", "coin"])][:1] == ["twc-l1p2"]
    assert all(s.game == "coin" for s in game_specs(full=True, only=["coin"]))
    with pytest.raises(ValueError, match="unknown TextWorldExpress game"):
        game_specs(only=["zork"])
    assert len({s.label for s in FULL_GAMES}) == len(FULL_GAMES)


async def _play_gold(env: TextEnvironment) -> tuple[int, bool, int]:
    turn = await env.reset()
    while env.policy():
        command = env.policy()[0]
        if turn.admissible:
            assert command in turn.admissible, f"gold command {command!r} is not admissible"
        turn = await env.step(command)
    return env.commands, turn.won, turn.score


@pytest.mark.usefixtures("twx_ready")
async def test_twx_gold_wins_every_ci_game_and_is_reproducible() -> None:
    for spec in CI_GAMES:
        env = TwxGame(spec, 1)
        try:
            commands, won, score = await _play_gold(env)
            assert won and score == 100
            assert commands == len(env.gold) > 0
            first = env.gold
            await env.reset()
            assert env.gold == first  # same spec and seed, same game
            assert env.policy() == first
            turn = await env.step("dance wildly")  # an unknown command is answered, not raised
            assert not turn.won and env.policy() == ()
        finally:
            env.close()
    other = TwxGame(CI_GAMES[1], 2)
    try:
        await other.reset()
        assert other.name == "cooking-l1i1-s2"
    finally:
        other.close()


@pytest.mark.usefixtures("sw_ready")
async def test_scienceworld_gold_wins_a_task_variation() -> None:
    # the gold policy's aliases join the list: every gold command is then admissible
    env = ScienceWorldTask(ScienceWorldSpec("find-non-living-thing", 1), walkthrough_aliases=True)
    try:
        commands, won, score = await _play_gold(env)
        assert won and score == 100
        assert commands == len(env.gold)
        assert "Command templates:" in env.objective and "focus on OBJ" in env.objective
        assert env.last is not None and env.last.admissible == ()
    finally:
        env.close()
