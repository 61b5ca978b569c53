"""Issue 28: an agent of a team may decline. Its reply ``{"decline": "why"}`` (alone, maybe in a
code fence) is a no-op at stage ``decline``, never an entry and never a rejection, in sequential
and parallel rounds alike; the team goes on and its log replays."""

from __future__ import annotations

from typing import Any

import pytest
from team_testkit import verify_log

from slateboard.models import ScriptedModel
from slateboard.stores import open_store
from slateboard.team import Agent, Team
from slateboard.team._agent import AgentWorker, agent_declined
from slateboard.workers import WorkerReply

DECLINE = '{"decline": "nothing to add yet"}'


def test_what_reads_as_a_decline() -> None:
    assert agent_declined(DECLINE) == "nothing to add yet"
    assert agent_declined(f"```json\n{DECLINE}\n```") == "nothing to add yet"
    assert agent_declined(f"  {DECLINE}\n") == "nothing to add yet"
    # a contribution: prose around it, another member, a reason that is not a string
    assert agent_declined(f"I decline: {DECLINE}") is None
    assert agent_declined(f"{DECLINE} but here is more") is None
    assert agent_declined('{"decline": "x", "content": "y"}') is None
    assert agent_declined('{"decline": 1}') is None
    assert agent_declined('{"content": "an entry"}') is None


@pytest.mark.parametrize("parallel", [False, True], ids=["sequential", "parallel"])
async def test_a_declining_agent_adds_nothing_and_the_team_goes_on(parallel: bool) -> None:
    store = await open_store("memory://")
    try:
        agents = {
            "a": Agent("A", model=ScriptedModel([f"```json\n{DECLINE}\n```", "A's finding"])),
            "b": Agent("B", model=ScriptedModel(["B's finding", "B again"])),
        }
        result = await Team.blackboard(agents, max_rounds=2 if parallel else 4, store=store, parallel=parallel).run("t")
        records = await store.read_records(result.board_id)
        state = (await store.load_board(result.board_id)).initial_state
        assert state is not None
        declined = [r for r in records if r.stage == "decline"]
        assert [(r.worker, r.outcome, r.reason) for r in declined] == [("a", "noop", "declined: nothing to add yet")]
        assert not [r for r in records if r.outcome == "rejected"]
        assert not [r for r in records if r.kind == "circuit"]
        contents = [str(r.patch) for r in records if r.worker == "a" and r.outcome == "accepted"]
        assert len(contents) == 1 and "A's finding" in contents[0] and "decline" not in contents[0]
        assert result.value == "B again"
        assert (await verify_log(store, result.board_id, revalidate=True)).ok
    finally:
        await store.close()


async def test_a_worker_reply_that_declines_in_a_parallel_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker (not only a model's text) that replies ``{"decline": ...}`` in a parallel round:
    the turn is a no-op at stage ``decline``, not a rejection at ``ops``, every round."""
    real = AgentWorker.propose

    async def propose(self: AgentWorker, view: Any, event: Any = None, *, feedback: Any = None) -> WorkerReply:
        if self.name == "a":
            return WorkerReply({"decline": "never mine"})
        return await real(self, view, event, feedback=feedback)

    monkeypatch.setattr(AgentWorker, "propose", propose)
    store = await open_store("memory://")
    try:
        agents = {"a": Agent("A", model=ScriptedModel(["unused"])), "b": Agent("B", model=ScriptedModel(["B1", "B2"]))}
        result = await Team.blackboard(agents, max_rounds=2, store=store, parallel=True).run("t")
        records = await store.read_records(result.board_id)
        mine = [(r.outcome, r.stage, r.meta.get("parallel")) for r in records if r.worker == "a"]
        assert mine == [("noop", "decline", True)] * 2
        assert result.value == "B2" and result.end_reason == "rounds_played" and not result.halted
        assert (await verify_log(store, result.board_id, revalidate=True)).ok
    finally:
        await store.close()
