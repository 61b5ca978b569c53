"""Team.blackboard on the embedded local model (SmolLM2-135M via llama.cpp): the documented
example shape with ``model="local"`` runs to the end, the coordinator's JSON-constrained answers
are read, every contribution is a kernel-accepted entry, and the log replays."""

from __future__ import annotations

from typing import Any

import pytest
from team_testkit import Events, verify_log

from _support.probes import local_model_problem
from slateboard.stores import open_store
from slateboard.team import Agent, Team

_REASON = local_model_problem()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


async def test_documented_example_on_the_local_model() -> None:
    store = await open_store("memory://")
    try:
        small: dict[str, Any] = {"max_tokens": 48}
        hypothesis = Agent("Propose hypotheses about the data.", **small)
        evidence = Agent("Search for evidence and add it to the board.", tools=[...], **small)
        critic = Agent("Critique the current top hypothesis.", **small)
        coordinator = Agent(
            "Read the blackboard. Decide which agent contributes next, or terminate when the problem is solved.",
            max_tokens=64,
        )
        decider = Agent("Read the full blackboard and produce the final answer.", **small)
        events = Events()
        team = Team.blackboard(
            agents={"hypothesis": hypothesis, "evidence": evidence, "critic": critic},
            coordinator=coordinator,
            decider=decider,
            model="local",
            max_rounds=2,
            store=store,
            on_event=events,
        )
        result = await team.run("Investigate why retention dropped in March.")
        assert result.end_reason in ("terminated", "max_rounds")
        assert events.kinds[0] == "blackboard.started" and events.kinds[-1] == "blackboard.completed"
        records = await store.read_records(result.board_id)
        controls = [r for r in records if r.kind == "control"]
        assert controls and all(r.meta["parsed"] is True for r in controls), [r.meta["raw"] for r in controls]
        agent_records = [r for r in records if r.kind == "proposal" and r.worker in team.agents]
        assert all(r.outcome == "accepted" for r in agent_records)
        picked = [r.meta["next_agent"] for r in controls if r.meta["next_agent"] is not None]
        assert len(agent_records) == sum(1 for p in picked if p in team.agents)
        assert isinstance(result.output, str) and result.state["answer"] == result.output
        assert result.usage["coordinator"].tokens_in > 0 and result.usage["decider"].tokens_out > 0
        assert (await verify_log(store, result.board_id, revalidate=True)).ok
    finally:
        await store.close()
