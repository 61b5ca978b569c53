"""``Team.blackboard(..., parallel=True)`` (issue 18): every agent contributes each round from the
board as the round began, their model calls concurrent, their entries decided and appended in
agent order; the log replays; budget, max_rounds, halts and turn counts hold."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from team_testkit import Events, verify_log

from slateboard.models import Generation, Message, ModelUnavailable, ScriptedModel
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.team import Agent, Team
from slateboard.team._team import Budget

NAMES = ("a", "b", "c")
_HANG_GUARD_S = 30.0
"""Only so that a sequential run fails instead of hanging: the barrier never opens then."""


@pytest.fixture
async def store() -> Any:
    s = await open_store("memory://")
    yield s
    await s.close()


class Gate:
    """Shared by one round's models: a barrier every agent's call must reach before any answers
    (so the test passes only if all the calls of a round are in flight at once), then the calls
    answer in ``finish`` order (not agent order)."""

    def __init__(self, finish: Sequence[str]) -> None:
        self.barrier = asyncio.Barrier(len(finish))
        self.finish = list(finish)
        self.done = 0
        self.cond = asyncio.Condition()
        self.finished: list[str] = []

    async def pass_(self, name: str) -> None:
        await asyncio.wait_for(self.barrier.wait(), _HANG_GUARD_S)
        async with self.cond:
            await self.cond.wait_for(lambda: self.finish[self.done % len(self.finish)] == name)
            self.done += 1
            self.finished.append(name)
            self.cond.notify_all()


class GatedModel:
    """A scripted model whose every call goes through ``gate`` first."""

    def __init__(self, name: str, gate: Gate, replies: Sequence[Any]) -> None:
        self.agent = name
        self.gate = gate
        self.inner = ScriptedModel(list(replies), name=f"scripted-{name}")

    @property
    def name(self) -> str:
        return self.inner.name

    async def generate(self, messages: Sequence[Message], **kw: Any) -> Generation:
        await self.gate.pass_(self.agent)
        return await self.inner.generate(messages, **kw)


def gated_team(
    finish: Sequence[str], rounds: int, store: Store, *, replies: Mapping[str, Sequence[Any]] | None = None, **kw: Any
) -> tuple[Team, Gate, dict[str, GatedModel]]:
    gate = Gate(finish)
    models = {
        n: GatedModel(n, gate, (replies or {}).get(n, [f"{n.upper()}{r}" for r in range(1, rounds + 1)])) for n in NAMES
    }
    team = Team.blackboard(
        {n: Agent(n.upper(), model=m) for n, m in models.items()}, max_rounds=rounds, store=store, parallel=True, **kw
    )
    return team, gate, models


def board(result: Any) -> list[tuple[str, str, str]]:
    return [(e["id"], e["author"], e["content"]) for e in result.public[1:]]


# -- concurrency and order -------------------------------------------------------------------------
async def test_a_rounds_model_calls_are_concurrent_and_entries_follow_agent_order(store: Store) -> None:
    team, gate, models = gated_team(["c", "b", "a"], 2, store)
    events = Events()
    result = await team.run("task", on_event=events)
    # Every call passed the barrier: the three calls of each round were in flight together.
    assert gate.finished == ["c", "b", "a", "c", "b", "a"]
    assert result.end_reason == "rounds_played" and result.rounds == 2
    assert board(result) == [
        ("e2", "a", "A1"),
        ("e3", "b", "B1"),
        ("e4", "c", "C1"),
        ("e5", "a", "A2"),
        ("e6", "b", "B2"),
        ("e7", "c", "C2"),
    ]
    # Each agent saw the board as its round began: in round 2, the three round-1 entries and
    # none of round 2's; nobody saw a peer's entry of its own round.
    for n, m in models.items():
        seen = [c.messages[-1].content for c in m.inner.calls]
        assert all("A1" not in s and "B1" not in s and "C1" not in s for s in seen[:1])
        assert all(x in seen[1] for x in ("A1", "B1", "C1")) and "A2" not in seen[1] and "B2" not in seen[1], n
    assert result.turns == 6  # six agent calls; no coordinator model, no decider model
    assert [d["agent"] for d in events.of("blackboard.contribution")] == ["a", "b", "c", "a", "b", "c"]
    assert [d["next_agents"] for d in events.of("blackboard.coordinator_decided")] == [list(NAMES)] * 2


async def test_the_board_does_not_depend_on_which_model_answers_first() -> None:
    boards = []
    for finish in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"]):
        s = await open_store("memory://")
        try:
            team, gate, _ = gated_team(finish, 2, s)
            result = await team.run("task")
            assert gate.finished[:3] == finish
            boards.append(board(result))
        finally:
            await s.close()
    assert boards[0] == boards[1] == boards[2]


# -- the log ---------------------------------------------------------------------------------------
async def test_the_log_replays_and_says_which_proposals_were_parallel(store: Store) -> None:
    team, _, _ = gated_team(["b", "a", "c"], 2, store)
    result = await team.run("task")
    assert (await verify_log(store, result.board_id, revalidate=True)).ok
    records = await store.read_records(result.board_id)
    controls = [r for r in records if r.kind == "control"]
    assert [r.meta["next_agents"] for r in controls] == [list(NAMES)] * 2
    assert all(r.meta["parallel"] is True and r.meta["round"] == i + 1 for i, r in enumerate(controls))
    turns = [r for r in records if r.kind == "proposal" and r.worker in NAMES]
    assert [r.invocation for r in turns] == [f"round-{n}.{k}" for n in (1, 2) for k in (1, 2, 3)]
    assert all(r.outcome == "accepted" and r.meta["parallel"] is True for r in turns)
    # Round 1's three proposals all viewed the board as round 1 began (the problem only).
    versions = [r.meta["round_version"] for r in turns]
    assert versions[0] == versions[1] == versions[2] < versions[3] == versions[4] == versions[5]
    # Every turn was claimed from the agenda and completed; nothing is left pending or claimed.
    done = await store.agenda(result.board_id, ("done",))
    assert [i.id for i in done if i.worker in NAMES] == [r.invocation for r in turns]
    assert await store.agenda(result.board_id) == []


# -- limits ----------------------------------------------------------------------------------------
async def test_the_budget_is_checked_before_each_round(store: Store) -> None:
    team, _, _ = gated_team(["a", "b", "c"], 5, store, budget=Budget(max_calls=4))
    result = await team.run("task")
    # Round 1 (3 calls) is allowed, round 2 too (3 < 4) and runs every turn, round 3 is not.
    assert result.end_reason.startswith("budget:max_calls") and result.interrupted
    assert result.rounds == 2 and result.turns == 6 and len(result.public) == 7
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_a_rejected_contribution_leaves_no_gap_in_the_ids(store: Store) -> None:
    def unavailable(messages: Any) -> str:
        raise ModelUnavailable("scripted", "connection refused")

    team, _, _ = gated_team(["a", "b", "c"], 1, store, replies={"b": [unavailable]})
    events = Events()
    result = await team.run("task", on_event=events)
    assert board(result) == [("e2", "a", "A1"), ("e3", "c", "C1")]
    assert [(d["agent"], d["stage"]) for d in events.of("blackboard.rejected")] == [("b", "model")]
    assert result.turns == 3  # b's failed call is counted too
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_a_halt_in_the_middle_of_a_round_drops_the_rest_and_logs_their_spend(store: Store) -> None:
    # a repeats itself: with max_repeats=2 its second entry (round 2) halts the run before b's
    # and c's round-2 entries are committed.
    replies = {"a": ["same", "same"]}
    team, _, _ = gated_team(["a", "b", "c"], 3, store, replies=replies, circuit={"max_repeats": 2})
    events = Events()
    result = await team.run("task", on_event=events)
    assert result.halted and result.end_reason.startswith("circuit") and result.rounds == 2
    assert board(result) == [("e2", "a", "same"), ("e3", "b", "B1"), ("e4", "c", "C1"), ("e5", "a", "same")]
    records = await store.read_records(result.board_id)
    dropped = [r for r in records if r.meta.get("event") == "blackboard.turn_dropped"]
    assert [(r.worker, r.invocation) for r in dropped] == [("b", "round-2.2"), ("c", "round-2.3")]
    assert all(r.usage.tokens_out > 0 for r in dropped)
    assert result.turns == 6  # the dropped turns' model calls were made and are counted
    assert [(d["agent"], d["stage"]) for d in events.of("blackboard.rejected")] == [("b", "dropped"), ("c", "dropped")]
    assert await store.agenda(result.board_id) == []
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


# -- construction ----------------------------------------------------------------------------------
def test_parallel_is_validated_at_construction() -> None:
    agents = {"a": Agent("A", model=ScriptedModel(["x"]))}
    with pytest.raises(TypeError, match="parallel must be True or False"):
        Team.blackboard(agents, parallel="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parallel=True needs coordinator=None"):
        Team.blackboard(agents, coordinator=Agent("c", model=ScriptedModel(["x"])), parallel=True)


def test_the_sequential_board_is_unchanged_by_the_option() -> None:
    agents = {n: Agent(n, model=ScriptedModel(["x"])) for n in NAMES}
    at = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    sequential = Team.blackboard(agents, max_rounds=4).board_spec("task", at=at)
    assert sequential["limits"] == {"max_steps": 10}
    parallel = Team.blackboard(agents, max_rounds=4, parallel=True).board_spec("task", at=at)
    assert parallel["limits"] == {"max_steps": 2 * 3 * 4 + 2}
    assert {k: v for k, v in parallel.items() if k != "limits"} == {
        k: v for k, v in sequential.items() if k != "limits"
    }


# -- resume ----------------------------------------------------------------------------------------
class Crash(BaseException):
    """Stands for the process dying (not an Exception: nothing in the run may swallow it)."""


async def test_a_parallel_round_cut_short_is_finished_on_resume(store: Store) -> None:
    def crash(messages: Any) -> str:
        raise Crash("the process died")

    team, _, _ = gated_team(["a", "b", "c"], 2, store, replies={"b": [crash]})
    with pytest.raises(Crash):
        await team.run("task")
    (board_id,) = [b.board_id for b in await store.list_boards()]
    # The round's three turns were claimed, none decided: the resumed run takes them one by one
    # (fresh views, sequential), then plays round 2 in parallel.
    fresh = Team.blackboard(
        {n: Agent(n.upper(), model=ScriptedModel([f"{n.upper()}1", f"{n.upper()}2"])) for n in NAMES},
        max_rounds=2,
        store=store,
        parallel=True,
    )
    result = await fresh.resume(board_id)
    assert result.end_reason == "rounds_played" and result.rounds == 2
    assert [(e["author"], e["content"]) for e in result.public[1:]] == [
        ("a", "A1"),
        ("b", "B1"),
        ("c", "C1"),
        ("a", "A2"),
        ("b", "B2"),
        ("c", "C2"),
    ]
    records = await store.read_records(board_id)
    assert [r.meta.get("parallel") for r in records if r.kind == "proposal" and r.worker in NAMES] == [
        None,
        None,
        None,
        True,
        True,
        True,
    ]
    assert await store.agenda(board_id) == []
    assert (await verify_log(store, board_id, revalidate=True)).ok


# -- approval --------------------------------------------------------------------------------------
async def test_each_parallel_entry_goes_through_approval_in_agent_order(store: Store) -> None:
    asked: list[tuple[str, str | None]] = []

    def approval(request: Any) -> bool:
        asked.append((request.agent, request.entry["id"] if request.entry else None))
        return bool(request.agent != "b")

    team, _, _ = gated_team(["c", "a", "b"], 1, store, approval=approval)
    result = await team.run("task")
    assert asked == [("a", "e2"), ("b", "e3"), ("c", "e3")]  # b's refused id is free again for c
    assert board(result) == [("e2", "a", "A1"), ("e3", "c", "C1")]
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_an_entry_awaiting_approval_pauses_the_run_and_drops_the_rest_of_the_round(store: Store) -> None:
    team, _, _ = gated_team(["a", "b", "c"], 2, store, approval_paths=["/public/*"])
    result = await team.run("task")
    assert result.interrupted and result.end_reason.startswith("paused")
    records = await store.read_records(result.board_id)
    assert [r.outcome for r in records if r.kind == "proposal" and r.worker in NAMES] == ["held"]
    assert [r.worker for r in records if r.meta.get("event") == "blackboard.turn_dropped"] == ["b", "c"]
    assert result.turns == 3 and await store.agenda(result.board_id) == []
    assert (await verify_log(store, result.board_id, revalidate=True)).ok
