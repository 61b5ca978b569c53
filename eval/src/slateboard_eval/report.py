"""Writing a suite's results: ``report.json`` (the statistics and every row) and the figures."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slateboard.models.pricing import PriceTable

from .cost import prices_json, row_cost
from .plots import write_plots
from .statistics import DEFAULT_RESAMPLES, summarise

__all__ = ["REPORT_FILE", "write_report"]

REPORT_FILE = "report.json"


def write_report(
    rows: Sequence[dict[str, Any]],
    out: Path | str,
    *,
    plots: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    meta: dict[str, Any] | None = None,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """Summarise ``rows`` (``slateboard_eval.statistics.summarise``), write ``out/report.json``
    (the summary, ``meta``, the figure names and the rows) and, with ``plots``, the PNG figures
    (``slateboard_eval.plots``); return what was written to the JSON. Costs are priced with
    ``prices`` (default: the built-in rules) at report time, so a results file can be priced again
    (``slateboard eval report --prices``): every row gets its ``cost_usd``, every system entry its
    total and cost per success, and ``prices`` says which user table was used."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    table = prices if prices is not None else PriceTable()
    rows = [{**r, "cost_usd": row_cost(r, table)} for r in rows]
    report = summarise(rows, resamples=resamples, prices=table)
    report["prices"] = prices_json(table)
    report["meta"] = dict(meta or {})
    report["figures"] = [p.name for p in write_plots(report, root)] if plots else []
    report["rows"] = sorted(rows, key=lambda r: (r["suite"], r["system"], r["setting"], r["game"], r["seed"]))
    (root / REPORT_FILE).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return report
