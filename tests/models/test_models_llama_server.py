"""The `openai:` provider against a real `python -m llama_cpp.server` running SmolLM2."""

from __future__ import annotations

import json

import httpx
import jsonschema_rs
from models_testkit import LlamaServer

from slateboard.models import Message, OpenAICompatModel, RetryPolicy, resolve_model

SCHEMA = {
    "title": "colour choice",
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green", "blue"]},
        "sure": {"type": "boolean"},
        "why": {"type": "string", "maxLength": 40},
    },
    "required": ["colour", "sure", "why"],
    "additionalProperties": False,
}


def model_for(server: LlamaServer) -> OpenAICompatModel:
    model = resolve_model(f"openai:smollm2@{server.base_url}", retry=RetryPolicy(max_attempts=2))
    assert isinstance(model, OpenAICompatModel)
    return model


async def test_plain_generation(llama_server: LlamaServer) -> None:
    model = model_for(llama_server)
    generation = await model.generate([Message.user("Say hello in one short sentence.")], max_tokens=24, timeout=120)
    assert generation.text.strip()
    assert generation.finish_reason in ("stop", "length")
    assert generation.usage.estimated is False
    assert generation.usage.prompt_tokens > 0
    assert 0 < generation.usage.completion_tokens <= 24
    assert generation.model == f"openai:smollm2@{llama_server.base_url}"
    # the same prompt again: whatever the server says it served from its cache fits in the prompt
    again = await model.generate([Message.user("Say hello in one short sentence.")], max_tokens=24, timeout=120)
    assert 0 <= again.usage.cache_read <= again.usage.prompt_tokens and again.usage.cache_write == 0
    await model.aclose()


async def test_json_schema_constrained_generation_validates(llama_server: LlamaServer) -> None:
    model = model_for(llama_server)
    messages = [
        Message.system("Reply with JSON only."),
        Message.user("Pick a colour for a fire truck and say why."),
    ]
    for _ in range(2):  # the second call goes straight to the style the server accepts
        generation = await model.generate(messages, json_schema=SCHEMA, max_tokens=120, timeout=120)
        assert generation.finish_reason == "stop", generation.text
        reply = json.loads(generation.text)
        jsonschema_rs.validate(SCHEMA, reply)
        assert generation.retries == 0
    # llama_cpp.server 0.3.36 only accepts {"type": "json_object", "schema": ...}.
    assert model.structured_output == "json_object"
    await model.aclose()


async def test_llama_server_is_deterministic_at_temperature_zero(
    llama_server: LlamaServer,
) -> None:
    model = model_for(llama_server)
    ask = [Message.user("Name one planet.")]
    first = await model.generate(ask, max_tokens=12, timeout=120)
    second = await model.generate(ask, max_tokens=12, timeout=120)
    assert first.text == second.text
    await model.aclose()


def test_the_server_lists_its_model(llama_server: LlamaServer) -> None:
    reply = httpx.get(f"{llama_server.base_url}/models", timeout=10)
    assert reply.status_code == 200
    assert reply.json()["data"]
