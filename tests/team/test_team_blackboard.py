"""Team.blackboard end to end with scripted models: the documented usage example, the coordinator
protocol and its fallbacks, round-robin, the decider fallback, the budget, events, and the
board's log (authorship enforced by the kernel, timestamps in the patches, replay)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace as dc_replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from team_testkit import Events, decision, ticking_clock, verify_log

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, replay
from slateboard.models import Message, ModelServerError, ModelTimeout, ModelUnavailable, ScriptedModel
from slateboard.runtime import RunEvent
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.team import (
    BLACKBOARD_EVENTS,
    ROUND_ROBIN_RAW,
    Agent,
    Budget,
    BudgetStatus,
    Spend,
    Team,
    TeamResult,
    blackboard_blueprint,
    make_entry,
)
from slateboard.workers import tool


@pytest.fixture
async def store() -> Any:
    s = await open_store("memory://")
    yield s
    await s.close()


def investigation_team(store: Store | None = None, **overrides: Any) -> tuple[Team, dict[str, ScriptedModel]]:
    """The seed's usage example with scripted models in place of the named providers."""
    models = {
        "hypothesis": ScriptedModel(["H1: a price increase. H2: an onboarding bug in the 3 March release."]),
        "evidence": ScriptedModel(["Signup errors tripled after 3 March, which supports the second idea in [e2]."]),
        "critic": ScriptedModel(["H1 is weak: prices did not change. H2 fits the evidence in [e3]."]),
        "coordinator": ScriptedModel(
            [
                decision(agent="hypothesis", instruction="Propose hypotheses."),
                decision(agent="evidence", instruction="Look for evidence about [e2]."),
                decision(agent="critic", instruction="Critique the top hypothesis."),
                decision(terminate=True),
            ]
        ),
        "decider": ScriptedModel(["Retention dropped because of the onboarding bug shipped on 3 March."]),
    }
    hypothesis = Agent("Propose hypotheses about the data.", model=models["hypothesis"])
    evidence = Agent("Search for evidence and add it to the board.", model=models["evidence"], tools=[...])
    critic = Agent("Critique the current top hypothesis.", model=models["critic"])
    coordinator = Agent(
        "Read the blackboard. Decide which agent contributes next, or terminate when the problem is solved.",
        model=models["coordinator"],
    )
    decider = Agent("Read the full blackboard and produce the final answer.", model=models["decider"])
    kwargs: dict[str, Any] = {"clock": ticking_clock(), **overrides}
    if store is not None:
        kwargs["store"] = store
    team = Team.blackboard(
        agents={"hypothesis": hypothesis, "evidence": evidence, "critic": critic},
        coordinator=coordinator,
        decider=decider,
        model='scripted:["unused"]',
        **kwargs,
    )
    return team, models


# -- the documented example -------------------------------------------------------------------------
async def test_usage_example_runs_as_documented() -> None:
    # The shape of the documented example: Agents, Team.blackboard(agents, coordinator, decider,
    # model), `await team.run(prompt)`; only the model names are replaced by scripted models.
    team, models = investigation_team()
    events = Events()
    result = await team.run("Investigate why retention dropped in March.", on_event=events)

    assert isinstance(result, TeamResult)
    assert result.output == "Retention dropped because of the onboarding bug shipped on 3 March."
    assert result.end_reason == "terminated" and not result.interrupted and result.rounds == 4
    assert [(e["author"], e["kind"]) for e in result.public] == [
        ("user", "problem"),
        ("hypothesis", "contribution"),
        ("evidence", "contribution"),
        ("critic", "contribution"),
    ]
    assert result.public[0]["content"] == "Investigate why retention dropped in March."
    assert result.public[2]["references"] == ["e2"] and result.public[3]["references"] == ["e3"]
    assert result.state["answer"] == result.output
    assert events.kinds == [
        "blackboard.started",
        *["blackboard.coordinator_decided", "blackboard.invoking", "blackboard.contribution"] * 3,
        "blackboard.coordinator_decided",
        "blackboard.completed",
    ]
    assert events.of("blackboard.started") == [
        {"agents": ["hypothesis", "evidence", "critic"], "has_coordinator": True, "has_decider": True}
    ]
    assert events.of("blackboard.completed") == [{"final": result.output, "board_size": 4}]
    assert events.of("blackboard.invoking")[1] == {"round": 2, "agent": "evidence"}
    assert events.of("blackboard.contribution")[2]["content"].startswith("H1 is weak")
    assert set(events.kinds) <= set(BLACKBOARD_EVENTS)

    # Each agent ran once, with its instructions as the system prompt and the coordinator's
    # instruction and the board (with the earlier entries) in the prompt.
    ev_call = models["evidence"].calls[0]
    assert ev_call.messages[0] == Message.system("Search for evidence and add it to the board.")
    prompt = ev_call.messages[-1].content
    assert "Coordinator instruction: Look for evidence about [e2]." in prompt
    assert "e2 [contribution] hypothesis: H1: a price increase." in prompt
    assert "e1 [problem] user: Investigate why retention dropped in March." in prompt
    # The coordinator saw the agents and their roles, and (constrained decoding) the answer schema.
    coord_call = models["coordinator"].calls[1]
    assert "critic: Critique the current top hypothesis." in coord_call.messages[-1].content
    assert coord_call.json_schema is not None and coord_call.json_schema["required"] == [
        "terminate",
        "next_agent",
        "instruction",
    ]
    assert "e2 [contribution] hypothesis" in models["decider"].calls[0].messages[-1].content
    assert set(result.usage) == {"coordinator", "worker", "decider"}
    assert result.usage["coordinator"].calls == 4 and result.usage["worker"].calls == 3
    assert result.usage_by_agent["critic"].calls == 1 and result.usage_by_agent["critic"].tokens_in > 0


async def test_the_log_is_auditable_and_replays(store: Store) -> None:
    team, _ = investigation_team(store)
    result = await team.run("Investigate why retention dropped in March.")
    records = await store.read_records(result.board_id)
    kinds = [(r.kind, r.worker, r.outcome) for r in records]
    assert kinds == [
        ("control", "__coordinator", "action"),
        ("proposal", "hypothesis", "accepted"),
        ("control", "__coordinator", "action"),
        ("proposal", "evidence", "accepted"),
        ("control", "__coordinator", "action"),
        ("proposal", "critic", "accepted"),
        ("control", "__coordinator", "action"),
        ("proposal", "__decider", "accepted"),
        ("run", None, "action"),
    ]
    # The coordinator's instruction is the logged triggering event of the agent's proposal.
    assert records[3].event == {
        "kind": "coordinator",
        "round": 2,
        "agent": "evidence",
        "instruction": "Look for evidence about [e2].",
    }
    assert records[2].meta["next_agent"] == "evidence" and records[2].usage.component == "coordinator"
    assert records[-1].reason == "terminated"
    info = await store.board_info(result.board_id)
    assert info.status == "done" and info.reason == "terminated"
    for revalidate in (False, True):
        report = await verify_log(store, result.board_id, revalidate=revalidate)
        assert report.ok, str(report)
        assert report.state == result.state


async def test_timestamps_come_from_the_worker_and_are_part_of_the_patch(store: Store) -> None:
    team, _ = investigation_team(store)
    result = await team.run("Investigate why retention dropped in March.")
    stamps = [e["timestamp"] for e in result.public]
    # The fixed clock ticks once per stamp: the problem entry, then each agent's entry.
    assert stamps == [f"2026-03-01T12:00:0{i}+00:00" for i in range(4)]
    records = await store.read_records(result.board_id)
    critic = next(r for r in records if r.worker == "critic")
    ops = orjson.loads(critic.patch or "[]")
    assert ops[0]["path"] == "/public/-" and ops[0]["value"]["timestamp"] == stamps[3]
    assert ops[1] == {"op": "add", "path": "/signatures/critic", "value": "e4"}
    # Tampering with a logged timestamp breaks verification: replay reads no clock.
    tampered = critic.patch.replace(stamps[3], "2030-01-01T00:00:00+00:00") if critic.patch else ""
    loaded = await store.load_board(result.board_id)
    altered = [dc_replace(r, patch=tampered) if r.seq == critic.seq else r for r in records]
    assert not replay(compile_blueprint(loaded.blueprint), loaded.initial_state, altered).ok


# -- construction ---------------------------------------------------------------------------------
def test_needs_an_agent_and_a_round() -> None:
    with pytest.raises(ValueError, match="at least one agent"):
        Team.blackboard(agents={})
    with pytest.raises(ValueError, match="max_rounds must be >= 1"):
        Team.blackboard(agents={"a": Agent("x")}, max_rounds=0)
    # The agent check comes first, as in the documented architecture.
    with pytest.raises(ValueError, match="at least one agent"):
        Team.blackboard(agents={}, max_rounds=0)
    for reserved in ("user", "system", "__decider"):
        with pytest.raises(ValueError, match="reserved"):
            Team.blackboard(agents={reserved: Agent("x")})
    with pytest.raises(TypeError):
        Team.blackboard(agents={"a": "not an agent"})  # type: ignore[dict-item]
    team = Team.blackboard(agents={"a": Agent("x")}, max_rounds=1)
    assert team.max_rounds == 1 and list(team.agents) == ["a"]


# -- the coordinator protocol ---------------------------------------------------------------------
async def test_tolerant_coordinator_parsing_and_its_fallbacks(store: Store) -> None:
    coordinator = ScriptedModel(
        [
            "```json\n" + decision(agent="a", instruction="Start.") + "\n```",
            "Let me think. Next: " + decision(agent="b") + " That is my choice.",
            "I am not sure who should go next.",
            decision(agent="nobody"),
            json.dumps({"terminate": "false", "next_agent": " a ", "instruction": None}),
            decision(agent=None),
        ]
    )
    agent_model = ScriptedModel(["first", "second", "third"])
    events = Events()
    team = Team.blackboard(
        agents={"a": Agent("A role", model=agent_model), "b": Agent("B role", model=agent_model)},
        coordinator=Agent("coordinate", model=coordinator),
        max_rounds=6,
        store=store,
        clock=ticking_clock(),
    )
    result = await team.run("task", on_event=events)
    decided = events.of("blackboard.coordinator_decided")
    assert [(d["round"], d["terminate"], d["next_agent"]) for d in decided] == [
        (1, False, "a"),
        (2, False, "b"),
        (3, False, None),
        (4, False, "nobody"),
        (5, False, "a"),
        (6, False, None),
    ]
    assert decided[2]["raw"] == "I am not sure who should go next."
    # Unreadable output and a null agent are no-op rounds with a warning event.
    assert events.of("blackboard.no_contributor") == [
        {"round": 3, "reason": "no JSON decision could be read"},
        {"round": 6, "reason": "the coordinator named no agent"},
    ]
    # An unknown agent: the system posts an error entry, the round is skipped.
    assert events.of("blackboard.unknown_agent") == [{"round": 4, "agent_name": "nobody"}]
    error = result.public[3]
    assert error["author"] == "system" and error["kind"] == "error" and "'nobody'" in error["content"]
    assert [e["author"] for e in result.public] == ["user", "a", "b", "system", "a"]
    # The round-1 instruction reached agent a; round 5 had none, so the default was used.
    assert "Coordinator instruction: Start." in agent_model.calls[0].messages[-1].content
    assert "Contribute to the blackboard as a." in agent_model.calls[2].messages[-1].content
    assert result.end_reason == "max_rounds" and result.rounds == 6
    assert result.output == "third"  # no decider: the last contribution
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_coordinator_model_failure_is_a_no_op_round() -> None:
    def boom(messages: Any) -> str:
        raise ModelServerError("scripted", "server down")

    coordinator = ScriptedModel([boom, decision(terminate=True)])
    events = Events()
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["never"]))},
        coordinator=Agent("c", model=coordinator),
        max_rounds=5,
    )
    result = await team.run("task", on_event=events)
    assert events.of("blackboard.no_contributor")[0]["round"] == 1
    assert "coordinator failed" in events.of("blackboard.coordinator_decided")[0]["raw"]
    assert result.end_reason == "terminated" and result.rounds == 2 and result.output == ""


async def test_round_robin_without_a_coordinator(store: Store) -> None:
    model = ScriptedModel(["a1", "b1", "c1", "a2", "b2"])
    events = Events()
    team = Team.blackboard(
        agents={n: Agent(f"{n} role", model=model) for n in ("a", "b", "c")},
        max_rounds=5,
        store=store,
    )
    result = await team.run("task", on_event=events)
    decided = events.of("blackboard.coordinator_decided")
    assert [d["next_agent"] for d in decided] == ["a", "b", "c", "a", "b"]
    assert {d["raw"] for d in decided} == {ROUND_ROBIN_RAW}
    assert [(e["author"], e["content"]) for e in result.public[1:]] == [
        ("a", "a1"),
        ("b", "b1"),
        ("c", "c1"),
        ("a", "a2"),
        ("b", "b2"),
    ]
    assert result.end_reason == "rounds_played" and result.output == "b2"
    assert "coordinator" not in result.usage  # round-robin calls no model
    records = await store.read_records(result.board_id)
    assert sum(r.kind == "control" for r in records) == 5


# -- the decider ----------------------------------------------------------------------------------
async def test_decider_fallbacks() -> None:
    # 1. The last answer-kind entry wins over later contributions.
    model = ScriptedModel(
        [
            json.dumps({"content": "draft answer", "kind": "answer"}),
            "a later remark",
            json.dumps({"content": "final answer", "kind": "answer"}),
            "after the answer",
        ]
    )
    team = Team.blackboard(agents={"a": Agent("x", model=model)}, max_rounds=4)
    result = await team.run("task")
    kinds = [e["kind"] for e in result.public[1:]]
    assert kinds == ["answer", "contribution", "answer", "contribution"]
    assert result.output == "final answer"
    # 2. No answer entry: the last contribution (error entries do not count).
    coordinator = ScriptedModel([decision(agent="a"), decision(agent="ghost"), decision(terminate=True)])
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["only contribution"]))},
        coordinator=Agent("c", model=coordinator),
    )
    result = await team.run("task")
    assert result.public[-1]["kind"] == "error"
    assert result.output == "only contribution"
    # 3. Nothing contributed: the empty string.
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["unused"]))},
        coordinator=Agent("c", model=ScriptedModel([decision(terminate=True)])),
    )
    result = await team.run("task")
    assert result.output == "" and result.state["answer"] == "" and result.rounds == 1


async def test_decider_model_failure_falls_back_with_a_warning() -> None:
    def boom(messages: Any) -> str:
        raise ModelTimeout("scripted", "too slow")

    events = Events()
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["the contribution"]))},
        decider=Agent("decide", model=ScriptedModel([boom])),
        max_rounds=1,
    )
    result = await team.run("task", on_event=events)
    assert result.output == "the contribution"
    assert events.kinds[-2:] == ["blackboard.decider_failed", "blackboard.completed"]


# -- the budget -----------------------------------------------------------------------------------
async def test_budget_is_checked_every_round_and_interrupts(store: Store) -> None:
    seen: list[Spend] = []

    class CountingBudget:
        async def allows_step(self, spent: Spend) -> BudgetStatus:
            seen.append(spent)
            if spent.calls >= 4:
                return BudgetStatus(True, "four calls are enough")
            return BudgetStatus()

    decider_model = ScriptedModel(["never asked"])
    events = Events()
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["one", "two", "three"], cycle=True))},
        coordinator=Agent("c", model=ScriptedModel([decision(agent="a")], cycle=True)),
        decider=Agent("d", model=decider_model),
        max_rounds=10,
        budget=CountingBudget(),
        store=store,
    )
    result = await team.run("task", on_event=events)
    # Rounds 1 and 2 each cost two calls (coordinator + agent); round 3 is blocked.
    assert [s.rounds for s in seen] == [0, 1, 2]
    assert [s.calls for s in seen] == [0, 2, 4]
    assert result.interrupted and result.interruption_reason == "budget:four calls are enough"
    assert result.end_reason == "budget:four calls are enough" and result.output == ""
    assert decider_model.calls == []  # no decider after an interruption
    assert events.kinds[-1] == "budget.exceeded" and "blackboard.completed" not in events.kinds
    assert events.of("budget.exceeded") == [
        {"round": 3, "reason": "four calls are enough", "tokens": seen[-1].total_tokens, "calls": 4}
    ]
    assert result.state["answer"] is None and len(result.public) == 3
    records = await store.read_records(result.board_id)
    assert records[-1].kind == "run" and records[-1].reason == "budget:four calls are enough"
    assert (await verify_log(store, result.board_id)).ok


async def test_token_budget() -> None:
    assert (await Budget(max_tokens=10).allows_step(Spend(tokens_in=6, tokens_out=4))).blocked
    assert not (await Budget(max_tokens=10).allows_step(Spend(tokens_in=6, tokens_out=3))).blocked
    assert (await Budget(max_calls=2).allows_step(Spend(calls=2))).reason == "max_calls (2 of 2 model calls made)"
    assert (await Budget(max_seconds=1).allows_step(Spend(elapsed_s=1.5))).blocked
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["a fairly long contribution " * 4], cycle=True))},
        max_rounds=50,
        budget=Budget(max_tokens=60),
    )
    result = await team.run("task")
    assert result.interrupted and result.interruption_reason is not None
    assert result.interruption_reason.startswith("budget:max_tokens (")
    assert 1 <= result.rounds < 50


# -- authorship on the board ----------------------------------------------------------------------
async def test_an_agent_cannot_post_as_someone_else(store: Store) -> None:
    # A structured reply may choose the kind and references, never the author or a reserved kind.
    forged = json.dumps({"content": "I am the critic", "author": "critic", "kind": "error", "references": ["e9"]})
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel([forged])), "critic": Agent("y", model=ScriptedModel(["ok"]))},
        max_rounds=1,
        store=store,
    )
    result = await team.run("task")
    entry = result.public[1]
    assert (entry["author"], entry["kind"], entry["references"]) == ("a", "contribution", [])

    # A worker that forges the author is stopped by the kernel (authorisation or invariant).
    kernel = Kernel(compile_blueprint(blackboard_blueprint(["a", "critic"])))
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def post(worker: str, author: str, sign: str, entry_id: str = "e1", kind: str = "contribution") -> Any:
        ops = [
            {"op": "add", "path": "/public/-", "value": make_entry(entry_id, author, "text", kind=kind, at=now)},
            {"op": "add", "path": f"/signatures/{sign}", "value": entry_id},
        ]
        return kernel.submit(Proposal(worker, ops))

    assert post("a", "critic", "critic").stage == "authorise"
    assert post("a", "critic", "a").stage == "invariants"
    assert post("a", "user", "a", kind="problem").stage == "invariants"
    assert post("a", "a", "a", kind="error").stage == "invariants"
    assert post("a", "a", "a").accepted
    assert post("critic", "critic", "critic", entry_id="e1").stage == "invariants"  # ids are unique
    assert post("critic", "critic", "critic", entry_id="e2").accepted
    # Without signing in the same patch, the slot still names an older entry: rejected.
    unsigned = kernel.submit(
        Proposal("a", [{"op": "add", "path": "/public/-", "value": make_entry("e3", "a", "x", at=now)}])
    )
    assert unsigned.stage == "invariants" and "signed by its author" in (unsigned.reason or "")
    # ... and re-using the id the slot still holds collides with that entry.
    assert post("a", "a", "critic", entry_id="e1").stage == "authorise"
    reuse = kernel.submit(
        Proposal("a", [{"op": "add", "path": "/public/-", "value": make_entry("e1", "a", "x", at=now)}])
    )
    assert reuse.stage == "invariants" and "unique" in (reuse.reason or "")
    # A signature that names another id than the entry's is no signature.
    assert post("a", "a", "a", entry_id="e4").accepted
    crossed = kernel.submit(
        Proposal(
            "a",
            [
                {"op": "add", "path": "/public/-", "value": make_entry("e5", "a", "x", at=now)},
                {"op": "add", "path": "/signatures/a", "value": "e6"},
            ],
        )
    )
    assert crossed.stage == "invariants"
    private = kernel.submit(
        Proposal("a", [{"op": "add", "path": "/private/a/-", "value": make_entry("n1", "critic", "x", at=now)}])
    )
    assert private.stage == "invariants" and "scratchpad" in (private.reason or "")
    other_pad = kernel.submit(
        Proposal("a", [{"op": "add", "path": "/private/critic/-", "value": make_entry("n1", "a", "x", at=now)}])
    )
    assert other_pad.stage == "authorise"


async def test_private_notes_go_to_the_agents_own_scratchpad(store: Store) -> None:
    reply = json.dumps({"content": "public part", "note": "remember to check [e1]"})
    model = ScriptedModel([reply, "second turn"])
    team = Team.blackboard(agents={"a": Agent("x", model=model)}, max_rounds=2, store=store)
    result = await team.run("task")
    assert result.state["private"]["a"][0]["content"] == "remember to check [e1]"
    assert result.state["private"]["a"][0]["author"] == "a"
    assert [e["content"] for e in result.public[1:]] == ["public part", "second turn"]
    second_prompt = model.calls[1].messages[-1].content
    assert "=== Your private notes ===" in second_prompt and "remember to check [e1]" in second_prompt


# -- agents: failures and tools -------------------------------------------------------------------
async def test_agent_model_failure_is_rejected_and_the_run_goes_on(store: Store) -> None:
    def boom(messages: Any) -> str:
        raise ModelUnavailable("scripted", "no connection")

    events = Events()
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel([boom, "recovered"]))}, max_rounds=2, store=store
    )
    result = await team.run("task", on_event=events)
    rejected = events.of("blackboard.rejected")
    # Issue 15: a provider failure is its own stage ("model"), not a "parse" rejection.
    assert len(rejected) == 1 and rejected[0]["stage"] == "model" and "no connection" in rejected[0]["error"]
    assert "provider error" in rejected[0]["reason"] and "JSON" not in rejected[0]["reason"]
    assert [e["content"] for e in result.public[1:]] == ["recovered"]
    records = await store.read_records(result.board_id)
    failed = next(r for r in records if r.outcome == "rejected")
    assert "no connection" in str(failed.meta.get("error"))
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_agent_tools_are_called_before_the_contribution() -> None:
    calls: list[str] = []

    @tool
    def search(query: str) -> list[str]:
        """Search the analytics warehouse."""
        calls.append(query)
        return ["signup errors x3 after 3 March"]

    model = ScriptedModel(['{"tool": "search", "args": {"query": "signup errors March"}}', "Errors tripled [e1]."])
    team = Team.blackboard(agents={"evidence": Agent("find evidence", model=model, tools=[search, ...])}, max_rounds=1)
    result = await team.run("why?")
    assert calls == ["signup errors March"]
    assert result.public[-1]["content"] == "Errors tripled [e1]." and result.public[-1]["references"] == ["e1"]
    assert "signup errors x3" in model.calls[1].messages[-1].content
    assert "search: Search the analytics warehouse." in model.calls[0].messages[-1].content


# -- events ---------------------------------------------------------------------------------------
async def test_events_subscription_stream_and_async_callbacks() -> None:
    def make() -> Team:
        return Team.blackboard(
            agents={"a": Agent("x", model=ScriptedModel(["hello"], cycle=True))}, max_rounds=2, clock=ticking_clock()
        )

    team = make()
    subscription = team.events()
    got: list[RunEvent] = []

    async def cb(event: RunEvent) -> None:
        await asyncio.sleep(0)
        got.append(event)

    result = await team.run("task", on_event=cb)
    via_iterator = [e.kind async for e in subscription]
    assert via_iterator == [e.kind for e in got]
    assert via_iterator[0] == "blackboard.started" and via_iterator[-1] == "blackboard.completed"
    assert {e.board_id for e in got} == {result.board_id}

    stream = make().stream("task")
    streamed = [e.kind async for e in stream]
    assert streamed == via_iterator
    assert stream.result is not None and stream.result.output == "hello"


def test_run_sync() -> None:
    team = Team.blackboard(agents={"a": Agent("x", model=ScriptedModel(["sync hello"]))}, max_rounds=1)
    result = team.run_sync("task")
    assert result.output == "sync hello" and str(result) == "sync hello"


async def test_sqlite_store_url_and_a_persisted_board(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    team = Team.blackboard(agents={"a": Agent("x", model=ScriptedModel(["persisted"]))}, max_rounds=1, store=url)
    result = await team.run("task")
    store = await open_store(url)
    try:
        assert (await verify_log(store, result.board_id, revalidate=True)).ok
        info = await store.board_info(result.board_id)
        assert info.name == "blackboard" and info.status == "done"
    finally:
        await store.close()


async def test_views_are_bounded_and_stay_inside_the_read_contract(store: Store) -> None:
    long = [f"contribution {i} " * 20 for i in range(5)]
    note = json.dumps({"content": "a public remark", "note": "SECRET PLAN OF A"})
    model_a = ScriptedModel([note, *long[:2]])
    model_b = ScriptedModel(long[2:])
    team = Team.blackboard(
        agents={"a": Agent("x", model=model_a), "b": Agent("y", model=model_b)},
        max_rounds=6,
        view_budget=900,
        store=store,
    )
    result = await team.run("task")
    assert [e["id"] for e in result.public] == [f"e{i}" for i in range(1, 8)]
    # b never sees a's scratchpad; a does.
    assert all("SECRET PLAN OF A" not in c.messages[-1].content for c in model_b.calls)
    assert "SECRET PLAN OF A" in model_a.calls[1].messages[-1].content
    # Late views cannot hold the whole board: entries are shortened or left out, and say so.
    last = model_b.calls[-1].messages[-1].content
    assert "(shortened)" in last or "earlier entries not shown" in last
    assert len(last) < sum(len(c) for c in long)
    # Without a decider the answer is still the last contribution, read from the committed board.
    assert result.output == long[4].strip()
    records = await store.read_records(result.board_id)
    views = {r.view_hash for r in records if r.kind == "proposal" and r.worker in ("a", "b")}
    assert len(views) == 6 and None not in views
