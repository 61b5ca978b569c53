"""``slateboard eval textworld`` prices what every system spent: the walkthrough costs 0 by
default; ``--prices`` prices its counted tokens at a table's rates, per episode and per system,
in the JSON report and the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from slateboard.cli import app
from slateboard_eval.envs.textworld import GameFile

MINI = {"input": 0.15, "output": 0.60}


def _invoke(tmp_path: Path, cache: Path, *args: str) -> Any:
    env = {"SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'boards.db'}", "COLUMNS": "250", "XDG_DATA_HOME": str(tmp_path)}
    cmd = ["eval", "textworld", "--cache", str(cache), "-m", "walkthrough", "--games", "1", "--steps", "15"]
    return CliRunner().invoke(app, [*cmd, "--systems", "slateboard,loomflow", *args], env=env, catch_exceptions=False)


def test_the_walkthrough_is_free_unless_a_table_prices_it(
    tmp_path: Path, tw_games: list[GameFile], tw_cache: Path
) -> None:
    free = _invoke(tmp_path, tw_cache, "--json")
    assert free.exit_code == 0, free.output
    data = json.loads(free.stdout)
    assert all(ep["cost_usd"] == 0.0 for ep in data["episodes"])
    assert all(s["cost_usd"] == 0.0 and s["cost_per_success"] == 0.0 for s in data["systems"])
    assert data["prices"]["table"] == {}

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"walkthrough": MINI}), encoding="utf-8")
    priced = _invoke(tmp_path, tw_cache, "--json", "--prices", str(prices))
    assert priced.exit_code == 0, priced.output
    data = json.loads(priced.stdout)
    for ep in data["episodes"]:
        assert ep["tokens"] > 0
        assert ep["cost_usd"] == pytest.approx((ep["tokens_in"] * 0.15 + ep["tokens_out"] * 0.60) / 1e6)
    for s in data["systems"]:
        mine = [ep for ep in data["episodes"] if ep["system"] == s["system"]]
        assert s["cost_usd"] == pytest.approx(sum(ep["cost_usd"] for ep in mine)) and s["cost_usd"] > 0
        assert s["cost_per_success"] == pytest.approx(s["cost_usd"] / s["wins"])

    table = _invoke(tmp_path, tw_cache, "--prices", str(prices))
    assert table.exit_code == 0, table.output
    assert "cost/success" in table.stdout
    for s in data["systems"]:
        assert f"${s['cost_usd']:.4f}" in table.stdout


def test_a_key_in_the_model_url_reaches_no_row_or_line(
    tmp_path: Path, tw_games: list[GameFile], tw_cache: Path
) -> None:
    key = "sk-eval-leak-0123456789"
    env = {"SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'boards.db'}", "COLUMNS": "250", "XDG_DATA_HOME": str(tmp_path)}
    model = f"openai:gpt-4o-mini@http://user:{key}@127.0.0.1:9/v1"  # nothing listens: every call fails
    cmd = ["eval", "textworld", "--cache", str(tw_cache), "-m", model, "--games", "1", "--steps", "2"]
    for extra in (["--json"], []):
        result = CliRunner().invoke(app, [*cmd, "--systems", "slateboard", *extra], env=env, catch_exceptions=False)
        assert key not in result.output, result.output
    data = json.loads(CliRunner().invoke(app, [*cmd, "--systems", "slateboard", "--json"], env=env).stdout)
    assert data["model"] == "openai:gpt-4o-mini@http://user:***@127.0.0.1:9/v1"
    assert all(ep["cost_usd"] in (None, 0.0) or ep["cost_usd"] >= 0 for ep in data["episodes"])
