"""Typed outputs on Team.blackboard (issue 30): ``Agent(output_type=T)`` for agents and the decider.

The type's JSON Schema is the board's schema where the value is written, so the kernel rejects a
reply that does not fit at stage ``schema``, the agent retries with that reason, the schema is
sent for constrained decoding, and the result holds instances; the log replays from itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from team_testkit import Events, LoopbackProvider, verify_log

from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.blueprint.output_type import OutputType
from slateboard.errors import InvalidInput
from slateboard.kernel import Kernel, Proposal
from slateboard.models import ScriptedModel
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.team import Agent, Team, blackboard_blueprint


class Verdict(BaseModel):
    verdict: Literal["approve", "reject"]
    reasons: list[str]
    confidence: float = Field(ge=0, le=1)


class Finding(BaseModel):
    claim: str
    verdict: Verdict


GOOD = {"verdict": "approve", "reasons": ["tests pass"], "confidence": 0.75}
BAD = {"verdict": "maybe", "reasons": []}


@pytest.fixture
async def store() -> Any:
    s = await open_store("memory://")
    yield s
    await s.close()


def typed_team(store: Store, decider: ScriptedModel, **agents: Agent) -> Team:
    return Team.blackboard(
        agents or {"analyst": Agent("Analyse the change.", model=ScriptedModel(["The change is small and tested."]))},
        decider=Agent("Decide.", model=decider, output_type=Verdict),
        max_rounds=1,
        store=store,
    )


async def test_the_decider_returns_a_verdict(store: Store) -> None:
    decider = ScriptedModel([json.dumps(GOOD)])
    result = await typed_team(store, decider).run("Approve the change?")
    assert isinstance(result.output, Verdict) and result.output == Verdict.model_validate(GOOD)
    assert result.output_as(Verdict).confidence == 0.75
    assert json.loads(result.value) == GOOD and str(result) == result.value
    assert not result.decider_failed
    # Constrained decoding: the model is sent the type's schema.
    assert decider.calls[0].json_schema == Verdict.model_json_schema()
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_an_invalid_reply_is_rejected_at_schema_and_retried_with_the_reason(store: Store) -> None:
    decider = ScriptedModel([json.dumps(BAD), "not json at all", json.dumps(GOOD)])
    events = Events()
    team = typed_team(store, decider)
    result = await team.run("Approve the change?", on_event=events)
    assert result.output == Verdict.model_validate(GOOD)
    records = [r for r in await store.read_records(result.board_id) if r.worker == "__decider"]
    assert [(r.outcome, r.stage) for r in records] == [
        ("rejected", "schema"),
        ("rejected", "schema"),
        ("accepted", None),
    ]
    # Each retry's prompt carries the kernel's reason for the previous reply.
    second = decider.calls[1].messages[-1].content
    assert "Your previous reply was refused" in second and '"maybe" is not one of' in second
    assert "confidence" in second
    third = decider.calls[2].messages[-1].content
    assert "/answer" in third and "is not of type" in third
    assert [e["stage"] for e in events.of("blackboard.rejected")] == ["schema", "schema"]
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_no_fitting_reply_leaves_no_output_and_says_why(store: Store) -> None:
    decider = ScriptedModel([json.dumps(BAD)], cycle=True)
    result = await typed_team(store, decider).run("Approve the change?")
    assert result.output is None and result.value == ""
    assert result.decider_failed and result.decider_error is not None and "schema" in result.decider_error
    state = result.state
    assert isinstance(state, dict) and "answer" not in state
    with pytest.raises(TypeError, match="not Verdict"):
        result.output_as(Verdict)
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_a_typed_agent_writes_instances_and_retries_within_its_turn(store: Store) -> None:
    finding = {"claim": "the change is safe", "verdict": GOOD}
    reviewer = ScriptedModel([json.dumps({"claim": "x", "verdict": BAD}), f"```json\n{json.dumps(finding)}\n```"])
    team = Team.blackboard(
        {"reviewer": Agent("Review.", model=reviewer, output_type=Finding)},
        decider=Agent("Decide.", model=ScriptedModel([json.dumps(GOOD)]), output_type=Verdict),
        max_rounds=1,
        store=store,
    )
    result = await team.run("Is the change safe?")
    assert result.outputs == {"reviewer": [Finding.model_validate(finding)]}
    assert reviewer.calls[0].json_schema == Finding.model_json_schema()
    assert '"maybe" is not one of' in reviewer.calls[1].messages[-1].content
    entry = result.public[-1]
    assert entry["author"] == "reviewer" and json.loads(entry["content"]) == finding
    records = [r for r in await store.read_records(result.board_id) if r.worker == "reviewer"]
    assert [(r.outcome, r.stage) for r in records] == [("rejected", "schema"), ("accepted", None)]
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_the_openai_compatible_provider_is_sent_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over real HTTP: the typed decider's request carries ``response_format`` with the type's
    JSON Schema (constrained decoding); the untyped agent's request carries none."""
    replies = iter(["The change is small and tested.", json.dumps(GOOD)])
    server = await LoopbackProvider("openai", lambda request: next(replies)).start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
        team = Team.blackboard(
            {"analyst": Agent("Analyse.")},
            decider=Agent("Decide.", output_type=Verdict),
            model="openai:gpt-4o-mini",
            max_rounds=1,
        )
        result = await team.run("Approve the change?")
    finally:
        await server.close()
    assert result.output == Verdict.model_validate(GOOD)
    agent_request, decider_request = server.requests
    assert "response_format" not in agent_request
    sent = decider_request["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["properties"]["verdict"]["enum"] == [
        "approve",
        "reject",
    ]


async def test_untyped_teams_keep_their_board() -> None:
    plain = Team.blackboard({"a": Agent("x", model=ScriptedModel(["y"]))})
    assert "outputs" not in plain.board_spec()["schema"]["properties"]
    assert plain.board_spec()["schema"]["properties"]["answer"] == {"type": ["string", "null"]}


class Opaque(BaseModel):
    call: Callable[[int], int]


@pytest.mark.parametrize(
    ("where", "build", "match"),
    [
        (
            "decider",
            lambda: Team.blackboard(
                {"a": Agent(model="scripted:[]")}, decider=Agent(model="scripted:[]", output_type=Opaque)
            ),
            r"decider/output_type: output_type Opaque cannot be expressed as a JSON Schema",
        ),
        (
            "agent",
            lambda: Team.blackboard({"critic": Agent(model="scripted:[]", output_type="Verdict")}),
            r"agents/critic/output_type: output_type must be a type",
        ),
    ],
)
def test_an_output_type_without_a_schema_fails_when_the_team_is_built(
    where: str, build: Callable[[], Team], match: str
) -> None:
    with pytest.raises(BlueprintError, match=match):
        build()


def test_the_coordinator_and_untrusted_agents_take_no_output_type() -> None:
    with pytest.raises(InvalidInput, match="coordinator cannot have an output_type"):
        Team.blackboard({"a": Agent(model="scripted:[]")}, coordinator=Agent(model="scripted:[]", output_type=Verdict))
    with pytest.raises(InvalidInput, match=r"untrusted agents \['a'\] cannot have an output_type"):
        Team.blackboard({"a": Agent(model="scripted:[]", output_type=Verdict)}, untrusted=["a"])


_KERNEL = Kernel(
    compile_blueprint(
        blackboard_blueprint(
            ["critic"],
            outputs={"critic": OutputType.of(Finding, "critic").schema},
            answer=OutputType.of(Finding, "decider").schema,
        )
    )
)

_verdicts = st.fixed_dictionaries(
    {
        "verdict": st.sampled_from(["approve", "reject", "maybe", 3]),
        "reasons": st.one_of(st.lists(st.text(max_size=5), max_size=2), st.just("x")),
        "confidence": st.one_of(st.floats(-1, 2, allow_nan=False), st.none()),
    }
)


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(value=st.fixed_dictionaries({"claim": st.one_of(st.text(max_size=5), st.integers()), "verdict": _verdicts}))
def test_the_kernel_accepts_exactly_what_the_type_accepts(value: dict[str, Any]) -> None:
    """The kernel's schema check at /answer is the type's: nested models ($defs embedded) and
    constraints included."""
    try:
        Finding.model_validate(value, strict=True)
        fits = True
    except ValueError:
        fits = False
    decision = _KERNEL.prepare(
        Proposal("__decider", [{"op": "add", "path": "/answer", "value": value}], viewed_version=_KERNEL.version)
    )
    assert (decision.record.outcome == "accepted") == fits, decision.record.reason
    _KERNEL.abort(decision)


async def test_typed_agents_in_parallel_rounds(store: Store) -> None:
    """A parallel round decides every agent's proposal (ids renumbered): the typed values are
    kept beside their entries, one per accepted turn."""
    first = {"claim": "a", "verdict": GOOD}
    second = {"claim": "b", "verdict": {**GOOD, "verdict": "approve"}}
    team = Team.blackboard(
        {
            "one": Agent(model=ScriptedModel([json.dumps(first)]), output_type=Finding),
            "two": Agent(model=ScriptedModel([json.dumps(second)]), output_type=Finding),
        },
        parallel=True,
        max_rounds=1,
        store=store,
    )
    result = await team.run("Review.")
    assert result.outputs == {"one": [Finding.model_validate(first)], "two": [Finding.model_validate(second)]}
    assert [e["id"] for e in result.public] == ["e1", "e2", "e3"]
    # No typed decider: the fallback answers with the last contribution's text.
    assert json.loads(result.output) == second and result.value == result.output
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_a_typed_run_resumes_to_the_same_result(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    team = Team.blackboard(
        {"analyst": Agent(model=ScriptedModel(["Fine."]))},
        decider=Agent(model=ScriptedModel([json.dumps(GOOD)]), output_type=Verdict),
        max_rounds=1,
        store=url,
    )
    result = await team.run("Approve?")
    again = await team.resume(result.board_id)
    assert again.output == result.output == Verdict.model_validate(GOOD)
    assert again.value == result.value
