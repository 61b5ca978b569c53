"""The `openai:` provider over real loopback HTTP: refused connections and misbehaving servers."""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

import pytest
from models_testkit import RecordingSleep, StartStub, StubReply, chat_completion

from slateboard.models import (
    Message,
    ModelBadResponse,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
    OpenAICompatModel,
    RetryPolicy,
    resolve_model,
)

ASK = [Message.system("Be brief."), Message.user("Say hi.")]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def openai_at(url: str, policy: RetryPolicy) -> OpenAICompatModel:
    model = resolve_model(f"openai:stub-model@{url}/v1", retry=policy)
    assert isinstance(model, OpenAICompatModel)
    return model


async def test_connection_refused_is_unavailable_after_bounded_retries(
    closed_port: int, fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    model = openai_at(f"http://127.0.0.1:{closed_port}", fast_retry)
    with pytest.raises(ModelUnavailable) as info:
        await model.generate(ASK)
    message = str(info.value)
    assert message.startswith(f"openai:stub-model@http://127.0.0.1:{closed_port}/v1: ")
    assert "cannot connect" in message
    assert len(sleeps.delays) == fast_retry.max_attempts - 1


async def test_providers_share_one_ssl_context(
    stub_server: StartStub, fast_retry: RetryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each board resolving a model string gets its own provider and client: the CA store must
    # be loaded once per process, not once per board (~0.1 s of CPU and ~1 MB each).
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    server = await stub_server(StubReply(200, chat_completion("hi")))
    models = [openai_at(server.url, fast_retry) for _ in range(3)]
    for model in models:
        assert (await model.generate(ASK)).text == "hi"
    assert len(set(map(id, loads))) <= 1
    for model in models:
        await model.aclose()


async def test_plain_reply_with_reported_usage(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    server = await stub_server(StubReply(200, chat_completion("hi there", usage=usage)))
    model = openai_at(server.url, fast_retry)
    generation = await model.generate(ASK, max_tokens=16)
    assert generation.text == "hi there"
    assert (generation.usage.prompt_tokens, generation.usage.completion_tokens) == (11, 2)
    assert generation.usage.estimated is False
    assert generation.finish_reason == "stop"
    assert generation.model == f"openai:stub-model@{server.url}/v1"
    assert generation.retries == 0
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert "authorization" not in request.headers
    assert request.json()["messages"][0] == {"role": "system", "content": "Be brief."}
    await model.aclose()


async def test_missing_usage_is_estimated_not_hidden(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, chat_completion("one two three")))
    generation = await openai_at(server.url, fast_retry).generate(ASK)
    assert generation.usage.estimated is True
    assert generation.usage.completion_tokens == 4
    assert generation.usage.prompt_tokens > 0


async def test_api_key_is_sent_as_bearer_token(
    stub_server: StartStub, fast_retry: RetryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A custom endpoint's key is its per-host variable (OPENAI_API_KEY goes only to OpenAI).
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "sk-local")
    server = await stub_server(StubReply(200, chat_completion()))
    await openai_at(server.url, fast_retry).generate(ASK)
    assert server.requests[0].headers["authorization"] == "Bearer sk-local"


async def test_429_with_retry_after_then_200(
    stub_server: StartStub, fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    server = await stub_server(
        StubReply(429, {"error": {"message": "slow down"}}, {"retry-after": "2"}),
        StubReply(200, chat_completion("finally")),
    )
    generation = await openai_at(server.url, fast_retry).generate(ASK)
    assert generation.text == "finally"
    assert generation.retries == 1
    assert sleeps.delays == [2.0]
    assert len(server.requests) == 2


async def test_persistent_429_surfaces_as_rate_limited(stub_server: StartStub, sleeps: RecordingSleep) -> None:
    server = await stub_server(StubReply(429, "busy", {"retry-after": "1"}))
    policy = RetryPolicy(max_attempts=3, sleep=sleeps)
    with pytest.raises(ModelRateLimited, match="rate limited") as info:
        await openai_at(server.url, policy).generate(ASK)
    assert info.value.retry_after == 1.0
    assert len(server.requests) == 3


async def test_repeated_500_exhausts_attempts(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(500, {"error": {"message": "kaboom"}}))
    with pytest.raises(ModelServerError, match="kaboom") as info:
        await openai_at(server.url, fast_retry).generate(ASK)
    assert info.value.status == 500
    assert len(server.requests) == fast_retry.max_attempts


async def test_a_hanging_server_times_out(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(hang=True))
    with pytest.raises(ModelTimeout, match=r"no reply within 0\.2s"):
        await openai_at(server.url, fast_retry).generate(ASK, timeout=0.2)
    assert len(server.requests) == 1


async def test_cancelling_a_hanging_call_propagates(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(hang=True))
    task = asyncio.create_task(openai_at(server.url, fast_retry).generate(ASK, timeout=None))
    while not server.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_non_json_reply_is_a_bad_response(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, "<html><body>gateway login</body></html>"))
    with pytest.raises(ModelBadResponse, match="not JSON"):
        await openai_at(server.url, fast_retry).generate(ASK)
    assert len(server.requests) == 1


async def test_empty_choices_is_a_bad_response(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, {"id": "x", "choices": []}))
    with pytest.raises(ModelBadResponse, match="no choices"):
        await openai_at(server.url, fast_retry).generate(ASK)


async def test_null_content_and_refusals_are_bad_responses(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    refusal = chat_completion(None)
    refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
    server = await stub_server(StubReply(200, chat_completion(None)), StubReply(200, refusal))
    model = openai_at(server.url, fast_retry)
    with pytest.raises(ModelBadResponse, match="no text content"):
        await model.generate(ASK)
    with pytest.raises(ModelBadResponse, match="refused: I can't help"):
        await model.generate(ASK)


async def test_an_unknown_model_is_not_found(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(404, {"error": {"message": "The model `stub-model` does not exist"}}))
    with pytest.raises(ModelNotFound, match="does not exist"):
        await openai_at(server.url, fast_retry).generate(ASK)


async def test_json_schema_is_sent_as_openai_structured_output(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, chat_completion('{"a": "x"}')))
    model = openai_at(server.url, fast_retry)
    generation = await model.generate(ASK, json_schema=SCHEMA)
    assert generation.text == '{"a": "x"}'
    # SCHEMA allows additional properties, which OpenAI's strict mode refuses (see the test
    # below): it goes out non-strict, the documented fallback (strict_problem).
    assert server.requests[0].json()["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA, "strict": False},
    }
    assert model.structured_output == "auto"


async def test_a_server_rejecting_json_schema_gets_json_object_with_schema(
    stub_server: StartStub, fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    # What llama_cpp.server 0.3.36 does: its request validation error becomes a 500.
    rejected = StubReply(
        500,
        {
            "error": {
                "message": "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}",
                "type": "internal_server_error",
            }
        },
    )
    server = await stub_server(
        rejected,
        StubReply(200, chat_completion('{"a": "1"}')),
        StubReply(200, chat_completion('{"a": "2"}')),
    )
    model = openai_at(server.url, fast_retry)
    first = await model.generate(ASK, json_schema=SCHEMA)
    second = await model.generate(ASK, json_schema=SCHEMA)
    assert (first.text, second.text) == ('{"a": "1"}', '{"a": "2"}')
    assert first.retries == 0
    assert sleeps.delays == []
    formats = [r.json()["response_format"] for r in server.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1] == formats[2] == {"type": "json_object", "schema": SCHEMA}
    assert model.structured_output == "json_object"


async def test_json_object_style_can_be_chosen_up_front(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, chat_completion("{}")))
    model = OpenAICompatModel("m", base_url=f"{server.url}/v1", structured_output="json_object", retry=fast_retry)
    await model.generate(ASK, json_schema=SCHEMA)
    assert server.requests[0].json()["response_format"] == {"type": "json_object", "schema": SCHEMA}


async def test_other_response_format_complaints_do_not_downgrade_the_schema(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    # OpenAI's answer to a schema strict mode cannot use: a real error, not a style mismatch.
    invalid = {
        "error": {
            "message": "Invalid schema for response_format 'response': 'additionalProperties' "
            "is required to be supplied and to be false",
            "type": "invalid_request_error",
        }
    }
    server = await stub_server(StubReply(400, invalid))
    model = openai_at(server.url, fast_retry)
    with pytest.raises(ModelRequestError, match="additionalProperties"):
        await model.generate(ASK, json_schema=SCHEMA)
    assert len(server.requests) == 1
    assert model.structured_output == "auto"


async def test_an_output_mode_fallback_warns_and_lands_in_the_record(
    stub_server: StartStub, fast_retry: RetryPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: llama_cpp.server answers the strict json_schema request with a 500; the fallback
    to JSON mode is a console warning and an ``output_mode_fallback`` entry in the record's meta."""
    from slateboard.runtime import Runner, create_board
    from slateboard.stores import open_store

    rejected = StubReply(
        500,
        {"error": {"message": "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}"}},
    )
    patch = '{"patch": [{"op": "add", "path": "/answer", "value": "hi"}]}'
    server = await stub_server(rejected, StubReply(200, chat_completion(patch)))
    model = openai_at(server.url, fast_retry)
    bp = {
        "name": "fallback",
        "schema": {"type": "object", "properties": {"task": {"type": "string"}, "answer": {"type": "string"}}},
        "initial_state": {"task": "say hi"},
        "workers": {"w": {"reads": ["/task"], "writes": ["/answer"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w"}],
        "done": "has(state.answer)",
    }
    store = await open_store("memory://")
    board = await create_board(store, bp)
    with caplog.at_level(logging.WARNING, logger="slateboard"):
        result = await Runner(store, board, model=model).run()
    records = await store.read_records(board)
    await store.close()
    assert result.state["answer"] == "hi"
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("falling back to json_object" in m and "HTTP 500" in m for m in warned), warned
    [proposal] = [r for r in records if r.kind == "proposal"]
    assert proposal.meta["output_mode_fallback"] == [
        {"event": "output_mode_fallback", "from": "json_schema", "to": "json_object", "status": 500}
    ]
    assert model.take_fallbacks() == []  # each fallback is reported once
