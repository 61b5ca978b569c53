"""``slateboard eval textworld``: every system with the walkthrough model wins (table and JSON),
bad arguments give one-line errors, and a short real run of the local model ends with a reason
and counted tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from slateboard.cli import app
from slateboard.stores import open_store
from slateboard_eval.envs.textworld import GameFile
from slateboard_eval.textworld import SYSTEMS, run_suite


class Invoke:
    """``slateboard eval textworld --cache CACHE ARGS`` in process, on a private SQLite store."""

    def __init__(self, store: str, cache: Path) -> None:
        self.runner = CliRunner()
        self.env = {"SLATEBOARD_STORE": store, "COLUMNS": "200"}
        self.cache = cache

    def __call__(self, *args: str) -> Any:
        return self.cli("eval", "textworld", "--cache", str(self.cache), *args)

    def cli(self, *args: str) -> Any:
        return self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)


@pytest.fixture
def invoke(tmp_path: Path, tw_games: list[GameFile], tw_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """The CLI on a private SQLite store and data dir, with the session's games as cache."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return Invoke(f"sqlite:///{tmp_path / 'boards.db'}", tw_cache)


def one_line_error(result: Any, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return str(lines[0])


def test_the_walkthrough_model_wins_every_game_with_every_system(invoke: Invoke, tw_games: list[GameFile]) -> None:
    result = invoke("--model", "walkthrough", "--games", "2", "--steps", "15", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["system"] for s in data["systems"]] == list(SYSTEMS)
    for summary in data["systems"]:
        assert summary["success"] == 1.0 and summary["wins"] == summary["games"] == 2, summary
        assert summary["total_tokens"] > 0 and summary["tokens_per_success"] == summary["mean_tokens"]
    assert len(data["episodes"]) == 2 * len(SYSTEMS)
    names = {g.name: g for g in tw_games[:2]}
    traces = {(ep["game"], ep["system"]): ep["trace"] for ep in data["episodes"]}
    for ep in data["episodes"]:
        assert ep["won"] and ep["outcome"] == "won" and ep["error"] is None
        assert ep["commands"] == names[ep["game"]].walkthrough == len(ep["trace"]) and ep["tokens"] > 0
        assert (ep["board_id"] is not None) is (ep["system"] == "slateboard")
    # Every system played the same winning commands.
    for game in names:
        assert len({tuple(traces[(game, system)]) for system in SYSTEMS}) == 1
    # The boards are in the store: `slateboard replay --verify` checks one.
    board = next(ep["board_id"] for ep in data["episodes"] if ep["board_id"])
    verify = invoke.cli("replay", board, "--verify")
    assert verify.exit_code == 0 and "verified" in verify.stdout, verify.output


def test_the_table_names_every_system(invoke: Invoke) -> None:
    result = invoke("--model", "walkthrough", "--games", "1", "--systems", "slateboard, loomflow")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "slateboard" in out and "loomflow" in out and "langgraph" not in out
    assert "1/1" in out and "1.00" in out and "slateboard log BOARD" in out


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("--systems", "slateboard,autogen"), 2, "--systems: unknown system 'autogen'"),
        (("--systems", " , "), 2, "--systems: no system named"),
        (("--games", "7"), 2, "--games: the CI game set has 4 games, 7 asked"),
        (("--steps", "0"), 2, "--steps"),
        (("--steps", "500"), 2, "--steps"),
        (("--model", "nosuch:thing"), 2, "nosuch"),  # a model configuration error is a usage error
    ],
)
def test_bad_arguments_give_one_line_errors(invoke: Invoke, args: tuple[str, ...], code: int, needle: str) -> None:
    assert needle in one_line_error(invoke(*args), code)


async def test_a_short_local_model_run_ends_with_a_reason_and_tokens(tw_games: list[GameFile]) -> None:
    pytest.importorskip("llama_cpp", reason="the local model needs llama-cpp-python (pip install 'slateboard[local]')")
    from slateboard.models import ModelConfigError
    from slateboard.models.local import default_weights_path

    try:
        default_weights_path()
    except ModelConfigError as exc:
        pytest.skip(f"the local model's weights are not installed: {exc}")
    store = await open_store("memory://")
    # One command (the planner's and the actor's calls): the shortest run that reaches the game.
    suite = await run_suite(tw_games[:1], systems=["slateboard"], model="local", steps=1, store=store)
    (episode,) = suite.episodes
    assert episode.error is None and episode.end_reason and episode.outcome
    assert episode.tokens > 0 and episode.calls >= 2 and episode.commands <= 1
    # The board's log holds exactly the tokens the model reported.
    assert suite.summaries()[0].total_tokens == episode.tokens
    await store.close()
