"""``--errors`` on the TextWorld suites (issue 34): every system meets the same errors, the
report counts what became of them per kind, a sweep reports intervals and a figure, and bad
options give one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard[textworld]')")
pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'slateboard[peers]')")

from slateboard.cli import app
from slateboard.models.erring import ERROR_KINDS, ErrorSchedule
from slateboard.stores import open_store
from slateboard_eval.envs.textworld import GameFile
from slateboard_eval.suites import GameRef, Job, matrix_jobs, record_key, run_job
from slateboard_eval.textworld import run_suite


def _stable(episode: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in episode.items() if k not in ("seconds", "board_id")}


async def test_the_same_seed_gives_the_same_errors_and_slateboard_catches_them(tw_games: list[GameFile]) -> None:
    games = tw_games[:2]
    schedule = ErrorSchedule(0.3, seed=5)
    runs = []
    for _ in range(2):
        store = await open_store("memory://")
        try:
            suite = await run_suite(
                games,
                systems=["slateboard", "langgraph-lean"],
                model="walkthrough",
                steps=20,
                store=store,
                errors=schedule,
            )
        finally:
            await store.close()
        runs.append([_stable(e.to_json()) for e in suite.episodes])
    assert runs[0] == runs[1]  # the same seed: the same errors, the same outcomes, the same tallies
    episodes = runs[0]
    assert all(e["won"] and e["error"] is None for e in episodes)
    for e in episodes:
        assert set(e["model_errors"]) == set(ERROR_KINDS)
        injected = sum(t["injected"] for t in e["model_errors"].values())
        assert injected > 0, e["game"]
        caught = sum(t["caught"] for t in e["model_errors"].values())
        harmful = sum(t["harmful"] for t in e["model_errors"].values())
        if e["system"] == "slateboard":
            assert caught > 0 and caught + harmful <= injected and e["verified"] is True
            assert e["commands"] == e["walkthrough"] + e["off_policy"]  # a rejection spends no step
        else:
            assert caught == 0 and harmful == injected
    summary = suite.to_json()
    assert summary["errors"] == {"rate": 0.3, "seed": 5, "kinds": list(ERROR_KINDS)}
    board = next(s for s in summary["systems"] if s["system"] == "slateboard")
    assert sum(t["caught"] for t in board["model_errors"].values()) > 0


async def test_the_suite_runner_keys_results_by_error_rate(tw_games: list[GameFile]) -> None:
    game = tw_games[0]
    ref = GameRef("textworld", game.name, game.seed, {"path": str(game.path)}, game.walkthrough)
    schedules = [ErrorSchedule(0.0), ErrorSchedule(0.4, seed=2)]
    jobs = matrix_jobs([ref], systems=["slateboard", "langgraph-lean"], model="walkthrough", steps=20, errors=schedules)
    assert len(jobs) == 4 and len({j.key for j in jobs}) == 4
    assert Job.from_json(jobs[-1].to_json()) == jobs[-1]
    store = await open_store("memory://")
    try:
        rows = [await run_job(j, store) for j in jobs]
    finally:
        await store.close()
    assert [record_key(r) for r in rows] == [j.key for j in jobs]
    calm, erring = rows[0], rows[2]
    assert calm["error_rate"] == 0.0 and "model_errors" not in calm
    assert erring["error_rate"] == 0.4 and erring["won"] and erring["verified"] is True
    assert sum(t["injected"] for t in erring["model_errors"].values()) > 0


class Invoke:
    def __init__(self, store: str, cache: Path) -> None:
        self.runner = CliRunner()
        self.env = {"SLATEBOARD_STORE": store, "COLUMNS": "200"}
        self.cache = cache

    def __call__(self, *args: str) -> Any:
        return self.runner.invoke(
            app, ["eval", "textworld", "--cache", str(self.cache), *args], env=self.env, catch_exceptions=False
        )


@pytest.fixture
def invoke(tmp_path: Path, tw_games: list[GameFile], tw_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return Invoke(f"sqlite:///{tmp_path / 'boards.db'}", tw_cache)


def test_a_sweep_reports_intervals_and_a_figure(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = invoke(
        "-m", "walkthrough", "--games", "1", "--counting", "estimate", "--systems", "slateboard,langgraph-lean",
        "--errors", "0,0.3", "--error-seed", "5", "--out", str(out), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["errors"]["rates"] == [0.0, 0.3] and data["figures"] == ["errors.png"]
    assert (out / "errors.png").stat().st_size > 0 and json.loads((out / "report.json").read_text()) == data
    assert [(s["system"], s["error_rate"]) for s in data["systems"]] == [
        ("slateboard", 0.0), ("langgraph-lean", 0.0), ("slateboard", 0.3), ("langgraph-lean", 0.3),
    ]  # fmt: skip
    for entry in data["sweep"]["systems"]:
        assert entry["success"]["low"] is not None and entry["success"]["low"] <= entry["success"]["value"]
        if entry["system"] == "langgraph-lean":
            ratio = entry["reference_tps_ratio"]
            assert ratio["low"] <= ratio["value"] <= ratio["high"]
        assert entry["cost_usd"] == 0.0 and entry["cost_per_success"] == 0.0  # the walkthrough is free
    calm = [e for e in data["sweep"]["systems"] if e["error_rate"] == 0.0]
    assert all(e["off_policy"] == 0 and not any(t["injected"] for t in e["model_errors"].values()) for e in calm)
    table = invoke(
        "-m", "walkthrough", "--games", "1", "--counting", "estimate", "--systems", "slateboard",
        "--errors", "0.3,0", "--error-seed", "5",
    )  # fmt: skip
    assert table.exit_code == 0, table.output
    assert "when the model errs" in table.stdout and "model errors per kind" in table.stdout
    assert "cost/success" in table.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--errors", "1.5"), "--errors: error rate '1.5' is outside [0, 1]"),
        (("--errors", "0.1,lots"), "--errors: error rate 'lots' is not a number"),
        (("--errors", "0.1", "--error-kinds", "typo"), "--error-kinds: unknown error kind 'typo'"),
    ],
)
def test_bad_error_options_give_one_line_usage_errors(invoke: Invoke, args: tuple[str, ...], needle: str) -> None:
    result = invoke("-m", "walkthrough", "--games", "1", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
