"""Wilson intervals and (paired) bootstrap intervals against known values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from slateboard_eval.statistics import (
    bootstrap,
    mean_of,
    paired_bootstrap,
    summarise,
    tokens_per_success,
    tps_stat,
    wilson,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I (score method)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe(k: int, n: int, low: float, high: float) -> None:
    iv = wilson(k, n)
    assert iv.value == pytest.approx(k / n)
    assert iv.low == pytest.approx(low, abs=5e-5)
    assert iv.high == pytest.approx(high, abs=5e-5)


def test_wilson_edges() -> None:
    assert wilson(0, 0).value is None
    full = wilson(10, 10)
    # all successes: the upper bound is 1 and the lower one n / (n + z^2)
    assert full.high == pytest.approx(1.0)
    assert full.low == pytest.approx(10 / (10 + 1.959963984540054**2))
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_bootstrap_known_two_point_distribution() -> None:
    # resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5% and 97.5%
    # percentiles of 2000 draws are 0 and 1
    iv = bootstrap([0.0, 1.0], mean_of(0), seed=3)
    assert (iv.value, iv.low, iv.high) == (0.5, 0.0, 1.0)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(7)
    data = rng.normal(10.0, 2.0, size=40)
    a = bootstrap(data, mean_of(0), seed=11)
    b = bootstrap(data, mean_of(0), seed=11)
    c = bootstrap(data, mean_of(0), seed=12)
    assert a == b
    assert a != c
    assert a.low is not None and a.high is not None and a.value is not None
    assert a.low < a.value < a.high
    # the percentile interval of a mean is close to mean +- 1.96 standard errors
    se = data.std(ddof=1) / math.sqrt(len(data))
    assert a.high - a.low == pytest.approx(2 * 1.96 * se, rel=0.2)


def test_paired_bootstrap_cancels_the_common_variation() -> None:
    a = np.array([3.0, 40.0, 7.0, 100.0, 12.0])
    shifted = paired_bootstrap(a, a + 2.0, mean_of(0))
    assert (shifted.value, shifted.low, shifted.high) == pytest.approx((2.0, 2.0, 2.0))
    scaled = paired_bootstrap(a, 3 * a, mean_of(0), ratio=True)
    assert (scaled.value, scaled.low, scaled.high) == pytest.approx((3.0, 3.0, 3.0))
    # unpaired, the same difference would be lost in the game-to-game spread
    unpaired_width = bootstrap(a, mean_of(0)).high - bootstrap(a, mean_of(0)).low  # type: ignore[operator]
    assert unpaired_width > 10
    with pytest.raises(ValueError):
        paired_bootstrap(a, a[:3], mean_of(0))


def test_tokens_per_success() -> None:
    assert tokens_per_success([100, 300], [True, False]) == 400
    assert tokens_per_success([100], [False]) is None
    x = np.array([[100.0, 1.0], [300.0, 0.0]])
    assert tps_stat(0, 1)(x) == 400
    # resamples without a win are left out; the interval stays defined
    iv = bootstrap(x, tps_stat(0, 1), seed=0)
    assert iv.value == 400 and iv.low is not None and iv.low >= 100


def _row(game: str, system: str, setting: str, won: bool, commands: int, tokens: int) -> dict[str, object]:
    return {
        "suite": "twx", "system": system, "game": game, "seed": 1, "setting": setting,
        "won": won, "commands": commands, "tokens": tokens, "error": None, "verified": True,
    }  # fmt: skip


def test_summarise_pairs_by_game_and_seed() -> None:
    rows = [
        _row("g1", "slateboard", "full", True, 4, 1000),
        _row("g2", "slateboard", "full", True, 6, 3000),
        _row("g3", "slateboard", "full", False, 10, 5000),
        _row("g1", "slateboard", "no-slicing", True, 4, 2000),
        _row("g2", "slateboard", "no-slicing", False, 10, 6000),
        # g3 not played under no-slicing: it is left out of the pairs
    ]
    report = summarise(rows, resamples=500)
    full = next(s for s in report["systems"] if s["setting"] == "full")
    assert (full["games"], full["wins"]) == (3, 2)
    assert full["tokens_per_success"]["value"] == 4500.0
    assert full["success"]["value"] == pytest.approx(0.6667, abs=1e-4)
    (comp,) = report["comparisons"]
    assert comp["setting"] == "no-slicing" and comp["pairs"] == 2
    assert comp["success_delta"]["value"] == -0.5
    assert comp["tokens_delta"]["value"] == 2000.0
    # full on g1, g2: 4000 tokens / 2 wins; no-slicing: 8000 / 1
    assert comp["tokens_per_success_ratio"]["value"] == 4.0


def test_budget_sweeps_of_full_and_of_the_unsliced_board(tmp_path: Path) -> None:
    from slateboard_eval.plots import write_plots
    from slateboard_eval.statistics import budget_of

    assert budget_of("budget=500") == (500, "full")
    assert budget_of("no-slicing+budget=250") == (250, "no-slicing")
    assert budget_of("no-slicing") == (None, None) and budget_of("budget=x") == (None, None)
    rows = [
        _row(g, "slateboard", s, True, 4, t)
        for g in ("g1", "g2")
        for s, t in (
            ("full", 900),
            ("budget=250", 800),
            ("no-slicing+budget=250", 1200),
            ("no-slicing+budget=1000", 2000),
        )
    ]
    report = summarise(rows, resamples=100)
    swept = {(s["setting"], s["budget"], s["budget_base"]) for s in report["systems"]}
    assert swept == {
        ("full", None, None),
        ("budget=250", 250, "full"),
        ("no-slicing+budget=250", 250, "no-slicing"),
        ("no-slicing+budget=1000", 1000, "no-slicing"),
    }
    names = {p.name for p in write_plots(report, tmp_path)}
    # the budget settings make the sweep figure, not ablation bars
    assert "budget.png" in names and "ablations.png" not in names
