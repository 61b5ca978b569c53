"""The `openai:` provider's streamed requests against loopback stubs that do not stream as asked:
a server answering with one JSON body, a server refusing ``stream_options``, an error status."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from models_testkit import StartStub, StubReply, chat_completion

from slateboard.models import Message, ModelRequestError, OpenAICompatModel, RetryPolicy, streamed
from slateboard.streaming import StreamTap, invocation_scope, streaming_to

ASK = [Message.user("Say hi.")]


async def streamed_call(
    model: OpenAICompatModel, chunks: list[dict[str, Any]] | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    chunks = [] if chunks is None else chunks
    tap = StreamTap.of(lambda _k, _b, data: chunks.append(data), asyncio.get_running_loop(), ["tokens"])
    with streaming_to(tap), invocation_scope("board", "writer", "inv-7"):
        gen = await streamed.generate(model, ASK, max_tokens=16, temperature=0.0, timeout=30)
    return gen, chunks


def model_at(url: str) -> OpenAICompatModel:
    return OpenAICompatModel("stub", base_url=f"{url}/v1", retry=RetryPolicy(max_attempts=1))


async def test_a_json_answer_to_a_streamed_request_is_one_chunk(stub_server: StartStub) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    server = await stub_server(StubReply(200, chat_completion("hi there", usage=usage)))
    gen, chunks = await streamed_call(model_at(server.url))
    assert gen.text == "hi there" and not gen.usage.estimated
    assert [(c["text"], c["worker"], c["invocation"], c["call"], c["attempt"]) for c in chunks] == [
        ("hi there", "writer", "inv-7", 0, 0)
    ]
    assert server.requests[0].json()["stream"] is True


async def test_a_server_refusing_stream_options_is_asked_without_them(stub_server: StartStub) -> None:
    refusal = {"error": {"message": "unknown field", "code": "unsupported_parameter", "param": "stream_options"}}
    server = await stub_server(StubReply(400, refusal), StubReply(200, chat_completion("fine")))
    model = model_at(server.url)
    gen, chunks = await streamed_call(model)
    assert gen.text == "fine" and [c["text"] for c in chunks] == ["fine"]
    sent = [r.json() for r in server.requests]
    assert "stream_options" in sent[0] and "stream_options" not in sent[1]
    assert model.stream_usage is False  # remembered for the model's lifetime


async def test_an_error_status_is_the_unstreamed_error_and_sends_no_chunk(stub_server: StartStub) -> None:
    server = await stub_server(StubReply(422, {"error": {"message": "bad request", "code": "bad_thing"}}))
    chunks: list[dict[str, Any]] = []
    with pytest.raises(ModelRequestError, match=r"\[bad_thing\]: bad request"):
        await streamed_call(model_at(server.url), chunks)
    assert chunks == []


async def test_stream_false_never_streams(stub_server: StartStub) -> None:
    server = await stub_server(StubReply(200, chat_completion("whole")))
    model = OpenAICompatModel("stub", base_url=f"{server.url}/v1", stream=False)
    gen, chunks = await streamed_call(model)
    assert server.requests[0].json()["stream"] is False
    assert [c["text"] for c in chunks] == ["whole"] == [gen.text]
