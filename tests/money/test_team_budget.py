"""``Team.blackboard(..., budget=Budget(max_cost=...))`` (issue 33): the Runner's hard cap, held
per model call for a team's agents, coordinator and decider alike. Each call reserves its worst
case first; a call that does not fit is never sent (the loopback fake's request count proves it)
and the run ends ``budget:<ledger>`` with the ledgers' state in its run-end record."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from slateboard.errors import InvalidInput
from slateboard.runtime.ledger import MemoryLedger
from slateboard.status import end_status
from slateboard.stores import open_store
from slateboard.team import Agent, Budget, Team

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
CALL = 320 / 1e6  # one call's real cost at a dollar per million tokens
PRICES = {"*": {"input": 1.0, "output": 1.0}}


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion("a finding", usage=USAGE))]).start()
    yield server
    await server.close()


def _team(server: StubServer, budget: Budget, *, decider_tokens: int = 100, **kw: Any) -> Team:
    model = f"openai:stub-model@{server.url}/v1"
    return Team.blackboard(
        {"a": Agent("Add a finding.", max_tokens=100)},
        decider=Agent("Answer.", max_tokens=decider_tokens),
        model=model,
        budget=budget,
        circuit={"max_repeats": 0},  # the fake repeats itself; that must not end the run first
        **kw,
    )


async def test_without_a_cap_every_round_is_played_and_priced(fake: StubServer) -> None:
    result = await _team(fake, Budget(prices=PRICES), max_rounds=6).run("task")
    assert result.end_reason == "rounds_played" and len(fake.requests) == 7  # 6 turns + the decider
    assert result.cost_usd == pytest.approx(7 * CALL)


async def test_max_cost_sends_no_request_beyond_the_cap_and_ends_budget(fake: StubServer) -> None:
    cap = 0.004  # 12 calls' real cost, but each reserves its worst case (prompt bytes + 100)
    store = await open_store("memory://")
    result = await _team(fake, Budget(max_cost=cap, prices=PRICES), max_rounds=30, store=store).run("task")
    made = len(fake.requests)
    assert result.end_reason == "budget:board" and result.interrupted
    assert end_status("done", result.end_reason) == "exhausted"
    assert 0 < made < 30
    assert result.cost_usd is not None
    assert result.cost_usd == pytest.approx(made * CALL) and result.cost_usd <= cap
    records = await store.read_records(result.board_id)
    refused = [r for r in records if r.outcome == "rejected" and "budget:board" in (r.reason or "")]
    assert len(refused) == 1 and refused[0].stage == "model" and refused[0].usage.tokens_in == 0
    end = records[-1]
    assert end.reason == "budget:board" and str(end.meta["ledgers"][0]).startswith("ledger board: cap $0.0040")
    await store.close()


async def test_the_coordinator_reserves_too(fake: StubServer) -> None:
    # A cap below the coordinator's first worst case: no request at all, the run ends budget:board.
    team = _team(fake, Budget(max_cost=0.0001, prices=PRICES), coordinator=Agent("Pick.", max_tokens=50))
    result = await team.run("task")
    assert result.end_reason == "budget:board" and len(fake.requests) == 0 and result.cost_usd == 0.0


async def test_a_refused_decider_leaves_the_fallback_answer_and_ends_budget(fake: StubServer) -> None:
    # The decider's worst case (a million output tokens: $1) cannot fit; the agents' turns can.
    team = _team(fake, Budget(max_cost=0.05, prices=PRICES), decider_tokens=1_000_000, max_rounds=2)
    result = await team.run("task")
    assert len(fake.requests) == 2 and result.end_reason == "budget:board"
    assert result.output == "a finding" and result.state["answer"] == "a finding"


async def test_teams_sharing_a_ledger_never_exceed_it_together(fake: StubServer) -> None:
    shared = MemoryLedger()
    await shared.set_cap("tenant", 0.003)
    budget = Budget(ledgers=((shared, "tenant"),), prices=PRICES)
    results = await asyncio.gather(*(_team(fake, budget, max_rounds=30).run("task") for _ in range(3)))
    assert {r.end_reason for r in results} == {"budget:tenant"}
    state = await shared.state("tenant")
    assert state.spent <= 0.003 and state.reserved == 0
    assert state.spent == pytest.approx(len(fake.requests) * CALL)
    assert sum(r.cost_usd or 0.0 for r in results) == pytest.approx(state.spent)


async def test_no_usage_reported_is_booked_at_the_worst_case_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion("a finding"))]).start()
    store = await open_store("memory://")
    try:
        result = await _team(server, Budget(max_cost=0.004, prices=PRICES), max_rounds=30, store=store).run("t")
        records = await store.read_records(result.board_id)
    finally:
        await server.close()
        await store.close()
    assert result.end_reason == "budget:board"
    said = [r for r in records if "spend_settled" in json.dumps(r.meta)]
    assert len(said) == len(server.requests) > 0


async def test_a_resumed_run_counts_what_the_board_already_cost(fake: StubServer) -> None:
    store = await open_store("memory://")
    first = await _team(fake, Budget(prices=PRICES), max_rounds=3, store=store).run("task")
    assert first.cost_usd == pytest.approx(4 * CALL)
    # The same board resumed under a cap it already used up: nothing more is sent.
    await store.set_status(first.board_id, "running", "test")
    records = await store.read_records(first.board_id)
    assert records[-1].kind == "run"
    sent = len(fake.requests)
    team = _team(fake, Budget(max_cost=4 * CALL, prices=PRICES), max_rounds=3, store=store)
    again = await team.resume(first.board_id)
    assert len(fake.requests) == sent and again.cost_usd == pytest.approx(4 * CALL)
    await store.close()


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"max_cost": -1.0}, "-1.0"),
        ({"max_cost": "5"}, "'5'"),
        ({"max_cost": float("nan")}, "nan"),
        ({"prices": {"m": {"input": -1, "output": 0}}}, "-1"),
        ({"prices": {"m": {"input": 1}}}, "'output'"),
    ],
)
def test_a_bad_cap_or_price_table_is_refused_naming_it(kw: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        Budget(**kw)
    assert named in str(exc.value) and "\n" not in str(exc.value)


async def test_parallel_rounds_reserve_each_turn(fake: StubServer) -> None:
    model = f"openai:stub-model@{fake.url}/v1"
    team = Team.blackboard(
        {n: Agent(f"Agent {n}.", max_tokens=100) for n in ("a", "b", "c")},
        model=model,
        parallel=True,
        max_rounds=30,
        budget=Budget(max_cost=0.004, prices=PRICES),
        circuit={"max_repeats": 0, "max_alternations": 0},
    )
    result = await team.run("task")
    made = len(fake.requests)
    assert result.end_reason == "budget:board" and 0 < made < 90
    assert result.cost_usd is not None
    assert result.cost_usd == pytest.approx(made * CALL) and result.cost_usd <= 0.004


async def test_a_teams_cap_is_recorded_on_the_board_and_holds_on_resume(fake: StubServer) -> None:
    """Issue 45: ``Budget(max_cost=...)`` is part of the board; a resume without it still holds it."""
    store = await open_store("memory://")
    first = await _team(fake, Budget(max_cost=1.0, prices=PRICES), max_rounds=3, store=store).run("task")
    assert (await store.board_info(first.board_id)).meta["spend"] == {"max_cost": 1.0, "ledgers": []}
    await store.set_status(first.board_id, "running", "test")
    await _team(fake, Budget(prices=PRICES), max_rounds=3, store=store).resume(first.board_id)
    ended = [r for r in await store.read_records(first.board_id) if r.kind == "run" and "ledgers" in r.meta]
    assert ended and "ledger board: cap $1.0000" in str(ended[-1].meta["ledgers"])
    await store.close()
