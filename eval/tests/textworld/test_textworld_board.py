"""The text_actor team on real TextWorld games through the real Runner and a SQLite store: the
walkthrough workers win every CI game and every log verifies by replay."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard_eval.envs import VerifierMode, WalkthroughModel, play_on_board
from slateboard_eval.envs.textworld import GameFile, TextWorldGame
from slateboard_eval.textworld_peers import CountingModel


async def verified(store: Store, board_id: str) -> None:
    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True)
    assert report.ok, str(report)


async def test_the_walkthrough_workers_win_every_ci_game(tw_games: list[GameFile], tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'boards.db'}")
    for game in tw_games:
        env = TextWorldGame(game.path)
        episode = await play_on_board(env, store, walkthrough=True, max_commands=30)
        state = episode.result.state
        assert isinstance(state, dict)
        assert episode.won and episode.outcome == "won" and episode.result.end_reason == "done", game.name
        assert episode.commands == game.walkthrough or game.spec.challenge == "tw-cooking", game.name
        assert state["progress"]["score"] == state["progress"]["max_score"] == game.max_score
        assert episode.result.rejected == 0 and episode.result.total_tokens == 0
        # Turn-taking held: one observation per command, in order.
        assert [o["step"] for o in state["observations"]] == list(range(len(state["actions"])))
        await verified(store, episode.result.board_id)
        env.close()
    await store.close()


@pytest.mark.parametrize("verifier", ["llm", "none"])
async def test_the_walkthrough_model_wins_through_llm_workers_and_tokens_are_logged(
    tw_games: list[GameFile], verifier: VerifierMode
) -> None:
    store = await open_store("memory://")
    game = tw_games[1]
    env = TextWorldGame(game.path)
    model = CountingModel(WalkthroughModel(env))
    episode = await play_on_board(env, store, model=model, max_commands=10, verifier=verifier)
    assert episode.won and episode.commands == game.walkthrough
    # Every LLM call's tokens are in the log (planner, actor, verifier), none hidden.
    assert episode.result.total_tokens == model.total > 0
    assert model.calls == sum(u.calls for u in episode.result.usage_by_worker.values() if u.total)
    records = await store.read_records(episode.result.board_id)
    # (an actor invocation that lapsed, because the executor issued the command, called no model)
    called = [r for r in records if r.worker in ("actor", "verifier") and not r.meta.get("lapsed")]
    decodings = {r.worker: r.meta.get("decoding") for r in called}
    if verifier == "llm":
        assert decodings == {"actor": "contract+admissible", "verifier": "contract+turn"}
        # A verdict per observation, an action per observation: the actor is never asked twice,
        # and not for the first command (the first plan's first step: the executor issues it).
        assert episode.result.usage_by_worker["actor"].calls == game.walkthrough - 1
    else:
        # Without a verifier: typed replies (the command itself), decoded from the
        # admissible commands; one model call per command: the planner's for the first (the
        # executor issues its plan's first step), the actor's for the others.
        assert decodings == {"actor": "output+admissible"}
        assert model.calls == game.walkthrough
    # Constrained decoding: the prompts carry a shape hint, never the patch rules or a schema.
    for rec in records:
        chars = rec.meta.get("prompt_chars")
        if rec.worker in ("actor", "verifier", "planner") and isinstance(chars, dict):
            assert "schema" not in chars and chars["format"] < 200, rec.worker
    await verified(store, episode.result.board_id)
    env.close()
    await store.close()
