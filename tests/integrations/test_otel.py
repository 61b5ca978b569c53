"""OpenTelemetry: a real Runner run (scripted model) produces the span tree run -> step ->
view / propose (-> chat model) / decide / store append, with GenAI and decision attributes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from slateboard import telemetry
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

BLUEPRINT: dict[str, Any] = {
    "name": "otel",
    "schema": {
        "type": "object",
        "required": ["task"],
        "additionalProperties": False,
        "properties": {"task": {"type": "string"}, "secret": {"type": "string"}, "answer": {"type": "string"}},
    },
    "initial_state": {"task": "say hello"},
    "workers": {"writer": {"reads": ["/task", "/answer"], "writes": ["/answer"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "writer"}],
    "done": "has(state.answer)",
    "answer": "/answer",
}


def reply(path: str, value: str) -> str:
    return orjson.dumps({"patch": [{"op": "add", "path": path, "value": value}]}).decode()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    telemetry.enable(provider)
    try:
        yield exp
    finally:
        telemetry.disable()


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return sorted(
        (s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
        key=lambda s: s.start_time or 0,
    )


async def test_run_span_tree(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, BLUEPRINT)
        # first reply writes outside the contract (rejected at authorise), the retry is accepted
        model = ScriptedModel([reply("/secret", "x"), reply("/answer", "hello")], name="scripted:m1")
        result = await Runner(store, board, model=model).run()
    finally:
        await store.close()
    assert result.answer == "hello" and result.rejected == 1 and result.accepted == 1
    spans = list(exporter.get_finished_spans())
    runs = [s for s in spans if s.name == "slateboard.run"]
    assert len(runs) == 1
    run = runs[0]
    assert run.parent is None
    assert run.attributes is not None
    assert run.attributes["slateboard.board"] == board
    assert run.attributes["slateboard.blueprint"] == "otel"
    assert run.attributes["slateboard.end_reason"] == "done"
    steps = [s for s in children(spans, run) if s.name == "slateboard.step"]
    assert len(steps) == 2
    decisions = []
    for step in steps:
        assert step.attributes is not None and step.attributes["slateboard.worker"] == "writer"
        names = [s.name for s in children(spans, step)]
        assert names == ["slateboard.view", "slateboard.propose", "slateboard.decide", "slateboard.store.append"]
        view, propose, decide, append = children(spans, step)
        assert view.attributes is not None and len(str(view.attributes["slateboard.view.hash"])) == 64
        (chat,) = children(spans, propose)
        assert chat.name == "chat scripted:m1"
        attrs = chat.attributes
        assert attrs is not None
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] == "scripted:m1"
        assert attrs["gen_ai.provider.name"] == "scripted"
        assert int(str(attrs["gen_ai.usage.input_tokens"])) > 0
        assert int(str(attrs["gen_ai.usage.output_tokens"])) > 0
        assert decide.attributes is not None
        decisions.append(
            (
                decide.attributes["slateboard.outcome"],
                decide.attributes.get("slateboard.stage"),
                decide.attributes.get("slateboard.reason"),
            )
        )
        assert (
            append.attributes is not None and append.attributes["slateboard.seq"] == decide.attributes["slateboard.seq"]
        )
    (outcome0, stage0, reason0), (outcome1, _stage1, _r1) = decisions
    assert (outcome0, stage0) == ("rejected", "authorise") and "/secret" in str(reason0)
    assert outcome1 == "accepted"
    # the run-end record is appended under the run span too, outside any step
    assert [s.name for s in children(spans, run) if s.name != "slateboard.step"] == ["slateboard.store.append"]


async def test_off_by_default_records_nothing(tmp_path: Path) -> None:
    assert not telemetry.enabled()
    assert telemetry.span("x") is telemetry.span("y")  # the shared no-op: nothing is created while off
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    store = await open_store("memory://")
    board = await create_board(store, BLUEPRINT)
    await Runner(store, board, model=ScriptedModel([reply("/answer", "hi")])).run()
    await store.close()
    assert exp.get_finished_spans() == ()


def test_enable_from_env() -> None:
    assert telemetry.enable_from_env({}) is False
    with pytest.raises(ValueError, match="otlp, console or off"):
        telemetry.enable_from_env({"SLATEBOARD_OTEL": "jaeger"})
    assert not telemetry.enabled()


async def test_coordinator_model_call_is_a_genai_span(exporter: InMemorySpanExporter) -> None:
    from slateboard.scheduling.coordinator import CoordinatorControl

    store = await open_store("memory://")
    board = await create_board(store, BLUEPRINT)
    coordinator = CoordinatorControl(
        ScriptedModel(['{"choice": 1, "terminate": false, "reason": "only one"}'], name="scripted:coord"),
        ask_when_single=True,
    )
    model = ScriptedModel([reply("/answer", "hi")], name="scripted:worker")
    await Runner(store, board, model=model, control=coordinator).run()
    await store.close()
    spans = list(exporter.get_finished_spans())
    (run,) = [s for s in spans if s.name == "slateboard.run"]
    (coord,) = [s for s in spans if s.name == "chat scripted:coord"]
    # the coordinator chooses between steps: its call hangs off the run, not off a step
    assert coord.parent is not None and run.context is not None and coord.parent.span_id == run.context.span_id
    assert coord.attributes is not None and int(str(coord.attributes["gen_ai.usage.output_tokens"])) > 0
    assert [s.name for s in spans].count("chat scripted:worker") == 1


def test_console_spans_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from opentelemetry import trace

    try:
        assert telemetry.enable_from_env({"SLATEBOARD_OTEL": "console"}) is True
        with telemetry.span("slateboard.test", {"slateboard.board": "b1"}):
            pass
        provider = trace.get_tracer_provider()
        provider.force_flush()  # type: ignore[attr-defined]
    finally:
        telemetry.disable()
    out = capsys.readouterr()
    assert "slateboard.test" in out.err and "slateboard.test" not in out.out


async def test_tool_call_is_an_execute_tool_span(exporter: InMemorySpanExporter) -> None:
    def lookup(term: str) -> str:
        """Look a term up."""
        return f"{term} means hello"

    store = await open_store("memory://")
    board = await create_board(store, BLUEPRINT)
    model = ScriptedModel(['{"tool": "lookup", "args": {"term": "hi"}}', reply("/answer", "hello")], name="scripted:t")
    await Runner(store, board, model=model, tools={"writer": [lookup]}).run()
    await store.close()
    spans = list(exporter.get_finished_spans())
    (tool,) = [s for s in spans if s.name == "execute_tool lookup"]
    (propose,) = [s for s in spans if s.name == "slateboard.propose"]
    assert tool.parent is not None and propose.context is not None and tool.parent.span_id == propose.context.span_id
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["slateboard.tool.ok"] is True
    assert [s.name for s in children(spans, propose)] == ["chat scripted:t", "execute_tool lookup", "chat scripted:t"]
