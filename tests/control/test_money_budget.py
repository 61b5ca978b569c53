"""Issue 18: a money budget from per-model prices the user gives (blueprint ``limits.prices`` and
``limits.max_cost``), counted over the log and enforced like the token budget."""

from __future__ import annotations

import copy
import json
from typing import Any

from _support.boards import add_note, note_loop
from slateboard.models.pricing import PriceTable
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.runtime.accounting import Accounts
from slateboard.scheduling.coordinator import CoordinatorControl
from slateboard.status import end_status
from slateboard.stores import open_store

BP = note_loop("priced", until=20)


async def run(limits: dict[str, Any]) -> tuple[Any, Accounts, CoordinatorControl]:
    bp = copy.deepcopy(BP)
    bp["limits"] = limits
    store = await open_store("memory://")
    board = await create_board(store, bp)
    unit = CoordinatorControl(ScriptedModel([json.dumps({"choice": "a"})], cycle=True), ask_when_single=True)
    result = await Runner(store, board, functions={"a": add_note}, control=unit).run()
    prices = PriceTable.from_mapping(limits.get("prices", {}))
    accounts = Accounts.of(await store.read_records(board), prices=prices)
    await store.close()
    return result, accounts, unit


async def test_the_money_budget_ends_the_run_once_the_priced_log_reaches_it() -> None:
    free, _, unit = await run({})
    assert free.state["notes"] == ["n"] * 20  # unpriced: the run goes to its natural end
    per_call = unit.usage.tokens_in / unit.calls  # the coordinator's prompt tokens per choice
    # Priced at 1e6 per million input tokens: each choice costs its prompt tokens; budget ~3 calls.
    limits: dict[str, Any] = {"prices": {"scripted": {"input": 1e6, "output": 1e6}}, "max_cost": 3 * per_call}
    priced, accounts, _ = await run(limits)
    assert priced.end_reason == "max_cost" and end_status("done", priced.end_reason) == "exhausted"
    assert 0 < len(priced.state["notes"]) < 20
    assert accounts.cost >= limits["max_cost"]
    # Only the priced model's records cost anything: here the coordinator's spend records, each
    # at one unit per token; function workers spend no tokens.
    assert accounts.cost == accounts.tokens > 0


async def test_a_model_without_a_price_costs_nothing_unless_a_default_is_given() -> None:
    _, other, _ = await run({"prices": {"another-model": {"input": 5.0, "output": 5.0}}})
    assert other.cost == 0.0 and other.tokens > 0
    _, default, _ = await run({"prices": {"*": {"input": 2.0, "output": 4.0}}})
    expected = sum(r.usage.tokens_in * 2.0 + r.usage.tokens_out * 4.0 for r in default.history) / 1e6
    assert default.cost > 0 and abs(default.cost - expected) < 1e-9
