"""The `anthropic:` provider against a loopback stub speaking the Messages API shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from models_testkit import ReceivedRequest, RecordingSleep, StartStub, StubReply

from slateboard.models import (
    AnthropicModel,
    Message,
    ModelAuthError,
    ModelBadResponse,
    ModelServerError,
    RetryPolicy,
    resolve_model,
)

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
}


def messages_api(request: ReceivedRequest) -> StubReply:
    """A tiny Messages API: validates the request shape, answers text or the forced tool."""
    body = request.json()
    problems = [f"missing {field}" for field in ("model", "max_tokens", "messages") if field not in body]
    if request.headers.get("anthropic-version") != "2023-06-01":
        problems.append("bad anthropic-version")
    if any(m["role"] not in ("user", "assistant") for m in body["messages"]):
        problems.append("system must be top-level")
    if problems:
        error = {"type": "invalid_request_error", "message": "; ".join(problems)}
        return StubReply(400, {"type": "error", "error": error})
    content: list[dict[str, Any]]
    if "tool_choice" in body:
        tool = body["tools"][0]
        assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
        content = [{"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": {"verdict": "yes"}}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}]
        stop = "end_turn"
    return StubReply(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": 21, "output_tokens": 5, "cache_read_input_tokens": 4},
        },
    )


def anthropic_at(url: str, policy: RetryPolicy) -> AnthropicModel:
    model = resolve_model(f"anthropic:claude-test@{url}", retry=policy)
    assert isinstance(model, AnthropicModel)
    return model


ASK = [
    Message.system("You judge."),
    Message.user("Is water wet?"),
    Message.user("Answer briefly."),
]


async def test_plain_text_reply(
    stub_server: StartStub, fast_retry: RetryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A custom endpoint's key is its per-host variable (ANTHROPIC_API_KEY goes only to Anthropic).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-this-host")
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "sk-ant-test")
    server = await stub_server(messages_api)
    generation = await anthropic_at(server.url, fast_retry).generate(ASK, max_tokens=64)
    assert generation.text == "Hello there"
    assert generation.finish_reason == "stop"
    assert (generation.usage.prompt_tokens, generation.usage.completion_tokens) == (25, 5)
    assert (generation.usage.cache_read, generation.usage.cache_write) == (4, 0)
    assert not generation.usage.estimated
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    body = request.json()
    assert body["system"] == "You judge."
    # Consecutive user turns are merged: the API requires alternating roles.
    assert body["messages"] == [{"role": "user", "content": "Is water wet?\n\nAnswer briefly."}]
    assert body["max_tokens"] == 64
    assert "tools" not in body


async def test_json_schema_uses_one_forced_tool(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(messages_api)
    generation = await anthropic_at(server.url, fast_retry).generate(ASK, json_schema=SCHEMA)
    assert json.loads(generation.text) == {"verdict": "yes"}
    assert generation.finish_reason == "stop"
    tools = server.requests[0].json()["tools"]
    assert len(tools) == 1
    assert tools[0]["input_schema"] == SCHEMA


async def test_overloaded_529_is_retried(
    stub_server: StartStub, fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = await stub_server(StubReply(529, overloaded), messages_api)
    generation = await anthropic_at(server.url, fast_retry).generate(ASK)
    assert generation.retries == 1
    assert len(sleeps.delays) == 1


async def test_persistent_server_errors_surface_with_the_api_message(
    stub_server: StartStub, sleeps: RecordingSleep
) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "Internal trouble"}}
    server = await stub_server(StubReply(500, error))
    with pytest.raises(ModelServerError, match="Internal trouble"):
        await anthropic_at(server.url, RetryPolicy(max_attempts=2, sleep=sleeps)).generate(ASK)
    assert len(server.requests) == 2


async def test_a_rejected_key_is_an_auth_error(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    server = await stub_server(StubReply(401, error))
    with pytest.raises(ModelAuthError, match="invalid x-api-key"):
        await anthropic_at(server.url, fast_retry).generate(ASK)
    assert len(server.requests) == 1


async def test_missing_tool_block_is_a_bad_response(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    text_only = {
        "content": [{"type": "text", "text": "yes"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    server = await stub_server(StubReply(200, text_only))
    with pytest.raises(ModelBadResponse, match="no 'respond' tool_use block"):
        await anthropic_at(server.url, fast_retry).generate(ASK, json_schema=SCHEMA)


async def test_base_url_ending_in_v1_is_not_doubled(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(messages_api)
    await anthropic_at(f"{server.url}/v1", fast_retry).generate(ASK)
    assert server.requests[0].path == "/v1/messages"


async def test_max_tokens_maps_to_length(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    truncated = {
        "content": [{"type": "text", "text": "Hel"}],
        "stop_reason": "max_tokens",
    }
    server = await stub_server(StubReply(200, truncated))
    generation = await anthropic_at(server.url, fast_retry).generate(ASK, max_tokens=1)
    assert generation.finish_reason == "length"
    assert generation.usage.estimated  # no usage in the reply: estimated, never hidden
