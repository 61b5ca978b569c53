"""Model strings: `resolve_model` parsing and configuration errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from slateboard.models import (
    AnthropicModel,
    ModelConfigError,
    OpenAICompatModel,
    ReplayModel,
    RetryPolicy,
    ScriptedModel,
    resolve_model,
)


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    for name in ("OPENAI_BASE_URL", "SLATEBOARD_MODEL", "GEMINI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def test_openai_with_key_uses_the_public_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = resolve_model("openai:gpt-4o-mini")
    assert isinstance(model, OpenAICompatModel)
    assert model.name == "openai:gpt-4o-mini"
    assert model.model_id == "gpt-4o-mini"
    assert model.base_url == "https://api.openai.com/v1"


def test_openai_without_key_and_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY") as info:
        resolve_model("openai:gpt-4o-mini")
    assert str(info.value).startswith("openai:gpt-4o-mini: ")


@pytest.mark.parametrize(
    ("spec", "model_id", "base_url"),
    [
        (
            "openai:qwen-plus@https://dashscope.example/v1",
            "qwen-plus",
            "https://dashscope.example/v1",
        ),
        (
            "openai:qwen2.5:0.5b@http://127.0.0.1:11434/v1",
            "qwen2.5:0.5b",
            "http://127.0.0.1:11434/v1",
        ),
        ("openai:org/model@v2@http://h:1/v1/", "org/model@v2", "http://h:1/v1"),
        ("  openai:m@http://h/v1  ", "m", "http://h/v1"),
    ],
)
def test_openai_with_base_url_needs_no_key(spec: str, model_id: str, base_url: str) -> None:
    model = resolve_model(spec)
    assert isinstance(model, OpenAICompatModel)
    assert (model.model_id, model.base_url) == (model_id, base_url)
    assert model.name == spec.strip()


def test_anthropic_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-x")
    local = resolve_model("anthropic:claude-x@http://127.0.0.1:5/")
    assert isinstance(local, AnthropicModel)
    assert local.model_id == "claude-x"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert isinstance(resolve_model("anthropic:claude-x"), AnthropicModel)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("mystery-model", "not a model string; accepted: openai:MODEL"),
        ("bogus:thing", "unknown provider 'bogus'"),
        ("openai:", "missing model id"),
        ("openai:@http://h/v1", "missing model id"),
        ("anthropic:@https://h", "missing model id"),
        ("scripted:", "JSON array"),
        ("scripted:not json", "JSON array"),
        ("scripted:[]", "non-empty"),
        ("scripted:[1, 2]", "strings"),
        ("replay:", "missing recording path"),
        ("local:/definitely/not/here.gguf", "not"),
    ],
)
def test_bad_strings_raise_config_errors_naming_the_string(spec: str, fragment: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        resolve_model(spec)
    assert fragment in str(info.value)
    assert str(info.value).startswith(spec.strip())
    assert "\n" not in str(info.value)


async def test_scripted_string_replays_its_replies() -> None:
    model = resolve_model('scripted:["one", "two"]')
    assert isinstance(model, ScriptedModel)
    from slateboard.models import Message

    texts = [(await model.generate([Message.user("q")])).text for _ in range(2)]
    assert texts == ["one", "two"]


def test_replay_string_reads_the_recording(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="cannot read recording"):
        resolve_model(f"replay:{tmp_path / 'missing.jsonl'}")
    (tmp_path / "r.jsonl").write_text("")
    model = resolve_model(f"replay:{tmp_path / 'r.jsonl'}")
    assert isinstance(model, ReplayModel)
    assert model.name == f"replay:{tmp_path / 'r.jsonl'}"


def test_a_model_instance_passes_through_unchanged() -> None:
    model = ScriptedModel(["x"])
    assert resolve_model(model) is model
    with pytest.raises(TypeError):
        resolve_model(42)  # type: ignore[arg-type]


def test_retry_policy_is_handed_to_http_providers() -> None:
    policy = RetryPolicy(max_attempts=2)
    model = resolve_model("openai:m@http://h/v1", retry=policy)
    assert isinstance(model, OpenAICompatModel)
    assert model.retry is policy
