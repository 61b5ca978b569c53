"""What a model call costs, in US dollars, from a price table: never a guess.

Order of lookup for a model string: the user's table (exact string, then ``*``), then local and
scripted models (free: they run in process or replay text), then pydantic's ``genai-prices``
(a dependency: list prices of the known providers from the data bundled in its wheel, never
fetched at run time; cache reads and writes at their own rates). A model none of them knows
costs ``None`` ("unknown"), not zero: a budget or a report must never mistake an unpriced call
for a free one.

Every model string form finds its provider's list: bare (``gpt-4o``), ``provider:model``
(``groq:llama-3.3-70b-versatile``, pydantic-ai's ``google-gla:gemini-2.0-flash``), litellm's
``provider/model`` (``openai/gpt-4o``, ``gemini/gemini-2.0-flash``) and ``provider:model@URL``
(the URL's host picks the provider when the list knows it, else the named provider, else, for
``openai:`` (any OpenAI-compatible endpoint), the provider whose models the id names).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .errors import ModelError

logger = logging.getLogger(__name__)

FREE_PROVIDERS = ("local", "scripted", "replay")
"""Model string prefixes that cost nothing (in-process or replayed models)."""

MAX_PRICE = 1e9
"""The highest price a table may give per million tokens (a thousand per token, in any currency):
past it a figure is no price but an overflow waiting to happen (``1e308`` times the tokens of a
run is ``inf``), and it is refused."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: ``input``, ``output``, ``cached_input`` (input tokens the
    provider served from its prompt cache) and ``cache_write`` (input tokens it wrote to the
    cache); ``None``: priced as plain input."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write: int = 0) -> float:
        """Dollars for these token counts; ``cached_in`` and ``cache_write`` are part of
        ``tokens_in`` (callers refuse counts that do not fit: see ``PriceTable.cost``)."""
        cached = min(max(cached_in, 0), tokens_in)
        written = min(max(cache_write, 0), tokens_in - cached)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        plain = tokens_in - cached - written
        return (plain * self.input + cached * cached_rate + written * write_rate + tokens_out * self.output) / 1e6


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"price table: {where} must be a number of dollars per million tokens, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"price table: {where} must be a finite number >= 0, got {value!r}")
    if value > MAX_PRICE:
        raise InvalidInput(f"price table: {where} must be at most {MAX_PRICE:g} per million tokens, got {value!r}")
    return float(value)


def _price(model: str, entry: object) -> Price:
    if isinstance(entry, Price):
        fields = {"input": entry.input, "output": entry.output}
        return _price(model, {**fields, "cached_input": entry.cached_input, "cache_write": entry.cache_write})
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"price table: model {model!r} needs an object with input and output, got {entry!r}")
    unknown = sorted(set(entry) - {"input", "output", "cached_input", "cache_write"})
    if unknown:
        raise InvalidInput(f"price table: model {model!r} has unknown field(s) {', '.join(map(str, unknown))}")
    for name in ("input", "output"):
        if name not in entry:
            raise InvalidInput(f"price table: model {model!r} is missing field {name!r}")
    cached, written = entry.get("cached_input"), entry.get("cache_write")
    return Price(
        _number(entry["input"], f"{model}.input"),
        _number(entry["output"], f"{model}.output"),
        None if cached is None else _number(cached, f"{model}.cached_input"),
        None if written is None else _number(written, f"{model}.cache_write"),
    )


_GENAI: list[Any] = []
"""``[Usage, calc_price]`` of genai-prices, ``[None]`` once its import failed: a failed import is
not cached by Python, and results price every record of a log."""

_URL = re.compile(r"@(?=https?://)")
# Providers slateboard serves without a list price of their own (a local server's models).
_UNLISTED = frozenset({"ollama", "ollama_chat"})


def _genai() -> Any:
    if not _GENAI:
        try:  # a dependency, but a broken install must read "unknown", never fail a run
            from genai_prices import Usage, calc_price  # type: ignore[import-not-found,unused-ignore]

            _GENAI.extend((Usage, calc_price))
        except ImportError:
            logger.warning("genai-prices is not importable: models without a user price cost 'unknown'")
            _GENAI.append(None)
    return None if _GENAI[0] is None else _GENAI


@functools.lru_cache(maxsize=256)
def price_lookups(model: str) -> tuple[tuple[str, dict[str, str]], ...]:
    """Where a model string's list price is looked up, in order: ``(model id, where)`` with
    ``where`` one of ``{"provider_api_url": URL}``, ``{"provider_id": NAME}`` or ``{}`` (the
    provider whose models the id names). See the module docstring for the forms. The answer is
    cached per string: callers must not change its dicts."""
    text = model.strip()
    parts = _URL.split(text, maxsplit=1)
    head, url = parts[0].strip(), (parts[1].strip() if len(parts) == 2 else None)
    provider, sep, rest = head.partition(":")
    if not sep or "/" in provider or not rest:
        first, slash, tail = head.partition("/")
        provider, rest = (first, tail) if slash and tail and ":" not in first else ("", head)
    provider = provider.strip().lower()
    rest = rest.strip()
    if provider in _UNLISTED or not rest:
        return ()
    if not provider and url is None:
        # a bare name: the provider slateboard would call (chatgpt-*, gemini-* ...), then the
        # provider whose models the list says it names
        from .errors import ModelConfigError
        from .registry import normalise_model_string

        try:
            called = normalise_model_string(text)
        except ModelConfigError:  # a name slateboard would not call: only the list's own match
            called = text
        if called != text:
            return (*price_lookups(called), (rest, {}))
    out: list[tuple[str, dict[str, str]]] = []
    if url is not None:
        out.append((rest, {"provider_api_url": url}))
    if provider:
        out.append((rest, {"provider_id": provider}))
    if not provider or (provider == "openai" and url is not None):
        out.append((rest, {}))
    return tuple(out)


_UNPRICED: set[str] = set()
"""Model strings that no place in the list prices (every lookup raised LookupError): whether the
list knows a model does not depend on the counts, so the lookups are not redone for each new
count (a local or benchmark model is priced on every record, with a prompt that grows)."""
_UNPRICED_MAX = 4096


@functools.lru_cache(maxsize=4096)  # a log's records repeat counts; one list price is ~0.2 ms of CPU
def _genai_price(model: str, tokens_in: int, tokens_out: int, cached_in: int, cache_write: int) -> float | None:
    if model in _UNPRICED:
        return None
    found = _genai()
    if found is None:
        return None
    Usage, calc_price = found
    usage = Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=cached_in or None,
        cache_write_tokens=cache_write or None,
    )
    unlisted = True
    for name, where in price_lookups(model):
        try:
            return float(calc_price(usage, name, **where).total_price)
        except LookupError as exc:  # not this provider's (or no provider's) model: try the next place
            # The list's own "unable to find" is a plain LookupError; a KeyError or IndexError
            # could come from the counts, so it does not mark the model unlisted.
            unlisted = unlisted and type(exc) is LookupError
            continue
        except Exception as exc:  # bad counts or data: "unknown", never a wrong number
            logger.warning("genai-prices could not price a call of %s: %s", name, type(exc).__name__)
            return None
    if unlisted:
        if len(_UNPRICED) >= _UNPRICED_MAX:
            _UNPRICED.clear()
        _UNPRICED.add(model)
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

    def cost(
        self, model: str | None, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write: int = 0
    ) -> float | None:
        """Dollars for one call of ``model``, or ``None`` ("unknown") when no table knows it or
        the counts do not fit together (negative, or more cached tokens than prompt tokens: a
        provider's report that no price can be trusted on; logged)."""
        if min(tokens_in, tokens_out, cached_in, cache_write) < 0 or cached_in + cache_write > tokens_in:
            logger.warning(
                "usage of %d prompt tokens (%d cache reads, %d cache writes) and %d output tokens does not add up:"
                " its cost is unknown",
                tokens_in, cached_in, cache_write, tokens_out,
            )  # fmt: skip
            return None
        price = self.prices.get("*") if model is None else self.price_of(model)
        if price is not None:
            return price.cost(tokens_in, tokens_out, cached_in, cache_write)
        if model is not None and self.use_genai_prices:
            return _genai_price(model, tokens_in, tokens_out, cached_in, cache_write)
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
