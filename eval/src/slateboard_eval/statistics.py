"""The statistics seed 000 reports: Wilson score intervals for proportions, and percentile
bootstrap intervals (paired over matched (game, seed) pairs when two systems are compared) for
steps, tokens and tokens per success. Every resampling is seeded: the same inputs and seed give
the same interval.

``summarise(rows)`` turns results-file rows (``slateboard_eval.suites``) into the report:
one entry per (suite, system, setting) and one paired comparison per (suite, system, setting)
against the reference (``slateboard`` under ``full``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from slateboard.errors import InvalidInput
from slateboard.models.pricing import PriceTable

from .cost import cost_per_success, row_cost, total_cost

__all__ = [
    "Interval",
    "blueprint_source",
    "bootstrap",
    "budget_of",
    "merge_tallies",
    "paired_bootstrap",
    "summarise",
    "tokens_per_success",
    "wilson",
]

Z95 = 1.959963984540054
DEFAULT_RESAMPLES = 2000
REFERENCE = ("slateboard", "full")


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate and its interval (None where undefined, e.g. tokens per success
    without a success)."""

    value: float | None
    low: float | None
    high: float | None

    def to_json(self, digits: int = 4) -> dict[str, float | None]:
        """``{"value", "low", "high"}`` rounded to ``digits``."""

        def r(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else round(x, digits)

        return {"value": r(self.value), "low": r(self.low), "high": r(self.high)}


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval of ``successes`` out of ``n`` (Wilson 1927): a proportion's
    interval that stays inside [0, 1] and is not degenerate at 0 or n successes. ``n == 0``
    gives an undefined interval."""
    if n < 0 or successes < 0 or successes > n:
        raise InvalidInput(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return Interval(None, None, None)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def tokens_per_success(tokens: Sequence[float], wins: Sequence[bool]) -> float | None:
    """Mean tokens / success rate (= total tokens / wins); None without a win."""
    won = sum(bool(w) for w in wins)
    return float(sum(tokens)) / won if won else None


Statistic = Callable[[np.ndarray[Any, Any]], float | None]


def _percentile(values: list[float], alpha: float) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    arr = np.asarray(values, dtype=float)
    return float(np.quantile(arr, alpha / 2)), float(np.quantile(arr, 1 - alpha / 2))


def bootstrap(
    data: Sequence[Sequence[float]] | np.ndarray[Any, Any],
    statistic: Statistic,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
) -> Interval:
    """The percentile bootstrap interval of ``statistic`` over the rows of ``data`` (one row per
    unit, e.g. per game; columns are what the statistic reads). Rows are resampled with
    replacement ``resamples`` times with ``numpy.random.default_rng(seed)``; a resample where
    the statistic is undefined (None) is left out of the interval."""
    arr = np.asarray(data, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    n = arr.shape[0]
    if n == 0:
        return Interval(None, None, None)
    point = statistic(arr)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        v = statistic(arr[rng.integers(0, n, size=n)])
        if v is not None and math.isfinite(v):
            values.append(v)
    low, high = _percentile(values, alpha)
    return Interval(point, low, high)


def paired_bootstrap(
    a: Sequence[Sequence[float]] | np.ndarray[Any, Any],
    b: Sequence[Sequence[float]] | np.ndarray[Any, Any],
    statistic: Statistic,
    *,
    ratio: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
) -> Interval:
    """The paired bootstrap interval of ``statistic(b) - statistic(a)`` (or their ratio
    ``b / a`` with ``ratio=True``), where row i of ``a`` and row i of ``b`` are the same
    (game, seed) played by two systems: each resample draws the same row indices for both, so
    the game-to-game variation common to both cancels. Seeded like ``bootstrap``."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.ndim == 1:
        xa = xa[:, None]
    if xb.ndim == 1:
        xb = xb[:, None]
    if xa.shape[0] != xb.shape[0]:
        raise InvalidInput(f"paired samples need the same number of pairs, got {xa.shape[0]} and {xb.shape[0]}")
    n = xa.shape[0]
    if n == 0:
        return Interval(None, None, None)

    def effect(ia: np.ndarray[Any, Any], ib: np.ndarray[Any, Any]) -> float | None:
        sa, sb = statistic(ia), statistic(ib)
        if sa is None or sb is None:
            return None
        if ratio:
            return sb / sa if sa else None
        return sb - sa

    point = effect(xa, xb)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        idx = rng.integers(0, n, size=n)
        v = effect(xa[idx], xb[idx])
        if v is not None and math.isfinite(v):
            values.append(v)
    low, high = _percentile(values, alpha)
    return Interval(point, low, high)


def mean_of(column: int) -> Statistic:
    """The statistic: mean of one column."""

    def stat(x: np.ndarray[Any, Any]) -> float | None:
        return float(x[:, column].mean()) if len(x) else None

    return stat


def tps_stat(tokens: int, won: int) -> Statistic:
    """The statistic: tokens per success from a tokens column and a won (0/1) column."""

    def stat(x: np.ndarray[Any, Any]) -> float | None:
        wins = float(x[:, won].sum())
        return float(x[:, tokens].sum()) / wins if wins else None

    return stat


# -- the report -----------------------------------------------------------------------------------
_COLS = ("won", "commands", "tokens")


def _matrix(rows: Sequence[dict[str, Any]]) -> np.ndarray[Any, Any]:
    return np.asarray(
        [[float(bool(r.get("won"))), float(r.get("commands", 0)), float(r.get("tokens", 0))] for r in rows]
    )


def budget_of(setting: str) -> tuple[int | None, str | None]:
    """The view budget a setting imposes (its ``budget=N`` part) and the setting it sweeps
    (the other parts: ``full`` for ``budget=500``, ``no-slicing`` for ``no-slicing+budget=500``);
    (None, None) for a setting without a budget."""
    parts = [p.strip() for p in setting.split("+")]
    for part in parts:
        if part.startswith("budget=") and part[7:].isdigit():
            rest = [p for p in parts if p != part]
            return int(part[7:]), "+".join(rest) or "full"
    return None, None


def blueprint_source(setting: str) -> str:
    """``generated`` when the setting's blueprint was designed by the Architect, else ``fixed``."""
    return "generated" if "generated" in (p.strip() for p in setting.split("+")) else "fixed"


def _pair_key(row: dict[str, Any]) -> tuple[str, int]:
    return (str(row["game"]), int(row["seed"]))


def merge_tallies(tallies: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per-kind error tallies (``slateboard_eval.erring``) summed: per kind, per counter
    (injected, caught, harmful, to_game) and per stage."""
    out: dict[str, dict[str, Any]] = {}
    for tally in tallies:
        for kind, entry in tally.items():
            into = out.setdefault(kind, {"injected": 0, "caught": 0, "harmful": 0, "to_game": 0, "stages": {}})
            for key in ("injected", "caught", "harmful", "to_game"):
                into[key] += int(entry.get(key, 0))
            for stage, n in dict(entry.get("stages", {})).items():
                into["stages"][stage] = into["stages"].get(stage, 0) + int(n)
    return out


def summarise(
    rows: Sequence[dict[str, Any]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """The report of results-file rows: per (suite, system, setting) the games, wins, success
    with its Wilson interval, mean steps, mean tokens and tokens per success with bootstrap
    intervals over games, errors and unverified boards; and per suite, for every other
    (system, setting), the paired differences against ``slateboard``/``full`` over the
    (game, seed) pairs both played: success, steps, tokens (b - a) and tokens per success (b / a).
    Each entry also says its blueprint source (``fixed`` or ``generated``), the mean tokens the
    Architect spent designing it (``design_tokens``, part of ``tokens``) and how many episodes
    had no acceptable design (``no_blueprint``). Rows played with the erring model are grouped by
    their error rate too (``error_rate``; 0 for rows without one): each entry says its rate, its
    per-kind error tally (``model_errors``) and its off-policy commands, and a comparison pairs
    with the reference at the same rate. Each entry's ``cost_usd`` is its rows' tokens priced with
    ``prices`` (default: the built-in rules; ``slateboard_eval.cost.row_cost``) and
    ``cost_per_success`` that over its wins: None when any row's model has no price.
    """
    table = prices if prices is not None else PriceTable()
    groups: dict[tuple[str, str, str, float], list[dict[str, Any]]] = {}
    for r in rows:
        key = (str(r["suite"]), str(r["system"]), str(r["setting"]), float(r.get("error_rate") or 0.0))
        groups.setdefault(key, []).append(r)
    systems = []
    for (suite, system, setting, rate), rs in sorted(groups.items()):
        rs = sorted(rs, key=_pair_key)
        x = _matrix(rs)
        wins = int(x[:, 0].sum())
        budget, base = budget_of(setting)
        designs = [int(r.get("design_tokens") or 0) for r in rs]
        cost = total_cost(row_cost(r, table) for r in rs)
        systems.append(
            {
                "suite": suite,
                "system": system,
                "setting": setting,
                "budget": budget,
                "budget_base": base,
                "blueprint": blueprint_source(setting),
                "games": len(rs),
                "wins": wins,
                "success": wilson(wins, len(rs)).to_json(),
                "steps": bootstrap(x, mean_of(1), resamples=resamples, seed=seed).to_json(2),
                "tokens": bootstrap(x, mean_of(2), resamples=resamples, seed=seed).to_json(1),
                "tokens_per_success": bootstrap(x, tps_stat(2, 0), resamples=resamples, seed=seed).to_json(1),
                "errors": sum(r.get("error") is not None for r in rs),
                "unverified": sum(r.get("verified") is False for r in rs),
                "estimated_tokens": any(bool(r.get("estimated_tokens")) for r in rs),
                "design_tokens": round(sum(designs) / len(designs), 1) if designs else 0.0,
                "no_blueprint": sum(r.get("outcome") == "no-blueprint" for r in rs),
                "error_rate": rate,
                "model_errors": merge_tallies([r.get("model_errors") or {} for r in rs]),
                "off_policy": sum(int(r.get("off_policy") or 0) for r in rs),
                "cost_usd": cost,
                "cost_per_success": cost_per_success(cost, wins),
            }
        )
    comparisons = []
    for (suite, system, setting, rate), rs in sorted(groups.items()):
        ref = groups.get((suite, *REFERENCE, rate))
        if ref is None or (system, setting) == REFERENCE:
            continue
        by_key = {_pair_key(r): r for r in ref}
        pairs = [(by_key[_pair_key(r)], r) for r in sorted(rs, key=_pair_key) if _pair_key(r) in by_key]
        if not pairs:
            continue
        a = _matrix([p[0] for p in pairs])
        b = _matrix([p[1] for p in pairs])
        kw: dict[str, Any] = {"resamples": resamples, "seed": seed}
        comparisons.append(
            {
                "suite": suite,
                "system": system,
                "setting": setting,
                "error_rate": rate,
                "against": {"system": REFERENCE[0], "setting": REFERENCE[1], "error_rate": rate},
                "pairs": len(pairs),
                "success_delta": paired_bootstrap(a, b, mean_of(0), **kw).to_json(),
                "steps_delta": paired_bootstrap(a, b, mean_of(1), **kw).to_json(2),
                "tokens_delta": paired_bootstrap(a, b, mean_of(2), **kw).to_json(1),
                "tokens_per_success_ratio": paired_bootstrap(a, b, tps_stat(2, 0), ratio=True, **kw).to_json(),
            }
        )
    return {"resamples": resamples, "seed": seed, "confidence": 0.95, "systems": systems, "comparisons": comparisons}
