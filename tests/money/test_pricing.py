"""Price tables: user prices override, free models cost 0, unknown models cost None, bad tables
fail with one line naming the value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slateboard.errors import InvalidInput
from slateboard.models.pricing import Price, PriceTable, format_cost, is_free

TABLE = {"openai:gpt-4o-mini": {"input": 0.15, "output": 0.6, "cached_input": 0.075}}


def test_user_price_is_used_and_cached_tokens_are_cheaper() -> None:
    table = PriceTable.from_mapping(TABLE, use_genai_prices=False)
    assert table.cost("openai:gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("openai:gpt-4o-mini", 0, 1_000_000) == pytest.approx(0.6)
    # half the input from the prompt cache: half at the cached rate
    assert table.cost("openai:gpt-4o-mini", 1_000_000, 0, cached_in=500_000) == pytest.approx(0.1125)


def test_free_models_cost_zero_and_unknown_models_cost_none() -> None:
    table = PriceTable(use_genai_prices=False)
    assert table.cost("local", 500, 500) == 0.0
    assert table.cost('scripted:["x"]', 10, 10) == 0.0
    assert table.cost("openai:some-model-nobody-priced", 10, 10) is None
    assert format_cost(None) == "unknown"
    assert format_cost(0.5) == "$0.5000"
    assert is_free("replay:/tmp/x.jsonl") and not is_free("openai:gpt-4o")


def test_star_prices_any_other_model_but_an_exact_entry_wins() -> None:
    table = PriceTable.from_mapping({"*": {"input": 1, "output": 2}, "m": {"input": 0, "output": 0}})
    assert table.cost("m", 10**6, 10**6) == 0.0
    assert table.cost("other", 10**6, 10**6) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"m": {"input": 1}}, "missing field 'output'"),
        ({"m": {"input": -1, "output": 1}}, "m.input must be a finite number >= 0, got -1"),
        ({"m": {"input": 1, "output": 1e300}}, "m.output must be at most 1e+09 per million tokens, got 1e+300"),
        ({"m": {"input": float("inf"), "output": 1}}, "got inf"),
        ({"m": {"input": 1, "output": 1, "cache_write": -3}}, "m.cache_write"),
        ({"m": {"input": "cheap", "output": 1}}, "m.input must be a number"),
        ({"m": {"input": True, "output": 1}}, "got True"),
        ({"m": {"input": 1, "output": float("nan")}}, "m.output"),
        ({"m": {"input": 1, "output": 1, "currency": "EUR"}}, "unknown field(s) currency"),
        ({"m": 3}, "needs an object"),
        ([1, 2], "expected an object of models"),
        ({"": {"input": 1, "output": 1}}, "non-empty strings"),
    ],
)
def test_bad_tables_fail_with_one_line_naming_the_value(table: object, needle: str) -> None:
    with pytest.raises(InvalidInput) as info:
        PriceTable.from_mapping(table)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    good = tmp_path / "prices.json"
    good.write_text(json.dumps(TABLE))
    assert PriceTable.from_file(good).price_of("openai:gpt-4o-mini") == Price(0.15, 0.6, 0.075)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"m": {"input": -2, "output": 1}}))
    with pytest.raises(InvalidInput, match=r"bad\.json"):
        PriceTable.from_file(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(InvalidInput, match=r"broken\.json"):
        PriceTable.from_file(broken)


@given(
    st.floats(0, 100),
    st.floats(0, 100),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
)
def test_cost_is_never_negative_and_grows_with_tokens(
    pin: float, pout: float, tin: int, tout: int, cached: int
) -> None:
    price = Price(pin, pout, pin / 2)
    cost = price.cost(tin, tout, cached)
    assert cost >= 0
    assert price.cost(tin + 1, tout, cached) >= cost
    assert price.cost(tin, tout + 1, cached) >= cost
    assert cost <= price.cost(tin, tout, 0) + 1e-9  # cached input never costs more than plain input


@given(
    st.integers(-(10**6), 10**7),
    st.integers(-(10**6), 10**7),
    st.integers(-(10**6), 10**7),
    st.integers(-(10**6), 10**7),
)
def test_counts_that_do_not_add_up_are_unknown_never_a_wrong_number(
    tin: int, tout: int, cached: int, written: int
) -> None:
    table = PriceTable.from_mapping(
        {"m": {"input": 2.0, "output": 8.0, "cached_input": 0.5, "cache_write": 2.5}}, use_genai_prices=False
    )
    cost = table.cost("m", tin, tout, cached, written)
    fits = min(tin, tout, cached, written) >= 0 and cached + written <= tin
    assert (cost is not None) == fits
    if cost is not None:  # the uncached part is never negative: between all-cached and all-written
        assert (tin * 0.5 + tout * 8.0) / 1e6 - 1e-9 <= cost <= (tin * 2.5 + tout * 8.0) / 1e6 + 1e-9


def test_a_model_the_list_does_not_know_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the price list knows a model does not depend on the counts: an unknown model's
    cost stays unknown for every count, and the list is searched for it once, not per count."""
    from slateboard.models import pricing

    calls: list[str] = []
    original = pricing.price_lookups

    def counted(model: str) -> Any:
        calls.append(model)
        return original(model)

    monkeypatch.setattr(pricing, "price_lookups", counted)
    monkeypatch.setattr(pricing, "_UNPRICED", set(), raising=False)
    pricing._genai_price.cache_clear()
    table = PriceTable()
    model = "no-such-provider-model-xyz"
    assert [table.cost(model, n, 3) for n in (10, 11, 12)] == [None, None, None]
    assert calls == [model]
    pricing._genai_price.cache_clear()
