"""Scripted, recording and replaying models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from slateboard.models import (
    Message,
    ModelConfigError,
    ModelScriptError,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    resolve_model,
)
from slateboard.models.scripted import request_key

ASK = [Message.system("You are terse."), Message.user("Name a colour.")]
SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


async def test_replies_come_back_in_order_with_estimated_usage() -> None:
    model = ScriptedModel(["red", "green blue"])
    first = await model.generate(ASK)
    second = await model.generate(ASK, json_schema=SCHEMA, max_tokens=7, temperature=0.5)
    assert [first.text, second.text] == ["red", "green blue"]
    assert first.usage.estimated and second.usage.estimated
    assert second.usage.completion_tokens == 3  # ceil(10 chars / 4) beats 2 words
    assert first.model == "scripted"
    assert first.finish_reason == "stop"
    assert first.retries == 0
    assert model.calls[1].json_schema == SCHEMA
    assert model.calls[1].max_tokens == 7
    assert model.calls[1].messages == tuple(ASK)


async def test_keep_calls_false_answers_the_same_and_keeps_nothing() -> None:
    """A long run or a benchmark need not hold every prompt: the replies and usage are those of
    a recording model, and ``calls`` stays empty."""
    kept, lean = (
        ScriptedModel(["red", "green blue"], cycle=True),
        ScriptedModel(["red", "green blue"], cycle=True, keep_calls=False),
    )
    for _ in range(3):
        a, b = await kept.generate(ASK), await lean.generate(ASK)
        assert (a.text, a.usage) == (b.text, b.usage)
    assert len(kept.calls) == 3 and lean.calls == []


async def test_exhausted_script_raises_a_clear_error() -> None:
    model = ScriptedModel(["only"])
    await model.generate(ASK)
    with pytest.raises(ModelScriptError, match="script exhausted: call 2 but only 1"):
        await model.generate(ASK)


async def test_cycling_script_starts_over() -> None:
    model = ScriptedModel(["a", "b"], cycle=True)
    assert [(await model.generate(ASK)).text for _ in range(5)] == ["a", "b", "a", "b", "a"]


async def test_callable_replies_see_the_messages_and_can_raise() -> None:
    def echo(messages: Sequence[Message]) -> str:
        return messages[-1].content.upper()

    def boom(messages: Sequence[Message]) -> str:
        raise ModelScriptError("scripted", "scripted failure")

    model = ScriptedModel([echo, boom])
    assert (await model.generate(ASK)).text == "NAME A COLOUR."
    with pytest.raises(ModelScriptError, match="scripted failure"):
        await model.generate(ASK)


def test_an_empty_script_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError):
        ScriptedModel([])


async def test_scripted_generation_is_cancellable() -> None:
    task = asyncio.create_task(ScriptedModel(["x"]).generate(ASK))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_request_key_is_canonical() -> None:
    reordered = {
        "required": ["colour"],
        "properties": {"colour": {"type": "string"}},
        "type": "object",
    }
    assert request_key(ASK, SCHEMA) == request_key(ASK, reordered)
    assert request_key(ASK, SCHEMA) != request_key(ASK, None)
    assert request_key(ASK, None) != request_key([Message.user("Name a colour.")], None)
    assert len(request_key(ASK, None)) == 64


async def test_record_then_replay_reproduces_replies_by_key(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rec.jsonl"
    inner = ScriptedModel(['{"colour": "red"}', "plain", "plain again"])
    recorder = RecordingModel(inner, path)
    assert recorder.name == "scripted"
    recorded = [
        await recorder.generate(ASK, json_schema=SCHEMA),
        await recorder.generate([Message.user("hi")]),
        await recorder.generate([Message.user("hi")]),
    ]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["key"] for line in lines] == [
        request_key(ASK, SCHEMA),
        request_key([Message.user("hi")], None),
        request_key([Message.user("hi")], None),
    ]
    assert lines[0]["generation"]["text"] == '{"colour": "red"}'

    replay = ReplayModel(path)
    assert len(replay) == 3
    # Keyed, not positional: asking in a different order still gets the matching replies.
    hi_1 = await replay.generate([Message.user("hi")])
    colour = await replay.generate(ASK, json_schema=SCHEMA, temperature=0.9)
    hi_2 = await replay.generate([Message.user("hi")])
    assert [colour.text, hi_1.text, hi_2.text] == [g.text for g in recorded]
    assert colour.usage == recorded[0].usage
    assert colour.model == f"replay:{path}"
    assert len(replay) == 0


async def test_replay_misses_raise_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    await RecordingModel(ScriptedModel(["x"]), path).generate(ASK)
    replay = resolve_model(f"replay:{path}")
    with pytest.raises(ModelScriptError, match="no recording for request"):
        await replay.generate([Message.user("something never asked")])
    with pytest.raises(ModelScriptError, match="no recording"):
        await replay.generate(ASK, json_schema=SCHEMA)  # same messages, different schema
    await replay.generate(ASK)
    with pytest.raises(ModelScriptError, match="all 1 recorded replies already used"):
        await replay.generate(ASK)


async def test_failures_of_the_inner_model_are_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recorder = RecordingModel(ScriptedModel(["x"]), path)
    await recorder.generate(ASK)
    with pytest.raises(ModelScriptError):
        await recorder.generate(ASK)
    assert len(path.read_text().splitlines()) == 1


def test_a_malformed_recording_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": "k", "generation": {"text": "x"}}\n')
    with pytest.raises(ModelConfigError, match="line 1 is not a recording"):
        ReplayModel(path)
