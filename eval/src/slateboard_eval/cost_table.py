"""Tokens and cost per success over several ``slateboard eval textworld --json`` reports, pooled
(issue 42): one row per error rate and system with success (Wilson 95%), tokens per success and
cost per success (plain, and with the modelled prompt cache under each rule: ``any``, ``min1024``;
``slateboard_eval.prompt_cache``), each with its bootstrap 95% interval over games, and the
paired bootstrap ratio of ``slateboard`` to each peer (the same games, resampled together).

    python -m slateboard_eval.cost_table tw-5353-0.json tw-6464-0.json ... [--json]

Reports of the same error rate are pooled (their episodes joined, games named by report and
game so two seeds' games never pair up by accident).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .prompt_cache import CACHE_RULES
from .statistics import bootstrap, paired_bootstrap, tps_stat, wilson

__all__ = ["COST_COLUMNS", "cost_rows", "main"]

COST_COLUMNS = ("tokens", "cost_usd", *(f"cost_cached_{rule}" for rule in CACHE_RULES))
"""What is divided by wins, per episode: tokens, cost, and cost with each modelled cache rule."""
_BASELINE = "slateboard"


def _episodes(reports: Sequence[dict[str, Any]]) -> dict[float, dict[str, dict[str, list[float]]]]:
    """rate -> system -> game key -> [won, tokens, cost, cost per cache rule]."""
    out: dict[float, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(dict))
    for n, report in enumerate(reports):
        errors = report.get("errors")
        rate = float(errors["rate"]) if isinstance(errors, dict) and "rate" in errors else 0.0
        for ep in report.get("episodes", []):
            cached = ep.get("cost_cached_usd") or {}
            row = [float(bool(ep["won"])), float(ep["tokens"]), float(ep.get("cost_usd") or 0.0)]
            row += [float(cached.get(rule) or 0.0) for rule in CACHE_RULES]
            out[rate][ep["system"]][f"{n}:{ep['game']}"] = row
    return out


def cost_rows(reports: Sequence[dict[str, Any]], *, resamples: int = 2000) -> list[dict[str, Any]]:
    """One row per (error rate, system), in rate order and the systems' first-seen order: games,
    wins, success with its Wilson interval, and for each of ``COST_COLUMNS`` the value per
    success with its bootstrap interval and slateboard's paired ratio to this system."""
    rows: list[dict[str, Any]] = []
    for rate, systems in sorted(_episodes(reports).items()):
        base = systems.get(_BASELINE, {})
        for system, games in systems.items():
            keys = sorted(games)
            data = [games[k] for k in keys]
            wins = int(sum(r[0] for r in data))
            row: dict[str, Any] = {
                "rate": rate,
                "system": system,
                "games": len(data),
                "wins": wins,
                "success": wilson(wins, len(data)).to_json(),
            }
            shared = [k for k in keys if k in base]
            for col, name in enumerate(COST_COLUMNS, start=1):
                stat = tps_stat(col, 0)
                row[f"{name}_per_success"] = bootstrap(data, stat, resamples=resamples).to_json(6)
                if system != _BASELINE and shared:
                    ours = [base[k] for k in shared]
                    theirs = [games[k] for k in shared]
                    # ratio b / a: slateboard's figure over this system's, the same games resampled
                    ratio = paired_bootstrap(theirs, ours, stat, ratio=True, resamples=resamples)
                    row[f"{name}_ratio"] = ratio.to_json(3)
            rows.append(row)
    return rows


def _cell(value: dict[str, Any], scale: float = 1.0, digits: int = 0) -> str:
    if value.get("value") is None:
        return "-"
    low, high = value.get("low"), value.get("high")
    fmt = f"{{:,.{digits}f}}"
    text = fmt.format(value["value"] * scale)
    if low is not None and high is not None:
        text += f" [{fmt.format(low * scale)}, {fmt.format(high * scale)}]"
    return text


def main(argv: Sequence[str] | None = None) -> None:
    """Print the pooled table (markdown) or, with ``--json``, the rows."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="slateboard eval textworld --json outputs")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    reports = [json.loads(p.read_text()) for p in args.reports]
    rows = cost_rows(reports)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        "| p | system | won | tokens per success | slateboard / this | $ per 1,000 successes | slateboard / this"
        " | with the cache (any prefix) | slateboard / this | with the cache (OpenAI rule) | slateboard / this |"
    )
    print("| --- " * 11 + "|")
    for r in rows:
        cells = [f"{r['rate']:g}", r["system"], f"{r['wins']}/{r['games']}"]
        for name in COST_COLUMNS:
            scale, digits = (1.0, 0) if name == "tokens" else (1000.0, 3)
            cells.append(_cell(r[f"{name}_per_success"], scale, digits))
            cells.append(_cell(r.get(f"{name}_ratio", {}), digits=3))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
