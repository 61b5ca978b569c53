"""What an evaluation run cost in US dollars: its counted tokens priced with a price table.

The table is the core's ``PriceTable`` (``slateboard.models.pricing``: a user table by model
string, then ``*``, then the free local/scripted models, then genai-prices when installed); the
``--prices FILE`` option of the eval commands loads a user table in the ``limits.prices`` form.
The walkthrough policy (``-m walkthrough``) costs 0 unless the table prices it (by name or
``*``): that is how its counted tokens are priced as if a model had produced them. A model no
table knows costs ``None`` ("unknown"), and so does any total, or cost per success, that
includes it: never a partial sum, never a guess.

Cached input tokens: ``cost_usd`` prices every prompt token as plain input; the TextWorld suite
also models a provider's prompt cache (``slateboard_eval.prompt_cache``) and prices the cached
prompt tokens at the table's ``cached_input`` rate (``cost_cached_usd``; plain input where the
table names no cached rate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from slateboard.models.pricing import PriceTable, format_cost

__all__ = [
    "cost_per_success",
    "format_cost",
    "load_prices",
    "prices_json",
    "row_cost",
    "tokens_cost",
    "total_cost",
]


def load_prices(path: Path | str | None) -> PriceTable:
    """The price table of ``--prices FILE`` (a JSON object ``{model: {"input": $, "output": $,
    "cached_input": $?}}``, dollars per million tokens) over the built-in rules, or the built-in
    rules alone for ``None``. Raises ``InvalidInput`` naming the file and the bad entry."""
    if path is None:
        return PriceTable()
    return PriceTable.from_file(path)


def tokens_cost(prices: PriceTable, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float | None:
    """Dollars for ``tokens_in`` prompt and ``tokens_out`` completion tokens of ``model`` (a
    model string as the eval commands take it), ``cached_in`` of the prompt tokens read from a
    prompt cache (at the cached rate), or None when no table prices it."""
    from .envs import WALKTHROUGH_MODEL  # here: the statistics need this module, not the environments

    if model == WALKTHROUGH_MODEL and prices.price_of(model) is None:
        return 0.0
    return prices.cost(model, tokens_in, tokens_out, min(cached_in, tokens_in))


def row_cost(row: Mapping[str, Any], prices: PriceTable) -> float | None:
    """The cost of a results-file row (``slateboard_eval.suites``): its ``tokens_in`` and
    ``tokens_out`` (the Architect's design tokens included) priced under its ``model``; None for
    a row without a model string or one no table prices."""
    model = row.get("model")
    if not isinstance(model, str) or not model:
        return None
    return tokens_cost(prices, model, int(row.get("tokens_in") or 0), int(row.get("tokens_out") or 0))


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of ``costs``, or None when any of them is unknown (0.0 for none at all)."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


def cost_per_success(cost: float | None, wins: int) -> float | None:
    """Total cost / games won (mean cost / success rate): None without a win or a known cost."""
    return cost / wins if cost is not None and wins else None


def prices_json(prices: PriceTable) -> dict[str, Any]:
    """The user part of a price table as reports show it (``{model: {input, output,
    cached_input}}``, dollars per million tokens) and whether genai-prices was consulted."""
    return {
        "table": {
            model: {"input": p.input, "output": p.output, "cached_input": p.cached_input}
            for model, p in sorted(prices.prices.items())
        },
        "genai_prices": prices.use_genai_prices,
    }
