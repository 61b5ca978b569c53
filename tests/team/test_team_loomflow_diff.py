"""Differential tests: loomflow 0.20.0's ``Team.blackboard`` (seed 001) and ours on the same
scripted replies.

Each case feeds the same coordinator, agent and decider replies to both and compares the public
board (author, kind, content, in order), the output and the ``blackboard.*`` event names; where
slateboard differs on purpose, the test asserts the documented difference (README, "Coming from
loomflow"). loomflow's board is read by recording the ``Blackboard`` its architecture creates.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from team_testkit import decision

from slateboard.models import ModelUnavailable, ScriptedModel
from slateboard.team import Agent, Team
from slateboard.team._compat import UnsupportedOption, output_token_limit

lbb = pytest.importorskip(
    "loomflow.architecture.blackboard", reason="loomflow is not installed (pip install 'slateboard[peers]')"
)

PROMPT = "Investigate why retention dropped in March."
Reply = str | BaseException


@dataclass
class Script:
    """The replies of every role; ``coordinator``/``decider`` None: the role is absent."""

    agents: dict[str, list[Reply]]
    coordinator: list[Reply] | None = None
    decider: list[Reply] | None = None
    max_rounds: int = 10
    cycle: bool = False


@dataclass
class Outcome:
    entries: list[tuple[str, str, str]]
    output: str | None
    events: list[str]
    error: BaseException | None = None
    max_tokens: list[int | None] = field(default_factory=list)
    result: Any = None
    data: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _replies(replies: list[Reply], cycle: bool) -> Iterator[Reply]:
    return itertools.cycle(replies) if cycle else iter(replies)


# -- loomflow -------------------------------------------------------------------------------------
class LoomModel:
    """A loomflow ``Model`` answering with the next scripted reply (an exception is raised)."""

    name = "diff-script"

    def __init__(self, replies: list[Reply], cycle: bool = False) -> None:
        self.replies = _replies(replies, cycle)
        self.max_tokens: list[int | None] = []

    async def complete(self, messages: list[Any], **kw: Any) -> tuple[str, list[Any], Any, str]:
        from loomflow.core.types import Usage as LoomUsage

        self.max_tokens.append(kw.get("max_tokens"))
        reply = next(self.replies)
        if isinstance(reply, BaseException):
            raise reply
        return reply, [], LoomUsage(input_tokens=3, output_tokens=2), "stop"

    async def stream(self, messages: list[Any], **kw: Any) -> AsyncIterator[Any]:
        from loomflow.core.types import ModelChunk

        text, _, usage, reason = await self.complete(messages, **kw)
        yield ModelChunk(kind="text", text=text)
        yield ModelChunk(kind="finish", finish_reason=reason, usage=usage)


@pytest.fixture
def loom_boards(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ``Blackboard`` loomflow's architecture creates, recorded."""
    boards: list[Any] = []

    class Recording(lbb.Blackboard):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            boards.append(self)

    monkeypatch.setattr(lbb, "Blackboard", Recording)
    return boards


async def run_loomflow(script: Script, boards: list[Any], **extra: Any) -> Outcome:
    from loomflow import Agent as LoomAgent
    from loomflow.team import Team as LoomTeam

    models = {n: LoomModel(r, script.cycle) for n, r in script.agents.items()}
    team = LoomTeam.blackboard(
        {n: LoomAgent(f"{n} role", model=m) for n, m in models.items()},
        coordinator=LoomAgent("Pick", model=LoomModel(script.coordinator, script.cycle))
        if script.coordinator is not None
        else None,
        decider=LoomAgent("Decide", model=LoomModel(script.decider)) if script.decider is not None else None,
        model=LoomModel([]),
        max_rounds=script.max_rounds,
        **extra,
    )
    events: list[str] = []

    async def emit(event: Any) -> None:
        name = event.payload.get("name") if isinstance(event.payload, dict) else None
        if isinstance(name, str) and name.startswith(("blackboard.", "budget.")):
            events.append(name)

    error: BaseException | None = None
    output: str | None = None
    result: Any = None
    try:
        result = await team.run(PROMPT, emit=emit)
        output = result.output
    except Exception as exc:
        error = exc
    board = boards[-1]
    entries = [(e.author, e.kind, e.content) for e in board.public]
    tokens = [t for m in models.values() for t in m.max_tokens]
    return Outcome(entries, output, events, error, tokens, result)


# -- slateboard -----------------------------------------------------------------------------------
def scripted(replies: list[Reply], cycle: bool = False) -> ScriptedModel:
    def raiser(exc: BaseException) -> Any:
        def answer(messages: Any) -> str:
            raise exc

        return answer

    return ScriptedModel([raiser(r) if isinstance(r, BaseException) else r for r in replies], cycle=cycle)


async def run_slateboard(script: Script, **extra: Any) -> Outcome:
    models = {n: scripted(r, script.cycle) for n, r in script.agents.items()}
    events: list[str] = []
    data: list[tuple[str, dict[str, Any]]] = []

    def record(event: Any) -> None:
        events.append(event.kind)
        data.append((event.kind, dict(event.data)))

    team = Team.blackboard(
        {n: Agent(f"{n} role", model=m) for n, m in models.items()},
        coordinator=Agent("Pick", model=scripted(script.coordinator, script.cycle))
        if script.coordinator is not None
        else None,
        decider=Agent("Decide", model=scripted(script.decider)) if script.decider is not None else None,
        max_rounds=script.max_rounds,
        on_event=record,
        **extra,
    )
    result = await team.run(PROMPT)
    entries = [(str(e["author"]), str(e["kind"]), str(e["content"])) for e in result.public]
    tokens: list[int | None] = [c.max_tokens for m in models.values() for c in m.calls]
    return Outcome(entries, result.output, events, None, tokens, result, data)


# -- the same on both -----------------------------------------------------------------------------
def pick(agent: str | None = None, instruction: str | None = None) -> str:
    return decision(agent=agent, instruction=instruction)


STOP = decision(terminate=True)

SAME: dict[str, Script] = {
    "happy path": Script({"a": ["A1"], "b": ["B1"]}, [pick("a", "Start."), pick("b"), STOP], ["final answer"]),
    "fenced decisions": Script(
        {"a": ["A1"], "b": ["B1"]},
        ["```json\n" + pick("a") + "\n```", "```\n" + pick("b") + "\n```", "```json\n" + STOP + "\n```"],
        ["final"],
    ),
    "prose around the decision": Script(
        {"a": ["A1"]}, ["Let me think. Next: " + pick("a") + " That is my choice.", "Done: " + STOP], ["final"]
    ),
    "unreadable decision: no contributor": Script({"a": ["A1"]}, ["I am not sure who should go.", pick("a"), STOP]),
    "null-ish next_agent": Script(
        {"a": ["A1"]}, [json.dumps({"terminate": False, "next_agent": "none"}), pick("a"), STOP], ["final"]
    ),
    "string booleans and padded names": Script(
        {"a": ["A1", "A2"]},
        [
            json.dumps({"terminate": "false", "next_agent": " a ", "instruction": None}),
            json.dumps({"terminate": "no", "next_agent": "a"}),
            json.dumps({"terminate": "yes"}),
        ],
        ["final"],
    ),
    "unknown agent": Script({"a": ["A1"]}, [pick("nobody"), pick("a"), STOP], ["final"]),
    "round-robin": Script({"a": ["A1", "A2"], "b": ["B1"]}, None, ["final"], max_rounds=3),
    "max_rounds": Script({"a": ["again"]}, [pick("a")], ["final"], max_rounds=3, cycle=True),
    "decider fallback: last contribution": Script({"a": ["A1"], "b": ["B1"]}, [pick("a"), pick("b"), STOP]),
    "decider fallback: empty board": Script({"a": ["never"]}, [STOP]),
    "round-robin without decider": Script({"a": ["A1"], "b": ["B1"]}, None, None, max_rounds=2),
}


@pytest.mark.parametrize("name", list(SAME))
async def test_same_board_output_and_events(name: str, loom_boards: list[Any]) -> None:
    script = SAME[name]
    theirs = await run_loomflow(script, loom_boards)
    ours = await run_slateboard(script)
    assert theirs.error is None
    assert ours.entries == theirs.entries
    assert ours.output == theirs.output
    assert ours.events == theirs.events
    # What loomflow's RunResult users read is there, with the same meaning.
    assert ours.result.value == theirs.result.value
    assert ours.result.turns == theirs.result.turns
    for attribute in ("tokens_in", "tokens_out", "run_id", "started_at", "finished_at", "interrupted"):
        assert hasattr(theirs.result, attribute) and hasattr(ours.result, attribute)


async def test_the_cases_cover_loomflows_seven_event_names(loom_boards: list[Any]) -> None:
    seen: set[str] = set()
    for script in SAME.values():
        seen.update((await run_loomflow(script, loom_boards)).events)
    assert seen == {
        "blackboard.started",
        "blackboard.coordinator_decided",
        "blackboard.no_contributor",
        "blackboard.unknown_agent",
        "blackboard.invoking",
        "blackboard.contribution",
        "blackboard.completed",
    }


def test_the_same_construction_errors(loom_boards: list[Any]) -> None:
    from loomflow import Agent as LoomAgent
    from loomflow.team import Team as LoomTeam

    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "Blackboard requires at least one agent"),
        ({"max_rounds": 0}, "max_rounds"),
    ]
    for kwargs, message in cases:
        agents: dict[str, Any] = {} if not kwargs else {"a": LoomAgent("x", model=LoomModel([]))}
        with pytest.raises(ValueError, match=message):
            LoomTeam.blackboard(agents, model=LoomModel([]), **kwargs)
        ours: dict[str, Agent] = {} if not kwargs else {"a": Agent("x", model=ScriptedModel(["x"]))}
        with pytest.raises(ValueError, match=message):
            Team.blackboard(ours, **kwargs)


# -- documented differences -----------------------------------------------------------------------
async def test_provider_error_of_an_agent(loom_boards: list[Any]) -> None:
    """loomflow lets the provider's exception end the run; slateboard rejects the contribution at
    stage ``model`` (``blackboard.rejected``) and plays on."""
    script = Script({"a": [ModelUnavailable("m", "provider down"), "A2"]}, [pick("a"), pick("a"), STOP], ["final"])
    theirs = await run_loomflow(script, loom_boards)
    ours = await run_slateboard(script)
    assert isinstance(theirs.error, ModelUnavailable) and theirs.output is None
    assert ours.output == "final" and ours.entries[1:] == [("a", "contribution", "A2")]
    assert "blackboard.rejected" in ours.events and "blackboard.rejected" not in theirs.events
    rejected = [d for kind, d in ours.data if kind == "blackboard.rejected"]
    assert [r["stage"] for r in rejected] == ["model"] and "provider down" in str(rejected[0]["error"])


async def test_provider_error_of_the_decider(loom_boards: list[Any]) -> None:
    """loomflow raises; slateboard answers with the documented fallback and marks the result."""
    script = Script({"a": ["A1"]}, [pick("a"), STOP], [ModelUnavailable("m", "decider down")])
    theirs = await run_loomflow(script, loom_boards)
    ours = await run_slateboard(script)
    assert isinstance(theirs.error, ModelUnavailable)
    assert ours.output == "A1" and ours.result.decider_failed and "decider down" in ours.result.decider_error
    assert ours.events[-2:] == ["blackboard.decider_failed", "blackboard.completed"]


async def test_contributions_are_stripped_and_json_replies_unwrapped(loom_boards: list[Any]) -> None:
    """loomflow posts the reply as it is; slateboard strips surrounding whitespace and reads a
    JSON object with ``content`` as a structured contribution (``kind``, ``references``)."""
    reply = json.dumps({"content": "The answer is 42.", "kind": "answer"})
    script = Script({"a": ["  padded  ", reply]}, [pick("a"), pick("a"), STOP])
    theirs = await run_loomflow(script, loom_boards)
    ours = await run_slateboard(script)
    assert theirs.entries[1:] == [("a", "contribution", "  padded  "), ("a", "contribution", reply)]
    assert ours.entries[1:] == [("a", "contribution", "padded"), ("a", "answer", "The answer is 42.")]
    assert theirs.output == reply and ours.output == "The answer is 42."


async def test_max_tokens_is_the_providers_maximum_not_none(loom_boards: list[Any]) -> None:
    """loomflow sends no max_tokens (None); slateboard's Model protocol needs a number, so it
    sends the provider's own maximum output, never a lower framework default."""
    script = Script({"a": ["A1"]}, [pick("a"), STOP])
    theirs = await run_loomflow(script, loom_boards)
    ours = await run_slateboard(script)
    assert theirs.max_tokens == [None]
    assert ours.max_tokens == [output_token_limit(ScriptedModel(["x"]))] and (ours.max_tokens[0] or 0) > 512


async def test_budget_interruption(loom_boards: list[Any]) -> None:
    """A budget object as loomflow writes them works in both. When it blocks, loomflow answers
    with the fallback of the board so far; slateboard ends ``interrupted`` with no answer (no
    decider ran), and says why."""
    from loomflow.core.types import BudgetStatus as LoomStatus

    class StepBudget:
        def __init__(self) -> None:
            self.asked = 0

        async def allows_step(self, *, user_id: str | None = None) -> Any:
            self.asked += 1
            return LoomStatus(state="blocked", reason="step cap") if self.asked > 2 else LoomStatus(state="ok")

        async def consume(self, **kw: Any) -> None:
            return None

    script = Script({"a": ["A1", "A2", "A3"]}, [pick("a")], ["final"], cycle=True, max_rounds=5)
    theirs = await run_loomflow(script, loom_boards, budget=StepBudget())
    ours = await run_slateboard(script, budget=StepBudget())
    assert theirs.entries == ours.entries and len(ours.entries) == 3
    assert theirs.output == "A2" and ours.output == ""
    assert ours.result.interrupted and ours.result.end_reason == "budget:step cap"


def test_construction_differences() -> None:
    """loomflow accepts agent names of any length and its own keywords; slateboard refuses, at
    construction, names its board cannot hold and keywords it would ignore."""
    from loomflow import Agent as LoomAgent
    from loomflow.team import Team as LoomTeam

    long_name = "n" * 201
    LoomTeam.blackboard({long_name: LoomAgent("x", model=LoomModel([]))}, model=LoomModel([]))
    with pytest.raises(ValueError, match="201 characters"):
        Team.blackboard({long_name: Agent("x", model=ScriptedModel(["x"]))})
    LoomAgent("x", model=LoomModel([]), memory=None, hooks=None)
    with pytest.raises(UnsupportedOption, match="memory"):
        Agent("x", memory=None)
