"""Issue 46: a model's reply never crashes a run, whatever role reads it.

Every role that reads a model's reply (a ``Team.blackboard`` agent, a typed agent, the team's
coordinator, the decider, an LLM worker on the Runner, the agenda coordinator, the Architect)
reads it through one bounded check (``slateboard.workers.parse.reply_fault``: size and nesting,
linear, no recursion). A reply over a bound is never decoded: a worker proposes it as it is and
the kernel rejects it at stage ``parse`` naming the bound; a coordinator falls back with the
bound as its reason; the Architect lists it as the attempt's issue. Before the fix a reply
nested 5,000 deep raised ``RecursionError`` out of ``team.run()``.

Also: the ``scripted:`` model string of one 200 KB reply took 79 s to resolve, because the URL
scan of ``register_url_secrets`` backtracked over every start in a long run of letters; its
linear replacement finds exactly what the regular expression found (the hypothesis test).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from team_testkit import Events

from slateboard.architect import Architect, ArchitectError
from slateboard.kernel import Kernel, Proposal
from slateboard.kernel.jsonvalue import REPLY_LIMITS
from slateboard.models import ScriptedModel
from slateboard.redaction import _urls_in
from slateboard.scheduling.coordinator import parse_json_object
from slateboard.stores import open_store
from slateboard.team import Agent, Team
from slateboard.vocabulary import PROPOSAL_KIND, TEAM_NO_CONTRIBUTOR
from slateboard.workers.parse import parse_reply, parse_value, reply_fault

MIB = 1 << 20


def deep(n: int, opener: str = "[") -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return opener * n + ("1" if opener != "[" else "") + closer * n


# Over a bound: nesting past any limit, or more bytes than a reply may have.
OVER_BOUND = st.one_of(
    st.builds(deep, st.integers(300, 6000), st.sampled_from(["[", '{"a":'])),
    st.builds(lambda n, pre: pre + deep(n), st.integers(300, 3000), st.sampled_from(["", "Sure! ", "```json\n"])),
)
# Within the bounds but hostile: the kernel (or the entry's schema) decides, nothing raises.
HOSTILE = st.one_of(
    st.sampled_from(
        [
            '{"a": NaN}',
            '{"a": Infinity, "b": -Infinity}',
            '{"a": 1, "a": 2}',
            '"\\ud800"',
            '{"x": "\\udc00\\ud800"}',
            '"\\u00"',
            "[1, 2,",
            "\udcff lone surrogate in the text",
        ]
    ),
    st.builds(lambda n: "[" + ",".join(["1"] * n) + "]", st.integers(1, 50_000)),
    st.text(max_size=200),
)

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def bound_named(reason: str | None) -> bool:
    return reason is not None and ("nests deeper than" in reason or "over the limit of" in reason)


async def team_records(team: Team, task: str = "task") -> tuple[Any, list[Any], Events]:
    events = Events()
    team.on_event = events
    result = await team.run(task)
    store = team.store
    assert store is not None and not isinstance(store, str)
    return result, list(await store.read_records(result.board_id)), events


class Verdict(BaseModel):
    verdict: str


# -- the one bounded check --------------------------------------------------------------------
@given(reply=OVER_BOUND)
@settings(max_examples=40, deadline=None)
def test_reply_fault_names_the_bound_and_no_reader_recurses(reply: str) -> None:
    assert bound_named(reply_fault(reply))
    assert parse_json_object(reply) is None
    assert parse_reply(reply).how == "raw"
    assert parse_value(reply) == reply.strip()


def test_a_reply_over_the_size_bound_is_named_in_bytes() -> None:
    reply = json.dumps("x" * (10 * MIB))
    assert reply_fault(reply) == f"reply is {len(reply)} bytes, over the limit of {REPLY_LIMITS.max_bytes}"
    multibyte = "é" * (MIB // 2 + 1)  # half as many characters as bytes
    assert reply_fault(multibyte) == f"reply is {2 * len(multibyte)} bytes, over the limit of {MIB}"
    assert reply_fault("é" * (MIB // 2)) is None


# -- Team.blackboard: agent, typed agent, coordinator, decider ---------------------------------
@given(reply=OVER_BOUND)
@SETTINGS
async def test_an_agents_reply_over_a_bound_is_a_parse_rejection(reply: str) -> None:
    store = await open_store("memory://")
    team = Team.blackboard({"a": Agent(model=ScriptedModel([reply], cycle=True))}, max_rounds=2, store=store)
    _, records, _ = await team_records(team)
    mine = [r for r in records if r.worker == "a" and r.kind == PROPOSAL_KIND]
    assert mine and all(r.stage == "parse" and bound_named(r.reason) for r in mine)
    assert all(r.patch == reply for r in mine)  # the reply is in the log as it came
    await store.close()


@given(reply=OVER_BOUND)
@SETTINGS
async def test_a_typed_agents_reply_over_a_bound_is_a_parse_rejection(reply: str) -> None:
    store = await open_store("memory://")
    agent = Agent(model=ScriptedModel([reply], cycle=True), output_type=Verdict)
    team = Team.blackboard({"critic": agent}, max_rounds=2, store=store)
    _, records, _ = await team_records(team)
    mine = [r for r in records if r.worker == "critic" and r.kind == PROPOSAL_KIND]
    assert mine and all(r.stage == "parse" and bound_named(r.reason) for r in mine)
    await store.close()


@given(reply=OVER_BOUND)
@SETTINGS
async def test_a_coordinators_reply_over_a_bound_falls_back_naming_it(reply: str) -> None:
    store = await open_store("memory://")
    team = Team.blackboard(
        {"a": Agent(model=ScriptedModel(["a fine contribution"], cycle=True))},
        coordinator=Agent(model=ScriptedModel([reply], cycle=True)),
        max_rounds=2,
        store=store,
    )
    _, _, events = await team_records(team)
    reasons = [e["reason"] for e in events.of(TEAM_NO_CONTRIBUTOR)]
    assert reasons and all(bound_named(r) for r in reasons)
    await store.close()


@pytest.mark.parametrize("typed", [False, True])
@given(reply=OVER_BOUND)
@SETTINGS
async def test_a_deciders_reply_over_a_bound_is_a_parse_rejection(typed: bool, reply: str) -> None:
    store = await open_store("memory://")
    decider = Agent(model=ScriptedModel([reply], cycle=True), output_type=Verdict if typed else None)
    team = Team.blackboard(
        {"a": Agent(model=ScriptedModel(["a fine contribution"], cycle=True))},
        decider=decider,
        max_rounds=1,
        store=store,
    )
    _, records, _ = await team_records(team)
    decided = [r for r in records if r.worker == "__decider" and r.kind == PROPOSAL_KIND]
    assert decided and all(r.stage == "parse" and bound_named(r.reason) for r in decided)
    await store.close()


@given(reply=HOSTILE)
@SETTINGS
async def test_hostile_replies_within_the_bounds_never_escape_run(reply: str) -> None:
    store = await open_store("memory://")
    team = Team.blackboard(
        {
            "a": Agent(model=ScriptedModel([reply], cycle=True)),
            "critic": Agent(model=ScriptedModel([reply], cycle=True), output_type=Verdict),
        },
        coordinator=Agent(model=ScriptedModel([reply, json.dumps({"next_agent": "critic"})], cycle=True)),
        decider=Agent(model=ScriptedModel([reply], cycle=True), output_type=Verdict),
        max_rounds=3,
        store=store,
    )
    result, records, _ = await team_records(team)
    assert result.board_id
    for record in records:
        if record.worker == "critic" and record.stage is None:
            # accepted only as a value that fits the type: never NaN, a duplicate key or text
            assert "NaN" not in (record.patch or "") and "Infinity" not in (record.patch or "")
    await store.close()


@pytest.mark.slow
async def test_ten_megabytes_to_every_team_role_end_as_rejections() -> None:
    reply = json.dumps(["x" * (10 * MIB)])
    store = await open_store("memory://")
    team = Team.blackboard(
        {
            "a": Agent(model=ScriptedModel([reply], cycle=True)),
            "critic": Agent(model=ScriptedModel([reply], cycle=True), output_type=Verdict),
        },
        coordinator=Agent(model=ScriptedModel([reply, json.dumps({"next_agent": "a"})], cycle=True)),
        decider=Agent(model=ScriptedModel([reply], cycle=True)),
        max_rounds=2,
        store=store,
    )
    _, records, _ = await team_records(team)
    for worker in ("a", "__decider"):
        mine = [r for r in records if r.worker == worker and r.kind == PROPOSAL_KIND]
        assert mine and all(r.stage == "parse" and "over the limit of" in (r.reason or "") for r in mine)
    await store.close()


# -- the Runner's LLM worker with a typed output path ------------------------------------------
@given(reply=OVER_BOUND)
@settings(max_examples=20, deadline=None)
async def test_an_llm_workers_typed_reply_over_a_bound_is_a_parse_rejection(reply: str) -> None:
    from slateboard.blueprint import compile_blueprint
    from slateboard.views import kernel_view
    from slateboard.workers import LLMWorker

    bp = compile_blueprint(
        {
            "schema": {"type": "object", "properties": {"answer": {"type": "object"}}},
            "initial_state": {},
            "workers": {"w": {"reads": ["/answer"], "writes": ["/answer"], "output": "/answer"}},
        }
    )
    kernel = Kernel(bp)
    worker = LLMWorker(bp, "w", ScriptedModel([reply]), state=lambda: kernel.state)
    view = kernel_view(kernel, "w")
    decision = kernel.submit((await worker.propose(view)).to_proposal(view))
    assert decision.stage == "parse" and bound_named(decision.reason)
    assert kernel.submit(Proposal("w", reply)).stage == "parse"


# -- the Architect -------------------------------------------------------------------------------
@given(reply=OVER_BOUND)
@settings(max_examples=10, deadline=None)
async def test_the_architect_names_the_bound_as_the_attempts_issue(reply: str) -> None:
    with pytest.raises(ArchitectError) as caught:
        await Architect(ScriptedModel([reply]), max_repairs=0).design("Summarise a document.")
    issue = caught.value.attempts[0].issues[0].message
    assert issue.startswith("the reply was not read: ") and bound_named(issue)


# -- the scripted model string: linear URL scan ----------------------------------------------------
_OLD_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")


@given(st.text(alphabet="ab1+.-:/ @xX\n", max_size=80))
@settings(max_examples=400, deadline=None)
def test_the_linear_url_scan_finds_what_the_regular_expression_found(text: str) -> None:
    assert list(_urls_in(text)) == [m.group(0) for m in _OLD_URL.finditer(text)]


def test_a_long_scripted_reply_resolves_and_its_url_secret_is_still_found() -> None:
    from slateboard.models import resolve_model
    from slateboard.redaction import redact

    long = "x" * 200_000
    model = resolve_model("scripted:" + json.dumps([long + " see http://user:hunter2pass@host/v1"]))
    assert model.name.startswith("scripted:")
    assert "hunter2pass" not in redact("leaked hunter2pass here")
