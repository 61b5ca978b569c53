"""What a model call costs, in US dollars, from a price table: never a guess.

Order of lookup for a model string: the user's table (exact string, then ``*``), then local and
scripted models (free: they run in process or replay text), then pydantic's ``genai-prices``
when it is installed (an optional dependency: list prices of the known providers, cached-input
tokens included). A model none of them knows costs ``None`` ("unknown"), not zero: a budget or a
report must never mistake an unpriced call for a free one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .errors import ModelError

FREE_PROVIDERS = ("local", "scripted", "replay")
"""Model string prefixes that cost nothing (in-process or replayed models)."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: ``input``, ``output`` and ``cached_input`` (input tokens the
    provider served from its prompt cache; ``None``: priced as plain input)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float:
        """Dollars for these token counts; ``cached_in`` is part of ``tokens_in``."""
        cached = min(max(cached_in, 0), tokens_in)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((tokens_in - cached) * self.input + cached * cached_rate + tokens_out * self.output) / 1e6


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"price table: {where} must be a number of dollars per million tokens, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"price table: {where} must be a finite number >= 0, got {value!r}")
    return float(value)


def _price(model: str, entry: object) -> Price:
    if isinstance(entry, Price):
        return _price(model, {"input": entry.input, "output": entry.output, "cached_input": entry.cached_input})
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"price table: model {model!r} needs an object with input and output, got {entry!r}")
    unknown = sorted(set(entry) - {"input", "output", "cached_input"})
    if unknown:
        raise InvalidInput(f"price table: model {model!r} has unknown field(s) {', '.join(map(str, unknown))}")
    for name in ("input", "output"):
        if name not in entry:
            raise InvalidInput(f"price table: model {model!r} is missing field {name!r}")
    cached = entry.get("cached_input")
    return Price(
        _number(entry["input"], f"{model}.input"),
        _number(entry["output"], f"{model}.output"),
        None if cached is None else _number(cached, f"{model}.cached_input"),
    )


_GENAI: list[Any] = []
"""``[Usage, calc_price]`` of genai-prices, ``[None]`` once its import failed: a failed import is
not cached by Python, and results price every record of a log."""


def _genai() -> Any:
    if not _GENAI:
        try:  # optional: absent means "unknown"
            from genai_prices import Usage, calc_price  # type: ignore[import-not-found,unused-ignore]

            _GENAI.extend((Usage, calc_price))
        except ImportError:
            _GENAI.append(None)
    return None if _GENAI[0] is None else _GENAI


def _genai_price(model: str, tokens_in: int, tokens_out: int, cached_in: int) -> float | None:
    found = _genai()
    if found is None:
        return None
    Usage, calc_price = found
    _, _, name = model.partition(":") if ":" in model.split("/")[0] else ("", "", model)
    name = name.split("@", 1)[0]
    try:
        usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out, cache_read_tokens=cached_in or None)
        return float(calc_price(usage, name).total_price)
    except Exception:  # any lookup failure of the optional table is "unknown"
        return None


@dataclass(frozen=True, slots=True)
class PriceTable:
    """The user's prices per model string (``*``: any model not named), over the built-in rules
    (see the module docstring). ``use_genai_prices=False`` keeps to the user's table and the free
    models, so a figure never depends on which optional packages are installed."""

    prices: Mapping[str, Price] = field(default_factory=dict)
    use_genai_prices: bool = True

    @classmethod
    def from_mapping(cls, table: object, *, use_genai_prices: bool = True) -> PriceTable:
        """A table from ``{model: {"input": $, "output": $, "cached_input": $?}}``; raises
        ``InvalidInput`` naming the model and value for a missing field, a negative, infinite
        or non-numeric price, or a table that is not an object."""
        if not isinstance(table, Mapping):
            raise InvalidInput(f"price table: expected an object of models, got {type(table).__name__}")
        prices = {}
        for model, entry in table.items():
            if not isinstance(model, str) or not model.strip():
                raise InvalidInput(f"price table: model names must be non-empty strings, got {model!r}")
            prices[model] = _price(model, entry)
        return cls(prices, use_genai_prices)

    @classmethod
    def from_file(cls, path: str | Path, *, use_genai_prices: bool = True) -> PriceTable:
        """A table from a JSON file (the ``from_mapping`` form); errors name the file."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"price table {p}: {exc}") from None
        try:
            return cls.from_mapping(data, use_genai_prices=use_genai_prices)
        except InvalidInput as exc:
            raise InvalidInput(f"{p}: {exc}") from None

    def price_of(self, model: str) -> Price | None:
        """The user's price for ``model`` (exact, then ``*``), zero for free models, else None."""
        found = self.prices.get(model) or self.prices.get("*")
        if found is not None:
            return found
        if is_free(model):
            return Price(0.0, 0.0)
        return None

    def cost(self, model: str | None, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float | None:
        """Dollars for one call of ``model``, or ``None`` when no table knows it ("unknown")."""
        if model is None:
            return None if not self.prices.get("*") else self.prices["*"].cost(tokens_in, tokens_out, cached_in)
        price = self.price_of(model)
        if price is not None:
            return price.cost(tokens_in, tokens_out, cached_in)
        if self.use_genai_prices:
            return _genai_price(model, tokens_in, tokens_out, cached_in)
        return None


class SpendRefused(ModelError):
    """A model call was not made: its worst-case cost did not fit under a spend ledger's cap
    (or the model has no price, so no cap can bound it). ``ledger`` names the ledger."""

    def __init__(self, model: str, ledger: str, detail: str) -> None:
        self.ledger = ledger
        super().__init__(model, f"budget:{ledger}: {detail}")


def is_free(model: str) -> bool:
    """True for local, scripted and replayed models (no provider bills them)."""
    text = model.strip().lower()
    return text == "local" or text.split(":", 1)[0] in FREE_PROVIDERS


def format_cost(cost: float | None) -> str:
    """``$0.0123`` or ``unknown`` (what the CLI shows)."""
    return "unknown" if cost is None else f"${cost:.4f}"
