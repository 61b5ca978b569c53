"""What the suites' reports say a run cost: each row's tokens priced under its model string,
summed per system (unknown when any row is unpriced, never a partial sum), cost per success over
the wins, and ``slateboard eval report --prices`` pricing a results file again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.errors import InvalidInput
from slateboard.models.pricing import PriceTable
from slateboard_eval.cost import cost_per_success, load_prices, row_cost, tokens_cost, total_cost
from slateboard_eval.erring import error_sweep
from slateboard_eval.statistics import summarise

MINI = {"input": 0.15, "output": 0.60}
"""gpt-4o-mini's list prices, dollars per million tokens."""


def _row(system: str, game: str, won: bool, tokens_in: int, tokens_out: int, model: str) -> dict[str, Any]:
    return {
        "suite": "twx",
        "system": system,
        "setting": "full",
        "game": game,
        "seed": 1,
        "model": model,
        "won": won,
        "outcome": "won" if won else "lost",
        "commands": 3,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens": tokens_in + tokens_out,
        "error": None,
        "verified": None,
    }


def test_tokens_are_priced_per_model_and_the_free_ones_cost_nothing() -> None:
    table = PriceTable.from_mapping({"openai:gpt-4o-mini": MINI}, use_genai_prices=False)
    assert tokens_cost(table, "openai:gpt-4o-mini", 1_000_000, 500_000) == pytest.approx(0.45)
    assert tokens_cost(table, "local", 10_000, 10_000) == 0.0
    assert tokens_cost(table, "walkthrough", 10_000, 10_000) == 0.0
    assert tokens_cost(table, "openai:unpriced", 10, 10) is None
    # a table that prices the walkthrough (by name or "*") prices its counted tokens
    star = PriceTable.from_mapping({"*": MINI}, use_genai_prices=False)
    assert tokens_cost(star, "walkthrough", 2_000_000, 0) == pytest.approx(0.30)


def test_a_total_with_an_unknown_part_is_unknown() -> None:
    assert total_cost([0.1, 0.2]) == pytest.approx(0.3)
    assert total_cost([0.1, None, 0.2]) is None
    assert total_cost([]) == 0.0
    assert cost_per_success(0.3, 3) == pytest.approx(0.1)
    assert cost_per_success(0.3, 0) is None and cost_per_success(None, 2) is None
    assert row_cost({"tokens_in": 5, "tokens_out": 5}, PriceTable()) is None  # no model string: unknown


def test_the_summary_prices_every_system_and_leaves_an_unpriced_one_unknown() -> None:
    table = PriceTable.from_mapping({"openai:gpt-4o-mini": MINI}, use_genai_prices=False)
    rows = [
        _row("slateboard", "g1", True, 100_000, 10_000, "openai:gpt-4o-mini"),
        _row("slateboard", "g2", False, 300_000, 30_000, "openai:gpt-4o-mini"),
        _row("loomflow", "g1", True, 100_000, 10_000, "openai:gpt-4o-mini"),
        _row("loomflow", "g2", True, 100_000, 10_000, "openai:unpriced"),
        _row("langgraph", "g1", True, 50_000, 5_000, "local"),
    ]
    systems = {s["system"]: s for s in summarise(rows, resamples=50, prices=table)["systems"]}
    expected = (400_000 * 0.15 + 40_000 * 0.60) / 1e6
    assert systems["slateboard"]["cost_usd"] == pytest.approx(expected)
    assert systems["slateboard"]["cost_per_success"] == pytest.approx(expected / 1)
    assert systems["loomflow"]["cost_usd"] is None and systems["loomflow"]["cost_per_success"] is None
    assert systems["langgraph"]["cost_usd"] == 0.0 and systems["langgraph"]["cost_per_success"] == 0.0


def _report(tmp_path: Path, *args: str) -> Any:
    results = tmp_path / "results.jsonl"
    rows = [
        _row("slateboard", "g1", True, 200_000, 20_000, "walkthrough"),
        _row("slateboard", "g2", True, 100_000, 10_000, "walkthrough"),
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cmd = ["eval", "report", str(results), "--out", str(tmp_path / "out"), "--no-plots", *args]
    return CliRunner().invoke(app, cmd, env={"COLUMNS": "200"}, catch_exceptions=False)


def test_eval_report_prices_a_results_file_again(tmp_path: Path) -> None:
    free = _report(tmp_path, "--json")
    assert free.exit_code == 0, free.output
    (entry,) = json.loads(free.stdout)["systems"]
    assert entry["cost_usd"] == 0.0 and entry["cost_per_success"] == 0.0  # the walkthrough is free

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"walkthrough": MINI}), encoding="utf-8")
    priced = _report(tmp_path, "--json", "--prices", str(prices))
    assert priced.exit_code == 0, priced.output
    data = json.loads(priced.stdout)
    (entry,) = data["systems"]
    assert entry["cost_usd"] == pytest.approx((300_000 * 0.15 + 30_000 * 0.60) / 1e6)
    assert entry["cost_per_success"] == pytest.approx(entry["cost_usd"] / 2)
    assert data["prices"]["table"] == {"walkthrough": {**MINI, "cached_input": None}}
    written = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert sorted(r["cost_usd"] for r in written["rows"]) == pytest.approx([0.021, 0.042])

    table = _report(tmp_path, "--prices", str(prices))
    assert table.exit_code == 0, table.output
    assert "cost/success" in table.stdout and "$0.0315" in table.stdout


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"walkthrough": {"input": -1, "output": 0.6}}, "walkthrough.input must be a finite number >= 0, got -1"),
        ({"walkthrough": {"input": 0.15}}, "model 'walkthrough' is missing field 'output'"),
        ({"walkthrough": {"input": float("nan"), "output": 0.6}}, "walkthrough.input must be a finite number >= 0"),
        ({"walkthrough": {"input": 0.15, "output": float("inf")}}, "walkthrough.output must be a finite number"),
        ({"walkthrough": {"input": 1e300, "output": 0.6}}, "walkthrough.input must be at most 1e+09"),
        ({"walkthrough": {"input": "0.15", "output": 0.6}}, "walkthrough.input must be a number"),
        (None, "No such file or directory"),
    ],
)
def test_a_bad_price_table_is_one_usage_line(tmp_path: Path, content: Any, named: str) -> None:
    prices = tmp_path / "prices.json"
    if content is not None:
        prices.write_text(json.dumps(content), encoding="utf-8")
    result = _report(tmp_path, "--prices", str(prices))
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --prices: ") and str(prices) in lines[0], lines
    assert named in lines[0], lines


def test_load_prices_without_a_file_keeps_the_built_in_rules() -> None:
    assert load_prices(None) == PriceTable()
    with pytest.raises(InvalidInput):
        load_prices("/nonexistent/prices.json")


def test_the_error_sweep_sums_costs_per_system_and_rate() -> None:
    def ep(system: str, game: str, won: bool, cost: float | None) -> dict[str, Any]:
        return {"system": system, "game": game, "won": won, "tokens": 100, "cost_usd": cost}

    runs = [
        (
            0.0,
            [ep("slateboard", "g1", True, 0.01), ep("slateboard", "g2", True, 0.03), ep("loomflow", "g1", True, None)],
        ),
        (0.3, [ep("slateboard", "g1", True, 0.02), ep("slateboard", "g2", False, 0.04)]),
    ]
    got = {(e["system"], e["error_rate"]): e for e in error_sweep(runs, resamples=20)["systems"]}
    assert got[("slateboard", 0.0)]["cost_usd"] == pytest.approx(0.04)
    assert got[("slateboard", 0.0)]["cost_per_success"] == pytest.approx(0.02)
    assert got[("slateboard", 0.3)]["cost_per_success"] == pytest.approx(0.06)  # both games' cost over one win
    assert got[("loomflow", 0.0)]["cost_usd"] is None and got[("loomflow", 0.0)]["cost_per_success"] is None
