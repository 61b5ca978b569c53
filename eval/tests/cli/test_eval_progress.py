"""The evaluation commands show what they are doing and the elapsed time on stderr (forced on here
with SLATEBOARD_PROGRESS=1, since the test runner is no terminal), and their stdout, JSON
included, stays exactly what it was."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import slateboard_eval.cli  # noqa: F401  (the modules whose progress helper is checked below)
from slateboard.cli import app
from slateboard.progress import PROGRESS_ENV

ELAPSED = "0:00:0"  # rich's elapsed-time column, for a command that takes under ten seconds


def invoke(args: list[str], *, forced: bool = True, **env: str) -> Result:
    environment = {"COLUMNS": "200", PROGRESS_ENV: "1" if forced else "", **env}
    return CliRunner().invoke(app, args, env=environment, catch_exceptions=False)


def test_faults_shows_progress_and_keeps_its_json_clean() -> None:
    args = ["faults", "--n", "2", "--systems", "json_control", "--faults", "invalid_json", "--json"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["n"] == 2 and data["systems"] == ["json_control"]
    assert "faults: 2 injection(s) x 1 fault(s) on json_control" in result.stderr
    assert ELAPSED in result.stderr


def test_faults_off_a_terminal_shows_no_progress() -> None:
    result = invoke(["faults", "--n", "2", "--systems", "json_control", "--faults", "invalid_json"], forced=False)
    assert result.exit_code == 0, result.output
    assert "injection(s) x" not in result.stderr and ELAPSED not in result.stderr
    # The per-cell lines are still written (plain, on stderr) as before.
    assert "json_control" in result.stderr and "Invalid JSON" in result.stdout


def _twx_problem() -> str | None:
    from slateboard_eval.envs.twx import twx_missing

    return twx_missing()


@pytest.mark.skipif(_twx_problem() is not None, reason=f"TextWorldExpress cannot run: {_twx_problem()}")
def test_eval_twx_and_report_show_progress_and_keep_their_json_clean(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["eval", "twx", "-m", "walkthrough", "--systems", "slateboard", "--games", "coin-l3", "--no-plots"]
    result = invoke([*args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(s["setting"], s["wins"]) for s in data["systems"]] == [("full", 1)]
    assert "eval twx: 1 episode(s), model walkthrough" in result.stderr
    assert ELAPSED in result.stderr
    # the per-episode line is still reported, above the progress line
    assert "coin-l3" in result.stderr and "slateboard (full): won" in result.stderr
    report = invoke(["eval", "report", str(out / "results.jsonl"), "--out", str(tmp_path / "again"), "--no-plots"])
    assert report.exit_code == 0, report.output
    assert "eval report: statistics and figures of 1 result(s)" in report.stderr
    assert "success" in report.stdout


def test_the_eval_commands_use_the_core_progress_helper() -> None:
    from slateboard.progress import progress

    assert sys.modules["slateboard_eval.cli._eval"].progress is progress
    assert sys.modules["slateboard_eval.cli._faults"].progress is progress
    assert sys.modules["slateboard_eval.cli._suites"].progress is progress
