"""LLM workers driven by scripted models: prompts, proposals the kernel accepts, failures that
become parse rejections, the tool loop, and the factory."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from workers_testkit import NOTES_BLUEPRINT, notes_blueprint, rich_blueprint

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.models import (
    Generation,
    GenerationUsage,
    Message,
    ModelBadResponse,
    ModelRequestError,
    ModelSchemaRefused,
    ModelTimeout,
    ScriptedModel,
)
from slateboard.views import build_view, kernel_view
from slateboard.workers import LLMWorker, Worker, WorkerConfigError, make_worker, make_workers, tool
from slateboard.workers.constrain import PATCH_KEY, proposal_schema
from slateboard.workers.prompt import build_messages, view_payload

NOTE = {"op": "add", "path": "/notes/-", "value": {"text": "Rayleigh scattering.", "author": "scribe"}}


def _user(messages: Sequence[Message]) -> str:
    return "\n".join(m.content for m in messages if m.role == "user")


# -- prompts -------------------------------------------------------------------------------------
def test_prompt_has_instruction_view_schema_ops_example_and_feedback() -> None:
    bp = notes_blueprint()
    kernel = Kernel(bp)
    bad = kernel.submit(Proposal("scribe", [{"op": "add", "path": "/notes/-", "value": {"text": ""}}]))
    assert bad.stage == "schema"
    view = kernel_view(kernel, "scribe", rejections=[bad.record])
    msgs = build_messages(bp, "scribe", view, feedback="the note was empty")
    system, user = msgs[0].content, msgs[1].content
    assert [m.role for m in msgs] == ["system", "user"]
    assert "Add one short note about the topic." in system
    assert "Allowed ops: add" in system
    assert "/notes/- (ops: add)" in system
    assert "RFC 6902" in system
    assert 'Example: {"patch":[{"op":"add","path":"/notes/-","value":VALUE}]}' in system
    assert "VALUE is your own value, valid for the schema of that path" in system
    shaped = build_messages(bp, "scribe", view, example_values=True)[0].content
    example = json.loads(shaped.split("Example: ", 1)[1].splitlines()[0])
    assert example == {PATCH_KEY: [{"op": "add", "path": "/notes/-", "value": {"text": "...", "author": "scribe"}}]}
    # The view as rendered, less its rejections: those are said once, in the feedback block.
    assert view.rejections and view_payload(view, constrained=False)[0] in user
    assert '"author":{"const":"scribe"}' in user  # the writable schema fragment, inside the view
    assert "the note was empty" in user
    assert "schema: " in user and bad.reason is not None and bad.reason in user  # from the view's rejections
    assert user.count(bad.reason) == 1  # never twice (it used to be in the view and in the feedback)
    assert build_messages(bp, "scribe", view, feedback="the note was empty") == msgs  # deterministic


def test_schema_is_restated_when_the_view_had_to_drop_it() -> None:
    bp = notes_blueprint()
    view = build_view(bp, "scribe", bp.initial_state(), 0, budget=40)
    assert not any("schema" in w for w in view.writable)
    system = build_messages(bp, "scribe", view)[0].content
    assert 'value schema: {"additionalProperties":false' in system


# -- proposals -----------------------------------------------------------------------------------
async def test_scripted_worker_proposal_is_accepted_with_the_contract_schema() -> None:
    bp = notes_blueprint()
    kernel = Kernel(bp)
    model = ScriptedModel(["Here:\n```json\n" + json.dumps({PATCH_KEY: [NOTE]}) + "\n```"])
    worker = make_worker(bp, "scribe", model=model, state=lambda: kernel.state)
    assert isinstance(worker, Worker) and isinstance(worker, LLMWorker)
    view = kernel_view(kernel, "scribe")
    reply = await worker.propose(view, {"op": "start", "path": ""})
    assert reply.patch == [NOTE]
    assert reply.diagnostics["decoding"] == "contract" and reply.diagnostics["parse"] == "fenced+wrapped"
    assert reply.usage.component == "worker" and reply.usage.tokens_in > 0 and reply.usage.tokens_out > 0
    sent = model.calls[0].json_schema
    expected = proposal_schema(bp, "scribe", kernel.state, string_max_length=160, json_safe_strings=True)
    assert expected is not None and sent == expected.schema
    decision = kernel.submit(reply.to_proposal(view, invocation="i1"))
    assert decision.accepted, decision.reason
    rec = decision.record
    assert rec.view_hash == view.hash and rec.invocation == "i1" and rec.usage == reply.usage
    assert rec.meta["model"] == "scripted" and rec.meta["viewed_version"] == 0


async def test_without_a_state_source_the_view_sketch_is_used() -> None:
    bp = rich_blueprint()
    state = {"query": "q", "claims": [{"text": "a", "status": "open"}], "scores": {}, "meta": {"round": 0}}
    model = ScriptedModel(['{"patch":[{"op":"replace","path":"/claims/0/status","value":"supported"}]}'])
    worker = LLMWorker(bp, "judge", model)
    reply = await worker.propose(build_view(bp, "judge", state, 0))
    sent = model.calls[0].json_schema
    assert sent is not None and "/claims/0/status" in json.dumps(sent)
    decision = Kernel(bp, state).submit(Proposal("judge", reply.patch))
    assert decision.accepted


@pytest.mark.parametrize(("decoding", "kind"), [("json", "generic"), ("none", None)])
async def test_other_decoding_modes(decoding: str, kind: str | None) -> None:
    bp = notes_blueprint()
    model = ScriptedModel([json.dumps([NOTE])])
    worker = LLMWorker(bp, "scribe", model, decoding=decoding)  # type: ignore[arg-type]
    reply = await worker.propose(build_view(bp, "scribe", bp.initial_state(), 0))
    sent = model.calls[0].json_schema
    if kind is None:
        assert sent is None
    else:
        assert sent is not None and sent["properties"][PATCH_KEY]["items"]["properties"]["path"] == {"type": "string"}
    assert reply.diagnostics["decoding"] == decoding
    assert Kernel(bp).submit(Proposal("scribe", reply.patch)).accepted


async def test_feedback_reaches_the_next_prompt() -> None:
    bp = notes_blueprint()
    kernel = Kernel(bp)
    model = ScriptedModel(['[{"op":"add","path":"/notes/-","value":{"text":""}}]', json.dumps([NOTE])])
    worker = LLMWorker(bp, "scribe", model, state=lambda: kernel.state)
    first = await worker.propose(kernel_view(kernel, "scribe"))
    decision = kernel.submit(first.to_proposal(kernel_view(kernel, "scribe")))
    assert decision.stage == "schema"
    second = await worker.propose(kernel_view(kernel, "scribe", rejections=[decision.record]), feedback=decision.reason)
    assert "Your last proposals were rejected" in _user(model.calls[1].messages)
    assert (decision.reason or "?") in _user(model.calls[1].messages)
    assert kernel.submit(second.to_proposal(kernel_view(kernel, "scribe"))).accepted


# -- failures --------------------------------------------------------------------------------------
def _raiser(exc: BaseException):  # type: ignore[no-untyped-def]
    def reply(messages: Sequence[Message]) -> str:
        raise exc

    return reply


@pytest.mark.parametrize(
    "exc",
    [
        ModelTimeout("scripted", "no reply within 1s"),
        ModelBadResponse("scripted", "unexpected completion shape"),
        TimeoutError("bare timeout"),
    ],
    ids=["ModelTimeout", "ModelBadResponse", "TimeoutError"],
)
async def test_model_failures_become_model_rejections(exc: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 16: a provider failure is its own stage with the provider's error as the reason,
    # never "not valid JSON" at stage parse.
    bp = notes_blueprint()
    worker = LLMWorker(bp, "scribe", ScriptedModel([_raiser(exc)]))
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    with caplog.at_level(logging.WARNING, logger="slateboard.workers"):
        reply = await worker.propose(view)
    assert reply.patch == ""
    assert reply.error is not None and reply.diagnostics["error_type"] == type(exc).__name__
    assert any("failed" in r.getMessage() for r in caplog.records)
    decision = Kernel(bp).submit(reply.to_proposal(view))
    assert decision.stage == "model"
    assert decision.reason == (str(exc) or type(exc).__name__)
    assert "JSON" not in (decision.reason or "")
    assert decision.record.meta["error_type"] == type(exc).__name__


async def test_an_exhausted_script_is_a_model_error_too() -> None:
    bp = notes_blueprint()
    model = ScriptedModel([json.dumps([NOTE])])
    worker = LLMWorker(bp, "scribe", model)
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    assert (await worker.propose(view)).error is None
    again = await worker.propose(view)
    assert again.diagnostics["error_type"] == "ModelScriptError"
    assert Kernel(bp).submit(again.to_proposal(view)).stage == "model"


async def test_cancellation_propagates() -> None:
    class Slow:
        name = "slow"

        async def generate(self, messages: Sequence[Message], **kwargs: object) -> Generation:
            await asyncio.sleep(10)
            raise AssertionError("not reached")

    bp = notes_blueprint()
    worker = LLMWorker(bp, "scribe", Slow())
    task = asyncio.create_task(worker.propose(build_view(bp, "scribe", bp.initial_state(), 0)))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_garbage_reply_keeps_the_raw_text() -> None:
    bp = notes_blueprint()
    worker = LLMWorker(bp, "scribe", ScriptedModel(["I would add a note."]))
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    assert reply.patch == "I would add a note." and reply.diagnostics["parse"] == "raw"
    decision = Kernel(bp).submit(reply.to_proposal(view))
    assert decision.stage == "parse" and decision.record.patch == "I would add a note."


# -- tools -----------------------------------------------------------------------------------------
async def test_tool_loop_runs_tools_reports_errors_and_sums_usage() -> None:
    seen: list[str] = []

    @tool
    def lookup(term: str) -> dict[str, str]:
        """Look up a term in the encyclopedia."""
        seen.append(term)
        return {"term": term, "fact": "short wavelengths scatter more"}

    async def broken(x: int) -> int:
        raise RuntimeError("backend down")

    bp = notes_blueprint()
    model = ScriptedModel(
        [
            '{"tool": "lookup", "args": {"term": "sky"}}',
            '{"tool": "nope", "args": {}}',
            '{"tool": "broken", "args": {"x": 1}}',
            '{"tool": "lookup", "args": {"wrong": 1}}',
            json.dumps({PATCH_KEY: [NOTE]}),
        ]
    )
    worker = make_worker(bp, "scribe", model=model, tools=[lookup, broken])
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    assert seen == ["sky"]
    assert reply.patch == [NOTE] and reply.error is None
    assert reply.diagnostics["tool_calls"] == [
        {"tool": "lookup", "ok": True},
        {"tool": "nope", "ok": False},
        {"tool": "broken", "ok": False},
        {"tool": "lookup", "ok": False},
    ]
    calls = model.calls
    assert len(calls) == 5
    assert "lookup: Look up a term in the encyclopedia." in calls[0].messages[0].content
    assert "short wavelengths scatter more" in calls[1].messages[-1].content
    assert "unknown tool 'nope'" in calls[2].messages[-1].content
    assert "RuntimeError: backend down" in calls[3].messages[-1].content
    assert "bad arguments" in calls[4].messages[-1].content
    assert "No more tool calls" in calls[4].messages[-1].content
    # tool calls are part of the schema until the limit, then only the patch is
    assert calls[0].json_schema is not None and "anyOf" in calls[0].json_schema
    tools_offered = [v["properties"]["tool"]["const"] for v in calls[0].json_schema["anyOf"][1:]]
    assert tools_offered == ["lookup", "broken"]
    assert calls[4].json_schema is not None and PATCH_KEY in calls[4].json_schema["properties"]
    total_in = sum(GenerationUsage.estimate(c.messages, "").prompt_tokens for c in calls)
    assert reply.usage.tokens_in == total_in
    assert Kernel(bp).submit(reply.to_proposal(view)).accepted


async def test_tool_calls_are_bounded() -> None:
    bp = notes_blueprint()
    model = ScriptedModel(['{"tool": "echo", "args": {"x": 1}}'], cycle=True)
    worker = LLMWorker(bp, "scribe", model, tools=[tool(lambda x: x, name="echo")], max_tool_calls=2)
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    assert len(model.calls) == 3
    assert reply.error is not None and "tool call" in reply.error
    assert Kernel(bp).submit(reply.to_proposal(view)).stage == "parse"


async def test_model_failure_inside_the_tool_loop_keeps_usage() -> None:
    bp = notes_blueprint()
    model = ScriptedModel(['{"tool": "echo", "args": {"x": 1}}', _raiser(ModelTimeout("scripted", "slow"))])
    worker = LLMWorker(bp, "scribe", model, tools=[tool(lambda x: x, name="echo")])
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    assert reply.diagnostics["error_type"] == "ModelTimeout"
    assert reply.usage.tokens_in > 0
    assert Kernel(bp).submit(reply.to_proposal(view)).stage == "model"


# -- factory ---------------------------------------------------------------------------------------
def test_factory_picks_the_model_from_the_spec() -> None:
    bp = compile_blueprint(
        {
            "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "workers": {
                "w": {"model": 'scripted:["[]"]', "writes": ["/a"]},
                "v": {"model": 'scripted:["[]"]', "writes": ["/a"]},
            },
        }
    )
    worker = make_worker(bp, "w")
    assert isinstance(worker, LLMWorker) and worker.model.name == 'scripted:["[]"]'
    both = make_workers(bp)
    assert both["w"].model is both["v"].model  # type: ignore[attr-defined]
    with pytest.raises(WorkerConfigError, match="unknown worker 'x'"):
        make_worker(bp, "x")
    with pytest.raises(WorkerConfigError, match="duplicate tool"):
        LLMWorker(bp, "w", tools=[tool(lambda: 1, name="t"), tool(lambda: 2, name="t")])


async def test_a_refused_schema_falls_back_to_free_text_for_good() -> None:
    def refuse(messages: Sequence[Message]) -> str:
        raise ModelSchemaRefused("scripted", "400: Invalid schema for response_format", status=400)

    bp = notes_blueprint()
    model = ScriptedModel([refuse, json.dumps([NOTE]), json.dumps([NOTE])])
    worker = LLMWorker(bp, "scribe", model)
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    assert reply.error is None and "Invalid schema" in str(reply.diagnostics["schema_refused"])
    assert reply.diagnostics["decoding"] == "none" and reply.patch == [NOTE]
    assert [c.json_schema is None for c in model.calls] == [False, True]
    await worker.propose(view)
    assert model.calls[2].json_schema is None


async def test_a_plain_request_error_keeps_the_schema() -> None:
    # A 400 that is not about the schema (classified by the provider's code) is a model failure
    # of this call only: constrained decoding stays on for the next one.
    def refuse(messages: Sequence[Message]) -> str:
        raise ModelRequestError("scripted", "400: context too long", status=400, code="context_length_exceeded")

    bp = notes_blueprint()
    model = ScriptedModel([refuse, json.dumps([NOTE])])
    worker = LLMWorker(bp, "scribe", model)
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    failed = await worker.propose(view)
    assert failed.diagnostics["error_type"] == "ModelRequestError" and "schema_refused" not in failed.diagnostics
    assert Kernel(bp).submit(failed.to_proposal(view)).stage == "model"
    ok = await worker.propose(view)
    assert ok.patch == [NOTE]
    assert [c.json_schema is None for c in model.calls] == [False, False]


# -- token economy: constrained prompts, no block twice -------------------------------------------
def _lines_once(messages: Sequence[Message]) -> None:
    lines = [line for m in messages for line in m.content.splitlines() if len(line) >= 12]
    repeated = {line for line in lines if lines.count(line) > 1}
    assert not repeated, repeated


async def test_a_constrained_prompt_carries_a_shape_hint_not_the_rules_and_no_block_twice() -> None:
    bp = notes_blueprint()
    kernel = Kernel(bp)
    bad = kernel.submit(Proposal("scribe", [{"op": "add", "path": "/notes/-", "value": {"text": ""}}]))
    view = kernel_view(kernel, "scribe", rejections=[bad.record])
    assert bad.reason is not None and view.rejections
    contract = LLMWorker(bp, "scribe", ScriptedModel([json.dumps({PATCH_KEY: [NOTE]})]), state=lambda: kernel.state)
    free = LLMWorker(bp, "scribe", ScriptedModel([json.dumps({PATCH_KEY: [NOTE]})]), decoding="json")
    short = contract.messages(view, feedback=bad.reason)
    full = free.messages(view, feedback=bad.reason)
    system, user = short[0].content, short[1].content
    # The grammar enforces the format and the schema: neither is restated.
    assert "You are worker 'scribe'" in system and '{"patch":[...]}' in system
    for rule in ("RFC 6902", "Allowed ops", "value schema", "Example:"):
        assert rule not in system and rule not in user, rule
    assert '"writable"' not in user and '"const":"scribe"' not in user
    assert "/topic = why the sky is blue" in user  # the view's values, one line per path
    # Unconstrained (generic JSON decoding only): the full rules.
    assert "RFC 6902" in full[0].content and "Allowed ops: add" in full[0].content
    assert len(system) + len(user) < len(full[0].content) + len(full[1].content)
    for messages in (short, full):
        text = "\n".join(m.content for m in messages)
        assert text.count(bad.reason) == 1  # the rejection is said once, not in the view and the feedback
        _lines_once(messages)
    reply = await contract.propose(view, feedback=bad.reason)
    chars = reply.diagnostics["prompt_chars"]
    assert isinstance(chars, dict) and "schema" not in chars and chars["feedback"] > 0
    assert 0 <= len(system) + len(user) - sum(chars.values()) <= 4  # all but the newlines between blocks


def _typed_notes(pinned: list[str] | None = None) -> dict[str, Any]:
    """The notes blueprint with a typed scribe (``output: /notes/-``), optionally pinned."""
    spec = copy.deepcopy(NOTES_BLUEPRINT)
    scribe = spec["workers"]["scribe"]
    scribe["output"] = "/notes/-"
    if pinned is not None:
        scribe["pinned"] = pinned
    return spec


async def test_output_hint_asks_for_a_typed_reply_in_one_line_and_states_the_schema_once_refused() -> None:
    bp = compile_blueprint(_typed_notes())
    kernel = Kernel(bp)
    view = kernel_view(kernel, "scribe")
    value = json.dumps({"text": "Rayleigh scattering.", "author": "scribe"})
    stated = LLMWorker(bp, "scribe", ScriptedModel([value]), state=lambda: kernel.state)
    hinted = LLMWorker(bp, "scribe", ScriptedModel([value]), state=lambda: kernel.state, output_hint=True)
    full, short = stated.messages(view), hinted.messages(view)
    assert "JSON Schema" in full[0].content and "Reply now with the JSON value." in full[1].content
    assert short[0].content.endswith("You are worker 'scribe'. Reply with one JSON value for /notes/-.")
    assert "JSON Schema" not in _user(short) + short[0].content and "Reply now" not in short[1].content
    assert short[1].content == full[1].content.replace("\nReply now with the JSON value.", "")
    reply = await hinted.propose(view)
    assert reply.patch == [{"op": "add", "path": "/notes/-", "value": json.loads(value)}]
    assert reply.diagnostics["decoding"] == "output"
    # A provider that refuses schemas gets the schema stated in full from then on.
    assert hinted.constrains("output") and not hinted.constrains("json")
    refused = LLMWorker(bp, "scribe", ScriptedModel([value]), output_hint=True)
    refused._schema_refused = True  # what a ModelSchemaRefused sets
    assert "JSON Schema" in refused.messages(view)[0].content


def test_pinned_paths_lead_a_constrained_board_in_their_order() -> None:
    bp = compile_blueprint(_typed_notes(pinned=["/topic"]))
    kernel = Kernel(bp)
    kernel.submit(Proposal("scribe", [NOTE]))
    view = kernel_view(kernel, "scribe")
    board, _ = view_payload(view, constrained=True, first=["/topic"])
    assert board.splitlines()[0] == "/topic = why the sky is blue"
    plain, _ = view_payload(view, constrained=True)
    assert sorted(board.splitlines()) == sorted(plain.splitlines()) and plain.splitlines()[0].startswith("/notes")
    worker = LLMWorker(bp, "scribe", ScriptedModel(["{}"]), state=lambda: kernel.state, output_hint=True)
    assert worker.messages(view)[1].content.startswith("Board:\n/topic = why the sky is blue\n")
