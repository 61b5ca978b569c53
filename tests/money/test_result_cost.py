"""Cost in results: ``RunResult``/``TeamResult.cost_usd`` (and per component/worker) are the
log's usage priced again from the price table, unknown models make it ``None``, and the record
format (so replay) is untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _support.boards import add_note, note_loop
from slateboard.kernel.record import Record, Usage
from slateboard.models.pricing import PriceTable
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.runtime.result import cost_by, cost_of, record_cost
from slateboard.scheduling.coordinator import CoordinatorControl
from slateboard.stores import open_store

BP = note_loop("costed", until=4)


async def _run(prices: dict[str, Any]) -> tuple[Any, list[Record]]:
    store = await open_store("memory://")
    board = await create_board(store, {**BP, "limits": {"prices": prices}})
    unit = CoordinatorControl(ScriptedModel([json.dumps({"choice": "a"})], cycle=True), ask_when_single=True)
    result = await Runner(store, board, functions={"a": add_note}, control=unit).run()
    records = await store.read_records(board)
    await store.close()
    return result, records


async def test_run_result_cost_equals_the_log_priced_again() -> None:
    prices = {"scripted": {"input": 2.0, "output": 8.0}}
    result, records = await _run(prices)
    expected = sum(r.usage.tokens_in * 2.0 + r.usage.tokens_out * 8.0 for r in records) / 1e6
    assert expected > 0
    assert result.cost_usd == pytest.approx(expected)
    assert sum(c or 0.0 for c in result.cost_by_component.values()) == pytest.approx(expected)
    assert set(result.cost_by_component) == set(result.usage)
    assert set(result.cost_by_worker) == set(result.usage_by_worker)
    shown = result.to_json()
    assert shown["cost_usd"] == pytest.approx(expected)
    assert json.loads(json.dumps(shown))["cost_by_component"]


async def test_free_models_cost_zero_without_any_table() -> None:
    result, records = await _run({})
    assert any(r.usage.tokens_in for r in records)  # the coordinator spent tokens...
    assert result.cost_usd == 0.0  # ...on the scripted model, which no provider bills


def _rec(seq: int, model: str | None, tin: int, tout: int, component: str = "worker") -> Record:
    meta: dict[str, Any] = {} if model is None else {"model": model}
    return Record(
        seq=seq,
        kind="proposal",
        outcome="accepted",
        worker="w",
        invocation=None,
        event=None,
        view_hash=None,
        patch=None,
        stage=None,
        reason=None,
        version=seq,
        state_before="",
        state_after="",
        usage=Usage(tin, tout, 0.0, component),
        prev="",
        meta=meta,
    )


def test_an_unknown_model_makes_the_cost_unknown_never_a_partial_sum() -> None:
    table = PriceTable.from_mapping({"openai:gpt-4o-mini": {"input": 1.0, "output": 1.0}}, use_genai_prices=False)
    priced = _rec(1, "openai:gpt-4o-mini", 1_000_000, 0)
    unknown = _rec(2, "openai:some-unpriced-model", 10, 10, component="decider")
    assert record_cost(priced, table) == pytest.approx(1.0)
    assert record_cost(unknown, table) is None
    assert record_cost(_rec(3, None, 0, 0), table) == 0.0  # no tokens, nothing to price
    assert cost_of([priced, unknown], table) is None
    assert cost_of([priced], table) == pytest.approx(1.0)
    by = cost_by([priced, unknown], "component", table)
    assert by["worker"] == pytest.approx(1.0) and by["decider"] is None
