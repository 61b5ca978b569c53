"""Function workers: sync, async, decorated, referenced by string; failures as parse rejections."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from workers_testkit import NOTES_BLUEPRINT, notes_blueprint

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Usage
from slateboard.views import View, build_view, kernel_view
from slateboard.workers import FunctionWorker, Worker, WorkerConfigError, WorkerReply, function_worker, make_worker
from slateboard.workers.function import resolve_function

NOTE = {"op": "add", "path": "/notes/-", "value": {"text": "hi", "author": "scribe"}}


def _bp_with(function: str | None = None, **spec: Any) -> Any:
    data = {**NOTES_BLUEPRINT, "workers": {"scribe": {**NOTES_BLUEPRINT["workers"]["scribe"], **spec}}}
    if function is not None:
        data["workers"]["scribe"]["function"] = function
    return compile_blueprint(data)


async def _accepted(worker: Worker, bp: Any = None, event: Any = None) -> WorkerReply:
    bp = bp or notes_blueprint()
    kernel = Kernel(bp)
    view = kernel_view(kernel, worker.name)
    reply = await worker.propose(view, event)
    decision = kernel.submit(reply.to_proposal(view))
    assert decision.accepted, (decision.stage, decision.reason, reply)
    return reply


async def test_sync_function_gets_view_and_event() -> None:
    got: list[Any] = []

    def fn(view: View, event: Any) -> list[dict[str, Any]]:
        got.append((view.worker, event))
        return [NOTE]

    reply = await _accepted(FunctionWorker(fn, name="scribe"), event={"op": "start"})
    assert got == [("scribe", {"op": "start"})]
    assert reply.usage.component == "worker" and reply.usage.tokens_in == 0
    assert reply.diagnostics["kind"] == "function"


async def test_async_function_with_feedback_and_reported_usage() -> None:
    async def fn(view: View, *, feedback: Any = None) -> tuple[list[dict[str, Any]], Usage]:
        await asyncio.sleep(0)
        return [NOTE], Usage(7, 3, 0.0, "ignored")

    worker = FunctionWorker(fn, name="scribe", component="tools")
    reply = await _accepted(worker)
    assert (reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.component) == (7, 3, "tools")


@pytest.mark.parametrize(
    "result",
    [
        [NOTE],
        NOTE,
        '[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]',
        {"patch": [NOTE], "usage": {"tokens_in": 2, "tokens_out": 1}, "expand": ["/notes#[0:1]"]},
        WorkerReply([NOTE], diagnostics={"why": "because"}),
    ],
    ids=["list", "op", "text", "object", "reply"],
)
async def test_return_forms(result: Any) -> None:
    reply = await _accepted(FunctionWorker(lambda view: result, name="scribe"))
    if isinstance(result, dict) and "usage" in result:
        assert reply.usage.tokens_in == 2 and reply.expand == ("/notes#[0:1]",)
    if isinstance(result, WorkerReply):
        assert reply.diagnostics["why"] == "because" and reply.diagnostics["kind"] == "function"


@pytest.mark.parametrize("result", [None, 42, {"not": "a patch"}])
async def test_non_patches_are_parse_or_ops_rejections(result: Any) -> None:
    bp = notes_blueprint()
    worker = FunctionWorker(lambda view: result, name="scribe")
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    reply = await worker.propose(view)
    decision = Kernel(bp).submit(reply.to_proposal(view))
    assert decision.stage == "parse"
    if result is not None and not isinstance(result, dict):
        assert "int" in (reply.error or "")


async def test_exceptions_become_rejections_naming_what_the_function_raised(caplog: pytest.LogCaptureFixture) -> None:
    def fn(view: View) -> Any:
        raise KeyError("missing thing")

    bp = notes_blueprint()
    view = build_view(bp, "scribe", bp.initial_state(), 0)
    with caplog.at_level(logging.ERROR, logger="slateboard.workers"):
        reply = await FunctionWorker(fn, name="scribe").propose(view)
    assert reply.patch == "" and reply.diagnostics["error_type"] == "KeyError"
    assert any("raised" in r.getMessage() for r in caplog.records)
    decision = Kernel(bp).submit(reply.to_proposal(view))
    # A failed call, like a timeout: stage ``model`` with what was raised, not "not valid JSON".
    assert decision.stage == "model" and decision.record.meta["error_type"] == "KeyError"
    assert decision.record.reason is not None and "raised KeyError: 'missing thing'" in decision.record.reason


async def test_decorator_declares_the_contract() -> None:
    @function_worker(name="scribe", reads=["/topic", "/notes"], writes=["/notes/-"], ops=["add"], instruction="notes")
    def scribe(view: View) -> list[dict[str, Any]]:
        return [NOTE]

    assert isinstance(scribe, FunctionWorker)
    assert scribe(None) == [NOTE]  # still callable as the function
    spec = scribe.to_spec()
    assert spec == {"instruction": "notes", "reads": ["/topic", "/notes"], "writes": ["/notes/-"], "ops": ["add"]}
    bp = compile_blueprint({**NOTES_BLUEPRINT, "workers": {"scribe": spec}})
    worker = make_worker(bp, "scribe", functions={"scribe": scribe})
    assert worker is scribe
    await _accepted(worker, bp)

    @function_worker
    def bare(view: View) -> list[dict[str, Any]]:
        return [NOTE]

    assert bare.name == "bare" and bare.to_spec() == {}  # a local function has no importable reference


def test_declared_contract_must_match_the_blueprint() -> None:
    @function_worker(writes=["/notes/-", "/topic"])
    def greedy(view: View) -> list[Any]:
        return []

    with pytest.raises(WorkerConfigError, match=r"contract mismatch: writes: declared \['/notes/-', '/topic'\]"):
        make_worker(notes_blueprint(), "scribe", functions={"scribe": greedy})


async def test_reference_strings_resolve() -> None:
    bp = _bp_with("workers_functions:append_note")
    worker = make_worker(bp, "scribe")
    assert isinstance(worker, FunctionWorker) and worker.reference == "workers_functions:append_note"
    reply = await _accepted(worker, bp)
    assert reply.patch[0]["value"]["text"] == "about why the sky is blue"
    await _accepted(make_worker(_bp_with("workers_functions:Scribes.loud"), "scribe"))
    # a decorated module-level function keeps its importable reference and its contract check
    declared = make_worker(_bp_with("workers_functions:declared"), "scribe")
    assert isinstance(declared, FunctionWorker) and declared.to_spec()["function"] == "workers_functions:declared"
    # functions= can supply the callable under the reference
    supplied = make_worker(_bp_with("pkg.nowhere:fn"), "scribe", functions={"pkg.nowhere:fn": lambda v: [NOTE]})
    await _accepted(supplied)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("workers_functions.append_note", "expected 'package.module:callable'"),
        ("no_such_module_xyz:fn", "cannot import function 'no_such_module_xyz:fn': ModuleNotFoundError"),
        ("workers_functions:missing", "has no attribute 'missing'"),
        ("workers_functions:NOT_CALLABLE", "names a int, not a callable"),
        ("workers_broken_module:fn", "RuntimeError: this module is broken on purpose"),
        (":fn", "expected 'package.module:callable'"),
    ],
)
def test_resolution_errors_name_the_reference(reference: str, message: str) -> None:
    with pytest.raises(WorkerConfigError, match=message.replace("(", r"\(").replace(".", r"\.")) as info:
        resolve_function(reference)
    assert repr(reference) in str(info.value)


def test_tools_are_refused_for_function_workers() -> None:
    with pytest.raises(WorkerConfigError, match="function worker"):
        make_worker(_bp_with("workers_functions:append_note"), "scribe", tools=[lambda: 1])
