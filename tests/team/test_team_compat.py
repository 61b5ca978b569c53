"""What a loomflow user writes: construction-time checks, refused keywords with their
equivalents, the loomflow fields of TeamResult, seed-style budgets, max_tokens, provider errors."""

from __future__ import annotations

from typing import Any

import pytest
from team_testkit import Events, decision

from slateboard.errors import InvalidInput, SlateboardError, UsageError
from slateboard.models import ModelConfigError, ModelUnavailable, ScriptedModel
from slateboard.models.anthropic import AnthropicModel
from slateboard.models.openai_compat import OpenAICompatModel
from slateboard.team import Agent, Team
from slateboard.team._board import MAX_AGENT_NAME
from slateboard.team._compat import UnsupportedOption, output_token_limit


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-anthropic")
    monkeypatch.setenv("GEMINI_API_KEY", "k-gemini")


# -- models at construction -----------------------------------------------------------------------
def test_bare_and_litellm_names_resolve_at_construction(keys: None) -> None:
    team = Team.blackboard(
        {
            "a": Agent("x", model="claude-opus-4-7"),
            "b": Agent("y", model="gpt-4o"),
            "c": Agent("z", model="o3-mini"),
            "d": Agent("w", model="gemini-2.0-flash"),
            "e": Agent("v", model="anthropic/claude-sonnet-4-5"),
        },
        model="gpt-4o-mini",
    )
    models = {n: team.model_for(a) for n, a in team.agents.items()}
    assert isinstance(models["a"], AnthropicModel) and models["a"].model_id == "claude-opus-4-7"
    assert isinstance(models["b"], OpenAICompatModel) and models["b"].model_id == "gpt-4o"
    assert isinstance(models["c"], OpenAICompatModel) and models["c"].model_id == "o3-mini"
    assert isinstance(models["d"], OpenAICompatModel) and "generativelanguage" in models["d"].base_url
    assert isinstance(models["e"], AnthropicModel) and models["e"].model_id == "claude-sonnet-4-5"


@pytest.mark.parametrize("bad", ["mistral-large", "foo:bar", "my model", "llama3"])
def test_an_unknown_model_fails_at_agent_construction_listing_the_forms(bad: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        Agent("x", model=bad)
    message = str(info.value)
    assert bad in message and "claude-*" in message and "PROVIDER/MODEL" in message
    assert isinstance(info.value, SlateboardError)


def test_an_unknown_team_model_fails_at_construction() -> None:
    with pytest.raises(ModelConfigError, match="accepted"):
        Team.blackboard({"a": Agent("x")}, model="not-a-model")
    with pytest.raises(TypeError, match="model"):
        Agent("x", model=42)  # type: ignore[arg-type]


def test_a_missing_key_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent("x", model="gpt-4o")  # the form is fine: no key needed to describe an agent
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        Team.blackboard({"a": agent})


# -- calling conventions and argument checks ------------------------------------------------------
def test_agents_positionally_as_in_the_seed() -> None:
    team = Team.blackboard({"a": Agent("x", model=ScriptedModel(["hi"]))}, max_rounds=1)
    assert list(team.agents) == ["a"]
    assert Team({"a": Agent("x", model=ScriptedModel(["hi"]))}).max_rounds == 10


@pytest.mark.parametrize(
    ("keyword", "equivalent"),
    [
        ("memory", "board"),
        ("hooks", "on_event"),
        ("budget", "Team.blackboard"),
        ("max_turns", "max_tool_calls"),
        ("telemetry", "slateboard.telemetry"),
        ("output_schema", "blueprint"),
        ("runtime", "store="),
    ],
)
def test_loomflow_agent_keywords_are_refused_with_the_equivalent(keyword: str, equivalent: str) -> None:
    with pytest.raises(UnsupportedOption) as info:
        Agent("x", **{keyword: object()})  # type: ignore[arg-type]  # an unsupported keyword on purpose
    assert f"{keyword}=" in str(info.value) and equivalent in str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, UsageError)


@pytest.mark.parametrize(
    ("keyword", "equivalent"),
    [
        ("instructions", "coordinator_instructions"),
        ("tools", "each Agent"),
        ("memory", "board"),
        ("hooks", "on_event"),
        ("max_turns", "max_rounds"),
        ("persistent_subagents", "stateless"),
    ],
)
def test_loomflow_team_keywords_are_refused_with_the_equivalent(keyword: str, equivalent: str) -> None:
    with pytest.raises(UnsupportedOption) as info:
        Team.blackboard({"a": Agent("x", model=ScriptedModel(["hi"]))}, **{keyword: "x"})  # type: ignore[arg-type]  # on purpose
    assert f"{keyword}=" in str(info.value) and equivalent in str(info.value)


def test_unknown_keywords_are_named() -> None:
    with pytest.raises(TypeError, match="unexpected keyword colour="):
        Agent("x", colour="blue")


def test_supported_loomflow_agent_keywords_are_honoured() -> None:
    def lookup(q: str) -> str:
        """Look something up."""
        return q

    agent = Agent("x", model=ScriptedModel(["hi"]), tools=lookup, timeout=5, name="researcher")
    assert [t.name for t in agent.tool_list] == ["lookup"] and agent.timeout == 5 and agent.name == "researcher"
    assert Agent("x", tools=None).tool_list == ()


def test_agent_names_over_the_limit_fail_at_construction() -> None:
    ok = "a" * MAX_AGENT_NAME
    Team.blackboard({ok: Agent("x", model=ScriptedModel(["hi"]))})
    with pytest.raises(ValueError, match="201 characters"):
        Team.blackboard({ok + "b": Agent("x", model=ScriptedModel(["hi"]))})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_tokens": 0}, ValueError, "max_tokens"),
        ({"max_tokens": "many"}, ValueError, "max_tokens"),
        ({"temperature": 3.0}, ValueError, "temperature"),
        ({"max_tool_calls": -1}, ValueError, "max_tool_calls"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"tools": "search"}, TypeError, "tools"),
        ({"name": 3}, TypeError, "name"),
    ],
)
def test_agent_arguments_are_checked(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Agent("x", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_rounds": "3"}, TypeError, "max_rounds"),
        ({"coordinator": "boss"}, TypeError, "coordinator"),
        ({"decider": object()}, TypeError, "decider"),
        ({"view_budget": 0}, ValueError, "view_budget"),
        ({"store": 3}, TypeError, "store"),
        ({"on_event": "print"}, TypeError, "on_event"),
        ({"clock": 1}, TypeError, "clock"),
        ({"coordinator_instructions": 5}, TypeError, "coordinator_instructions"),
        ({"name": ""}, ValueError, "name"),
        ({"budget": object()}, TypeError, "allows_step"),
    ],
)
def test_team_arguments_are_checked(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Team.blackboard({"a": Agent("x", model=ScriptedModel(["hi"]))}, **kwargs)
    with pytest.raises(TypeError, match="mapping"):
        Team.blackboard([Agent("x")])  # type: ignore[arg-type]


def test_every_problem_with_the_team_options_is_reported_at_once() -> None:
    # Three wrong keywords: one error names all three, and it is both kinds of error a single
    # problem would raise (a TypeError and an InvalidInput), so either except clause catches it.
    agents = {"a": Agent("x", model=ScriptedModel(["hi"]))}
    with pytest.raises(TypeError) as caught:
        Team.blackboard(agents, max_rounds="3", view_budget=0, on_event="print")  # type: ignore[arg-type]
    message = str(caught.value)
    assert isinstance(caught.value, InvalidInput) and message.startswith("Team.blackboard: 3 problems: ")
    assert "max_rounds must be an integer" in message and "view_budget must be a positive" in message
    assert "on_event must be callable" in message
    # One problem is raised as itself, unchanged.
    with pytest.raises(InvalidInput, match=r"^max_rounds must be >= 1$") as single:
        Team.blackboard(agents, max_rounds=0)
    assert not isinstance(single.value, TypeError)
    # A problem whose premise failed (agents is not a mapping) hides the ones built on it.
    with pytest.raises(TypeError, match=r"^agents must be a mapping"):
        Team.blackboard([Agent("x")], untrusted=["a"])  # type: ignore[arg-type]


# -- the result -----------------------------------------------------------------------------------
async def test_team_result_carries_what_loomflow_users_read() -> None:
    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["first", "second"]))},
        coordinator=Agent("c", model=ScriptedModel([decision(agent="a"), decision(agent="a"), decision(True)])),
        decider=Agent("d", model=ScriptedModel(["the answer"])),
    )
    result = await team.run("task")
    assert result.value == result.output == "the answer"
    assert result.run_id == result.board_id
    assert result.turns == 3 + 2 + 1  # coordinator x3, agent x2, decider
    assert result.tokens_in == sum(u.tokens_in for u in result.usage.values()) > 0
    assert result.tokens_out == sum(u.tokens_out for u in result.usage.values()) > 0
    assert result.tokens_in + result.tokens_out == result.total_tokens
    assert result.started_at is not None and result.finished_at is not None and result.duration is not None
    assert result.started_at <= result.finished_at
    assert not result.decider_failed and result.decider_error is None


async def test_a_failed_decider_is_marked_on_the_result() -> None:
    def boom(messages: Any) -> str:
        raise ModelUnavailable("scripted", "decider offline")

    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["only contribution"]))},
        decider=Agent("d", model=ScriptedModel([boom])),
        max_rounds=1,
    )
    result = await team.run("task")
    assert result.decider_failed and "decider offline" in str(result.decider_error)
    assert result.output == "only contribution"  # the documented fallback


# -- budgets written for the seed -----------------------------------------------------------------
class SeedStatus:
    def __init__(self, blocked: bool, reason: str | None = None) -> None:
        self.blocked = blocked
        self.reason = reason


class SeedBudget:
    """A budget as loomflow's protocol has it: ``allows_step(*, user_id=None)``."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.asked = 0

    async def allows_step(self, *, user_id: str | None = None) -> SeedStatus:
        self.asked += 1
        return SeedStatus(self.asked > self.steps, "out of steps" if self.asked > self.steps else None)


class SyncSeedBudget:
    def allows_step(self) -> SeedStatus:
        return SeedStatus(True, None)


async def test_a_seed_budget_without_arguments_works() -> None:
    budget = SeedBudget(steps=2)
    events = Events()
    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["c"], cycle=True))}, budget=budget, max_rounds=5, on_event=events
    )
    result = await team.run("task")
    assert budget.asked == 3 and result.rounds == 2
    assert result.interrupted and result.end_reason == "budget:out of steps"
    assert events.of("budget.exceeded")[0]["reason"] == "out of steps"
    blocked = await Team.blackboard({"a": Agent("x", model=ScriptedModel(["c"]))}, budget=SyncSeedBudget()).run("t")
    assert blocked.interrupted and blocked.rounds == 0 and blocked.end_reason == "budget:blocked"


# -- max_tokens -----------------------------------------------------------------------------------
async def test_no_512_token_default_cap() -> None:
    model = ScriptedModel(["hi", "there"])
    await Team.blackboard({"a": Agent("x", model=model)}, max_rounds=1).run("task")
    assert model.calls[0].max_tokens == output_token_limit(model) > 512
    capped = ScriptedModel(["hi"])
    await Team.blackboard({"a": Agent("x", model=capped, max_tokens=64)}, max_rounds=1).run("task")
    assert capped.calls[0].max_tokens == 64


def test_the_uncapped_limit_is_the_providers_own(keys: None) -> None:
    from slateboard.models import resolve_model

    assert output_token_limit(resolve_model("claude-opus-4-7")) == 32000
    assert output_token_limit(resolve_model("claude-3-5-haiku-latest")) == 8192
    assert output_token_limit(resolve_model("gpt-4o")) == 16384
    assert output_token_limit(resolve_model("o3")) == 100000


def test_an_in_process_model_gets_a_paragraph_not_its_whole_context() -> None:
    """Issue 28: agents on the local model defaulted to max_tokens = the whole 4,096 context,
    and the README's team took 12 minutes; the default now leaves room for the prompt."""
    from slateboard.team._compat import LOCAL_OUTPUT_TOKENS

    class InProcess(ScriptedModel):
        n_ctx = 4096

    assert output_token_limit(InProcess(["x"])) == LOCAL_OUTPUT_TOKENS == 256

    class Tiny(ScriptedModel):
        n_ctx = 512

    assert output_token_limit(Tiny(["x"])) == 128


# -- provider errors ------------------------------------------------------------------------------
async def test_after_a_provider_error_the_agent_is_told_what_happened() -> None:
    def boom(messages: Any) -> str:
        raise ModelUnavailable("scripted", "connection refused")

    model = ScriptedModel([boom, "second try"])
    events = Events()
    team = Team.blackboard({"a": Agent("x", model=model)}, max_rounds=2, on_event=events)
    result = await team.run("task")
    rejected = events.of("blackboard.rejected")
    assert [r["stage"] for r in rejected] == ["model"]
    second_prompt = str(model.calls[1].messages[-1].content)
    assert "provider error" in second_prompt and "connection refused" in second_prompt
    assert "not valid JSON" not in second_prompt
    assert [e["content"] for e in result.public[1:]] == ["second try"]


# -- the README -----------------------------------------------------------------------------------
def test_the_readme_names_only_real_events() -> None:
    import re
    from pathlib import Path

    from slateboard.team import BLACKBOARD_EVENTS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:blackboard|budget)\.[a-z_]+)`", readme))
    assert named, "the README names no team events"
    assert named <= set(BLACKBOARD_EVENTS)
    assert set(BLACKBOARD_EVENTS) <= named  # every event is documented
    assert "round_started" not in readme and "agent_selected" not in readme


async def test_loomflow_run_keywords_are_refused_before_anything_runs() -> None:
    model = ScriptedModel(["never"])
    team = Team.blackboard({"a": Agent("x", model=model)})
    with pytest.raises(UnsupportedOption, match=r"emit= .*on_event="):
        await team.run("task", emit=print)
    with pytest.raises(UnsupportedOption, match="user_id="):
        await team.run("task", user_id="u1")
    assert model.calls == []


def test_agents_copy_with_dataclasses_replace() -> None:
    import dataclasses

    def lookup(q: str) -> str:
        """Look something up."""
        return q

    agent = Agent("x", model='scripted:["hi"]', tools=[lookup], max_tokens=64)
    copy = dataclasses.replace(agent, instructions="y")
    assert copy.instructions == "y" and copy.max_tokens == 64 and [t.name for t in copy.tool_list] == ["lookup"]
    with pytest.raises(ModelConfigError):
        dataclasses.replace(agent, model="nonsense-model")


def test_the_longest_matching_model_family_wins(keys: None) -> None:
    from slateboard.models import resolve_model

    assert output_token_limit(resolve_model("gpt-4o-2024-05-13")) == 4096
    assert output_token_limit(resolve_model("gpt-4o-mini")) == 16384
    assert output_token_limit(resolve_model("claude-opus-4-5")) == 64000
    assert output_token_limit(resolve_model("claude-opus-4-1")) == 32000
    assert output_token_limit(resolve_model("o1-preview")) == 32768


def test_run_sync_refuses_loomflow_keywords_too() -> None:
    model = ScriptedModel(["only"])
    team = Team.blackboard({"a": Agent("x", model=model)}, max_rounds=1)
    with pytest.raises(UnsupportedOption, match="session_id="):
        team.run_sync("task", session_id="s1")
    assert model.calls == [] and team.run_sync("task").output == "only"
