"""Model strings a new user writes, and today's OpenAI API, over real loopback HTTP.

The stub servers record every request: the headers show which key went where, the bodies which
parameters were sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from models_testkit import StartStub, StubReply, chat_completion

from slateboard.models import (
    AnthropicModel,
    Message,
    ModelConfigError,
    ModelRequestError,
    ModelSchemaRefused,
    OpenAICompatModel,
    RetryPolicy,
    resolve_model,
)
from slateboard.models.openai_compat import is_reasoning_model, strict_problem
from slateboard.models.registry import (
    LITELLM_ENDPOINTS,
    host_key_variable,
    normalise_model_string,
    scope_api_key_env,
)

ASK = [Message.user("Say hi.")]
STRICT_OK = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
    "required": ["a", "n"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "SLATEBOARD_MODEL",
        "GEMINI_API_KEY",
        "OLLAMA_HOST",
        "SLATEBOARD_API_KEY_127_0_0_1",
    ):
        # setenv first so that monkeypatch restores the variable's absence afterwards, even
        # when the code under test (scope_api_key_env) sets it.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


# -- model strings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind", "model_id", "base_url"),
    [
        ("gpt-4o", OpenAICompatModel, "gpt-4o", "https://api.openai.com/v1"),
        ("o3-mini", OpenAICompatModel, "o3-mini", "https://api.openai.com/v1"),
        ("o1", OpenAICompatModel, "o1", "https://api.openai.com/v1"),
        ("gpt-5-mini", OpenAICompatModel, "gpt-5-mini", "https://api.openai.com/v1"),
        ("claude-opus-4-7", AnthropicModel, "claude-opus-4-7", "https://api.anthropic.com"),
        ("openai/gpt-4o-mini", OpenAICompatModel, "gpt-4o-mini", "https://api.openai.com/v1"),
        ("anthropic/claude-x", AnthropicModel, "claude-x", "https://api.anthropic.com"),
        ("ollama/llama3.2", OpenAICompatModel, "llama3.2", "http://127.0.0.1:11434/v1"),
        ("ollama:qwen2.5:0.5b", OpenAICompatModel, "qwen2.5:0.5b", "http://127.0.0.1:11434/v1"),
        ("ollama:llama3@http://gpu-box:11434", OpenAICompatModel, "llama3", "http://gpu-box:11434/v1"),
    ],
)
def test_bare_litellm_and_ollama_forms_resolve(
    monkeypatch: pytest.MonkeyPatch, spec: str, kind: type, model_id: str, base_url: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    model = resolve_model(spec)
    assert isinstance(model, kind)
    assert isinstance(model, OpenAICompatModel | AnthropicModel)
    assert model.model_id == model_id
    assert model._poster.base_url == base_url
    assert model.name == spec


def test_bare_names_need_their_providers_key() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY is not set"):
        resolve_model("gpt-4o")
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY is not set"):
        resolve_model("claude-sonnet-4")
    with pytest.raises(ModelConfigError, match="GEMINI_API_KEY is not set"):
        resolve_model("gemini-2.0-flash")


def test_gemini_resolves_to_its_openai_compatible_endpoint_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    model = resolve_model("gemini-2.0-flash")
    assert isinstance(model, OpenAICompatModel)
    assert model.base_url == "https://generativelanguage.googleapis.com/v1beta/openai"
    assert model._poster._headers["authorization"] == "Bearer g-key"


@pytest.mark.parametrize("spec", ["mystery-model", "qwen2.5:0.5b", "bogus/thing", "llama3"])
def test_unknown_forms_fail_listing_the_accepted_ones(spec: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        resolve_model(spec)
    message = str(info.value)
    assert message.startswith(spec)
    for form in ("openai:MODEL[@BASE_URL]", "ollama:MODEL[@URL]", "PROVIDER/MODEL", "claude-*", "gpt-5*"):
        assert form in message


def test_local_needs_no_colon() -> None:
    assert normalise_model_string("local") == "local"
    assert normalise_model_string("local:/x.gguf") == "local:/x.gguf"


def test_slateboard_model_is_the_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_MODEL", 'scripted:["from the environment"]')
    assert resolve_model(None).name == 'scripted:["from the environment"]'


# -- keys scoped to endpoints, seen by the server ----------------------------------------------


async def test_openai_key_never_goes_to_a_custom_endpoint(
    monkeypatch: pytest.MonkeyPatch, stub_server: StartStub
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    server = await stub_server(StubReply(200, chat_completion("hi")))
    model = resolve_model(f"openai:m@{server.url}/v1")
    await model.generate(ASK)
    assert "authorization" not in server.requests[0].headers


async def test_a_per_host_variable_keys_its_endpoint(monkeypatch: pytest.MonkeyPatch, stub_server: StartStub) -> None:
    server = await stub_server(StubReply(200, chat_completion("hi")))
    assert host_key_variable(server.url) == "SLATEBOARD_API_KEY_127_0_0_1"
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "host-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    await resolve_model(f"openai:m@{server.url}/v1").generate(ASK)
    assert server.requests[0].headers["authorization"] == "Bearer host-key"


async def test_api_key_env_scopes_a_named_variable_to_the_models_host(
    monkeypatch: pytest.MonkeyPatch, stub_server: StartStub
) -> None:
    server = await stub_server(StubReply(200, chat_completion("hi")))
    monkeypatch.setenv("MY_VLLM_KEY", "vllm-key")
    spec = f"openai:m@{server.url}/v1"
    scope_api_key_env(spec, "MY_VLLM_KEY")
    await resolve_model(spec).generate(ASK)
    assert server.requests[0].headers["authorization"] == "Bearer vllm-key"
    other = resolve_model("openai:m@http://elsewhere.example/v1")
    assert isinstance(other, OpenAICompatModel)
    assert "authorization" not in other._poster._headers
    with pytest.raises(ModelConfigError, match="NOT_SET_ANYWHERE"):
        scope_api_key_env(spec, "NOT_SET_ANYWHERE")


async def test_openai_base_url_is_honoured_with_the_users_key(
    monkeypatch: pytest.MonkeyPatch, stub_server: StartStub
) -> None:
    server = await stub_server(StubReply(200, chat_completion("hi")))
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proxy")
    generation = await resolve_model("openai:gpt-4o-mini").generate(ASK)
    assert generation.text == "hi"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-proxy"


async def test_ollama_speaks_openai_chat_completions(monkeypatch: pytest.MonkeyPatch, stub_server: StartStub) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    server = await stub_server(StubReply(200, chat_completion("hola")))
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    generation = await resolve_model("ollama:llama3.2").generate(ASK)
    assert generation.text == "hola"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.json()["model"] == "llama3.2"
    assert "authorization" not in request.headers


# -- today's OpenAI API ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "reasoning"),
    [
        ("o1", True),
        ("o1-mini", True),
        ("o3", True),
        ("o4-mini", True),
        ("gpt-5", True),
        ("gpt-5-nano", True),
        ("gpt-4o", False),
        ("gpt-4.1-mini", False),
        ("qwen-plus", False),
        ("olmo-7b", False),
    ],
)
def test_reasoning_models_are_recognised(model_id: str, reasoning: bool) -> None:
    assert is_reasoning_model(model_id) is reasoning


async def test_reasoning_models_get_max_completion_tokens_and_no_sampling(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    server = await stub_server(StubReply(200, chat_completion("ok")))
    model = OpenAICompatModel("o3-mini", base_url=f"{server.url}/v1", retry=fast_retry)
    await model.generate(ASK, max_tokens=77, temperature=0.3)
    body = server.requests[0].json()
    assert body["max_completion_tokens"] == 77
    assert "max_tokens" not in body and "temperature" not in body and "top_p" not in body


async def test_other_servers_keep_max_tokens_and_temperature(stub_server: StartStub, fast_retry: RetryPolicy) -> None:
    server = await stub_server(StubReply(200, chat_completion("ok")))
    model = OpenAICompatModel("qwen-plus", base_url=f"{server.url}/v1", retry=fast_retry)
    await model.generate(ASK, max_tokens=33, temperature=0.5)
    body = server.requests[0].json()
    assert (body["max_tokens"], body["temperature"]) == (33, 0.5)
    assert "max_completion_tokens" not in body


def test_openais_own_host_gets_max_completion_tokens() -> None:
    model = OpenAICompatModel("gpt-4o", base_url="https://api.openai.com/v1", api_key="k")
    assert model.token_param == "max_completion_tokens"
    assert model.send_sampling is True


def _error(code: str | None, param: str | None, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


async def test_an_unsupported_parameter_400_is_learnt_from_its_code(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    refused = StubReply(400, _error("unsupported_parameter", "temperature", "Unsupported parameter: 'temperature'"))
    server = await stub_server(refused, StubReply(200, chat_completion("ok")), StubReply(200, chat_completion("ok")))
    model = OpenAICompatModel("new-reasoner", base_url=f"{server.url}/v1", retry=fast_retry)
    assert (await model.generate(ASK)).text == "ok"
    await model.generate(ASK)
    bodies = [r.json() for r in server.requests]
    assert "temperature" in bodies[0]
    assert "temperature" not in bodies[1] and "temperature" not in bodies[2]


async def test_a_plain_400_is_a_request_error_not_a_schema_refusal(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    server = await stub_server(StubReply(400, _error("context_length_exceeded", "messages", "too long")))
    model = OpenAICompatModel("gpt-4o", base_url=f"{server.url}/v1", retry=fast_retry)
    with pytest.raises(ModelRequestError) as info:
        await model.generate(ASK, json_schema=STRICT_OK)
    assert not isinstance(info.value, ModelSchemaRefused)
    assert info.value.code == "context_length_exceeded"
    assert "[context_length_exceeded messages]" in str(info.value)
    assert len(server.requests) == 1


async def test_a_strict_schema_refusal_falls_back_to_non_strict(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    refused = StubReply(400, _error("invalid_json_schema", "response_format", "Invalid schema"))
    server = await stub_server(refused, StubReply(200, chat_completion('{"a": "x", "n": 1}')))
    model = OpenAICompatModel("gpt-4o", base_url=f"{server.url}/v1", retry=fast_retry)
    assert (await model.generate(ASK, json_schema=STRICT_OK)).text == '{"a": "x", "n": 1}'
    strict = [r.json()["response_format"]["json_schema"]["strict"] for r in server.requests]
    assert strict == [True, False]


async def test_a_schema_refused_even_non_strict_is_classified_as_such(
    stub_server: StartStub, fast_retry: RetryPolicy
) -> None:
    server = await stub_server(StubReply(400, _error("invalid_json_schema", "response_format", "Invalid schema")))
    model = OpenAICompatModel("gpt-4o", base_url=f"{server.url}/v1", retry=fast_retry)
    with pytest.raises(ModelSchemaRefused, match="invalid_json_schema"):
        await model.generate(ASK, json_schema=STRICT_OK)


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (STRICT_OK, None),
        ({"type": "array"}, "the root is not an object"),
        ({**STRICT_OK, "required": ["a"]}, "optional properties"),
        ({k: v for k, v in STRICT_OK.items() if k != "additionalProperties"}, "additional properties"),
        (
            {**STRICT_OK, "properties": {"a": {"type": "string", "minLength": 1}, "n": {"type": "integer"}}},
            "'minLength'",
        ),
    ],
)
def test_strict_problem_names_what_strict_mode_cannot_take(schema: dict[str, Any], problem: str | None) -> None:
    found = strict_problem(schema)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize("provider", [*LITELLM_ENDPOINTS, "ollama_chat", "openai", "anthropic", "ollama"])
def test_provider_colon_model_is_accepted_wherever_provider_slash_model_is(provider: str) -> None:
    """Issue 28: pydantic-ai's `groq:model` reads as litellm's `groq/model` for every provider."""
    assert normalise_model_string(f"{provider}:some-model") == normalise_model_string(f"{provider}/some-model")


def test_provider_colon_model_resolves_to_the_same_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    colon, slash = resolve_model("groq:llama-3.1-8b"), resolve_model("groq/llama-3.1-8b")
    assert isinstance(colon, OpenAICompatModel) and isinstance(slash, OpenAICompatModel)
    assert colon.model_id == slash.model_id == "llama-3.1-8b"
    assert normalise_model_string("groq:llama-3.1-8b") == f"openai:llama-3.1-8b@{LITELLM_ENDPOINTS['groq'][0]}"
    with pytest.raises(ModelConfigError, match="unknown provider 'nosuch'"):
        normalise_model_string("nosuch:model")
