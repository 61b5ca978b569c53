"""The suite runner: the CI matrix of each suite with the gold policy (every system wins every
game, every slateboard log verifies), one ablation, resumption after an interruption, parallel
workers, the report's JSON and figures, and the CLI commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard_eval.envs.scienceworld import CI_TASKS, task_specs
from slateboard_eval.envs.twx import CI_GAMES
from slateboard_eval.report import write_report
from slateboard_eval.suites import GameRef, load_results, matrix_jobs, pin_gold, record_key, run_matrix, system_names

PNG = b"\x89PNG\r\n\x1a\n"
SYSTEMS = ("slateboard", "langgraph", "loomflow")


def _twx_games(seeds: tuple[int, ...] = (1,)) -> list[GameRef]:
    return [GameRef("twx", s.name(seed), seed, s.to_json()) for s in CI_GAMES for seed in seeds]


def _sw_games() -> list[GameRef]:
    return [GameRef("scienceworld", s.name, s.variation, s.to_json()) for s in task_specs(CI_TASKS)]


def test_systems_plug_in_by_name() -> None:
    names = system_names()
    assert names[0] == "slateboard" and "langgraph" in names and "loomflow" in names
    jobs = matrix_jobs(
        _twx_games(),
        systems=["slateboard", "langgraph"],
        model="walkthrough",
        steps=5,
        settings=["no-circuit"],
        budgets=[500],
    )
    # the peers once per game, slateboard under full, the ablation and the budget
    assert [(j.system, j.setting) for j in jobs[:4]] == [
        ("slateboard", "full"), ("slateboard", "no-circuit"), ("slateboard", "budget=500"), ("langgraph", "full"),
    ]  # fmt: skip
    assert len(jobs) == 8 and len({j.key for j in jobs}) == 8
    with pytest.raises(ValueError):
        matrix_jobs(_twx_games(), systems=["slateboard"], model="walkthrough", steps=5, settings=["bogus"])


def _check_matrix(rows: list[dict[str, Any]], games: list[GameRef]) -> None:
    assert len(rows) == len(games) * (len(SYSTEMS) + 1)
    for r in rows:
        assert r["error"] is None, r
        assert r["won"] is True, r
        game = next(g for g in games if g.name == r["game"])
        # the gold path is pinned: every system and setting plays exactly its commands
        assert r["commands"] == game.gold > 0 and r["tokens"] > 0
        if r["system"] == "slateboard":
            assert r["verified"] is True and r["board_id"]
        assert game.suite == r["suite"]


def _check_report(out: Path, rows: list[dict[str, Any]], ablation: bool = True) -> dict[str, Any]:
    report = write_report(rows, out, resamples=200)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["systems"] == report["systems"] and len(data["rows"]) == len(rows)
    for s in data["systems"]:
        assert s["wins"] == s["games"] and s["success"]["value"] == 1.0 and s["success"]["low"] < 1.0
        assert s["tokens_per_success"]["value"] > 0 and s["unverified"] == 0
    expected = {"success.png", "tokens_per_success.png"} | ({"ablations.png"} if ablation else set())
    assert expected <= set(data["figures"])
    for name in data["figures"]:
        blob = (out / name).read_bytes()
        assert blob.startswith(PNG) and len(blob) > 2000
    import matplotlib.image

    assert matplotlib.image.imread(out / "success.png").shape[0] > 100
    return data


@pytest.mark.usefixtures("twx_ready", "peers_ready")
async def test_twx_ci_matrix_with_the_gold_policy(tmp_path: Path) -> None:
    games = await pin_gold(_twx_games())
    jobs = matrix_jobs(games, systems=SYSTEMS, model="walkthrough", steps=30, settings=["no-slicing"])
    rows = await run_matrix(jobs, tmp_path / "results.jsonl")
    _check_matrix(rows, games)
    data = _check_report(tmp_path / "out", rows)
    (comp,) = [c for c in data["comparisons"] if c["setting"] == "no-slicing"]
    # the whole board in every view costs more tokens for the same wins
    assert comp["success_delta"]["value"] == 0 and comp["tokens_per_success_ratio"]["value"] > 1.0


@pytest.mark.usefixtures("sw_ready", "peers_ready")
async def test_scienceworld_ci_matrix_with_the_gold_policy(tmp_path: Path) -> None:
    games = await pin_gold(_sw_games())
    jobs = matrix_jobs(games, systems=SYSTEMS, model="walkthrough", steps=30, settings=["no-contracts"])
    rows = await run_matrix(jobs, tmp_path / "results.jsonl")
    _check_matrix(rows, games)
    _check_report(tmp_path / "out", rows)


@pytest.mark.usefixtures("twx_ready")
async def test_an_interrupted_sweep_resumes_and_workers_run_in_parallel(tmp_path: Path) -> None:
    games = _twx_games()
    jobs = matrix_jobs(games, systems=["slateboard"], model="walkthrough", steps=20, budgets=[300])
    results = tmp_path / "results.jsonl"
    first = await run_matrix(jobs[:1], results)
    assert len(first) == 1
    # an interruption in the middle of a write leaves a torn line: it is ignored
    with results.open("a", encoding="utf-8") as fh:
        fh.write('{"suite": "twx", "sys')
    played: list[dict[str, Any]] = []
    rows = await run_matrix(jobs, results, workers=2, on_row=played.append)
    assert len(played) == len(jobs) - 1  # only what was missing
    assert {record_key(r) for r in rows} == {j.key for j in jobs}
    assert all(r["won"] and r["verified"] for r in rows)
    again: list[dict[str, Any]] = []
    await run_matrix(jobs, results, on_row=again.append)
    assert again == []
    assert len(load_results(results)) == len(jobs)


@pytest.mark.usefixtures("twx_ready")
def test_cli_twx_and_report(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    args = ["eval", "twx", "-m", "walkthrough", "--systems", "slateboard", "--games", "coin-l3"]
    res = runner.invoke(app, [*args, "--ablations", "no-circuit", "--budgets", "500", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    assert {(s["setting"], s["wins"]) for s in data["systems"]} == {("full", 1), ("no-circuit", 1), ("budget=500", 1)}
    assert "budget.png" in data["figures"] and (out / "budget.png").is_file()
    res = runner.invoke(app, ["eval", "report", str(out / "results.jsonl"), "--out", str(tmp_path / "again")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "again" / "report.json").is_file()
    bad = runner.invoke(app, [*args, "--ablations", "no-kernel", "--out", str(out)])
    assert bad.exit_code != 0 and "unknown setting" in bad.output


def test_a_resumed_sweep_follows_the_gold_paths_it_pinned(tmp_path: Path) -> None:
    from slateboard_eval.cli._suites import _pinned

    kept = GameRef("twx", "coin-l3-s1", 1, {**CI_GAMES[0].to_json(), "gold": ["look around", "take coin"]}, 2)
    file = tmp_path / "results.games.json"
    file.write_text(json.dumps([kept.to_json()]), encoding="utf-8")
    fresh = GameRef("twx", "coin-l3-s1", 1, CI_GAMES[0].to_json())
    (again,) = _pinned([fresh], file)  # no JVM needed: the kept path is reused as it is
    assert again.spec["gold"] == ["look around", "take coin"] and again.gold == 2
    assert json.loads(file.read_text(encoding="utf-8")) == [kept.to_json()]


async def test_bad_arguments_are_usage_errors_and_still_value_errors(tmp_path: Path) -> None:
    from slateboard.errors import UsageError
    from slateboard_eval.ablations import parse_setting
    from slateboard_eval.envs.twx import game_specs
    from slateboard_eval.statistics import wilson
    from slateboard_eval.suites import make_env

    for bad in (
        lambda: parse_setting("budget=10"),
        lambda: game_specs(only=["nope"]),
        lambda: make_env(GameRef("alfworld", "g", 1, {})),
        lambda: wilson(3, 2),
    ):
        with pytest.raises(UsageError) as caught:
            bad()
        assert isinstance(caught.value, ValueError)
    with pytest.raises(UsageError, match="workers must be >= 1"):
        await run_matrix([], tmp_path / "r.jsonl", workers=0)


def test_cli_textworld_on_the_suite_runner(tmp_path: Path) -> None:
    from slateboard_eval.envs.textworld import textworld_available

    if not textworld_available():
        pytest.skip("TextWorld is not installed (pip install 'slateboard-eval[textworld]')")
    out = tmp_path / "out"
    args = ["eval", "textworld-suite", "-m", "walkthrough", "--systems", "slateboard", "--games", "1"]
    res = CliRunner().invoke(app, [*args, "--cache", str(tmp_path / "games"), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    (entry,) = data["systems"]
    assert (entry["suite"], entry["setting"], entry["wins"], entry["unverified"]) == ("textworld", "full", 1, 0)
    (row,) = load_results(out / "results.jsonl")
    assert row["won"] is True and row["commands"] == row["gold"] > 0 and row["verified"] is True
    bad = CliRunner().invoke(app, ["eval", "textworld-suite", "--tier", "giant", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown game tier" in bad.output
