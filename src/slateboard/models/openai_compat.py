"""Provider for any server speaking OpenAI's `/chat/completions` (OpenAI, vLLM, Ollama,
llama.cpp, LM Studio, DashScope)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx
import orjson

from slateboard.models._http import SCHEMA_ERROR_CODES, JsonPoster, error_fields, error_for_status, reply_json
from slateboard.models._provider import HttpModel
from slateboard.models.errors import ModelBadResponse, ModelConfigError, ModelServerError, one_line
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
)
from slateboard.models.retry import RetryPolicy
from slateboard.redaction import register_secret
from slateboard.streaming import TokenSink

__all__ = [
    "OPENAI_BASE_URL",
    "OpenAICompatModel",
    "SchemaStyle",
    "StructuredOutput",
    "TokenParam",
    "is_openai_host",
    "is_reasoning_model",
    "response_format",
    "strict_problem",
]

logger = logging.getLogger("slateboard.models")

OPENAI_BASE_URL = "https://api.openai.com/v1"

SchemaStyle = Literal["json_schema", "json_object"]
StructuredOutput = Literal["auto", SchemaStyle]
"""How a JSON schema is sent: `json_schema` is OpenAI's structured-output format (OpenAI, vLLM,
Ollama, llama.cpp's C++ server); `json_object` is `{"type": "json_object", "schema": ...}`, the
only form `llama_cpp.server` (llama-cpp-python) accepts; `auto` sends `json_schema` and switches
to `json_object` for good when the server rejects the former."""

TokenParam = Literal["auto", "max_tokens", "max_completion_tokens"]
"""Which field carries the reply-length cap: `auto` sends `max_completion_tokens` (today's name)
to OpenAI's own host and to reasoning models, `max_tokens` elsewhere (vLLM, Ollama, llama.cpp
servers all take it), and switches for good when a server answers `unsupported_parameter`."""

_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5...) refuse temperature/top_p and max_tokens.
_REASONING = re.compile(r"^(?:openai/)?(?:o[134](?:$|[-.:_])|o[134]-|gpt-5)", re.IGNORECASE)


def is_reasoning_model(model_id: str) -> bool:
    """True for OpenAI reasoning models (o1*, o3*, o4*, gpt-5*): no sampling parameters, and
    the length cap is `max_completion_tokens`."""
    return bool(_REASONING.match(model_id))


def is_openai_host(base_url: str) -> bool:
    """True when `base_url` is OpenAI's own API host (api.openai.com over https)."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:  # not a URL at all: the model's own check names it (JsonPoster)
        return False
    return url.scheme == "https" and url.host == "api.openai.com"


# Keywords OpenAI's strict structured-output mode accepts (its documented subset of JSON Schema).
_STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "anyOf", "$ref", "$defs", "definitions", "description", "title", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minItems", "maxItems", "default",
    }
)  # fmt: skip


def strict_problem(schema: Mapping[str, Any]) -> str | None:
    """Why OpenAI's strict mode cannot take `schema` as it is, or None when it can.

    Strict mode needs an object root, `additionalProperties: false` and every property listed
    in `required` on every object, and only its keyword subset. The schema is never rewritten
    to fit (that would change what it accepts); a schema with a problem is sent non-strict.
    """
    if schema.get("type") != "object":
        return "the root is not an object"
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, list):
            stack.extend((f"{where}/{i}", v) for i, v in enumerate(node))
            continue
        if not isinstance(node, Mapping):
            continue
        for key in node:
            if key not in _STRICT_KEYWORDS:
                return f"{where or '/'} uses {key!r}"
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                return f"{where or '/'} allows additional properties"
            if isinstance(props, Mapping) and set(node.get("required", ())) != set(props):
                return f"{where or '/'} has optional properties"
        for key in ("properties", "$defs", "definitions"):
            sub = node.get(key)
            if isinstance(sub, Mapping):
                stack.extend((f"{where}/{key}/{k}", v) for k, v in sub.items())
        for key in ("items", "anyOf"):
            if key in node:
                stack.append((f"{where}/{key}", node[key]))
    return None


def _schema_name(schema: Mapping[str, Any]) -> str:
    # OpenAI requires ^[a-zA-Z0-9_-]{1,64}$; the schema's title is the natural name.
    title = schema.get("title")
    name = _SCHEMA_NAME_CHARS.sub("_", title)[:64] if isinstance(title, str) else ""
    return name or "response"


def response_format(schema: Mapping[str, Any], style: SchemaStyle, *, strict: bool = True) -> dict[str, Any]:
    """The `response_format` request field constraining the reply to `schema` in `style`;
    `json_schema` is strict when `strict` and `strict_problem` finds nothing."""
    if style == "json_object":
        return {"type": "json_object", "schema": dict(schema)}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": _schema_name(schema),
            "schema": dict(schema),
            "strict": strict and strict_problem(schema) is None,
        },
    }


def _rejects_response_format(response: httpx.Response) -> bool:
    """True when the server refused `response_format` and named `json_object` as what it takes.

    Requiring both words keeps other complaints about response_format (e.g. OpenAI rejecting a
    schema that strict mode cannot use) from silently downgrading to unconstrained JSON.
    llama_cpp.server answers 500 here because its error route wraps request validation errors.
    """
    if response.status_code not in (400, 422, 500):
        return False
    code, _ = error_fields(response)
    if code in SCHEMA_ERROR_CODES:  # OpenAI's own schema complaint, handled by strict fallback
        return False
    text = response.text
    return "response_format" in text and "json_object" in text


class OpenAICompatModel(HttpModel):
    """A `Model` over an OpenAI-compatible `/chat/completions` endpoint, via httpx.

    Guarantees: failures surface as typed `ModelError`s; 429 (honouring Retry-After), 5xx and
    connection errors are retried under `retry`; usage is the server's, or estimated and marked
    so when the server reports none. The API key, when given, is sent as a bearer token.

    Today's API: reasoning models (`is_reasoning_model`) get no `temperature` and a
    `max_completion_tokens` cap; see `TokenParam` for the cap's field elsewhere. A schema goes
    out as a strict `json_schema` when `strict_problem` finds none, otherwise non-strict (the
    documented fallback: the server treats it as guidance and the kernel still validates the
    reply). A 400 naming an unsupported sampling or length parameter is answered once by
    dropping or renaming it, remembered for the model's lifetime.

    Streaming: when the run streams tokens (``slateboard.streaming``) and ``stream`` is true,
    the request asks for server-sent events (``stream: true``, with ``stream_options.include_usage``
    so the usage is the server's; a server that refuses that option is asked without it from then
    on) and each content delta is handed to the token sink as it arrives. The reply, finish
    reason and errors are those of the unstreamed call; a server that sends no usage in its
    stream (``llama_cpp.server``) gets it estimated and marked so. A server that answers a
    streamed request with one JSON body is read as unstreamed (one chunk).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        structured_output: StructuredOutput = "auto",
        token_param: TokenParam = "auto",
        stream: bool = True,
    ) -> None:
        self.model_id = model_id
        self.streams = stream
        self.stream_usage = True
        self.reasoning = is_reasoning_model(model_id)
        if token_param == "auto":
            modern = self.reasoning or is_openai_host(base_url)
            token_param = "max_completion_tokens" if modern else "max_tokens"
        self.token_param: TokenParam = token_param
        self.send_sampling = not self.reasoning
        self.strict = True
        self._fallbacks: list[dict[str, Any]] = []
        self._name = name or f"openai:{model_id}@{base_url}"
        if not model_id:
            raise ModelConfigError(self._name, "empty model id")
        headers = {"accept": "application/json"}
        # A key given here, not through a model string, is masked too: a gateway may echo it.
        register_secret(api_key)
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._poster = JsonPoster(self._name, base_url, headers, client=client)
        self.retry = retry or RetryPolicy()
        self.structured_output: StructuredOutput = structured_output

    @property
    def base_url(self) -> str:
        """The API root that `/chat/completions` is appended to."""
        return self._poster.base_url

    def _payload(
        self,
        messages: Sequence[Message],
        json_schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model_id,
            "messages": [m.to_dict() for m in messages],
            self.token_param: max_tokens,
            "stream": False,
        }
        if self.send_sampling:
            payload["temperature"] = temperature
        if json_schema is not None:
            style: SchemaStyle = "json_object" if self.structured_output == "json_object" else "json_schema"
            payload["response_format"] = response_format(json_schema, style, strict=self.strict)
        return payload

    async def _attempt(
        self,
        messages: Sequence[Message],
        json_schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> httpx.Response:
        payload = self._payload(messages, json_schema, max_tokens, temperature)
        response = await self._poster.post("/chat/completions", payload)
        if json_schema is not None and self.structured_output == "auto" and _rejects_response_format(response):
            # Remembered for the model's lifetime: the server will not learn json_schema.
            self._fell_back("json_schema", "json_object", response.status_code)
            self.structured_output = "json_object"
            payload = self._payload(messages, json_schema, max_tokens, temperature)
            response = await self._poster.post("/chat/completions", payload)
        if response.status_code == 400 and self._adapt(response):
            payload = self._payload(messages, json_schema, max_tokens, temperature)
            response = await self._poster.post("/chat/completions", payload)
        if not response.is_success:
            raise error_for_status(self._name, response)
        return response

    def _fell_back(self, before: str, after: str, status: int, code: str | None = None) -> None:
        """A weaker output mode from now on: a console warning, and an event the caller logs."""
        why = f"HTTP {status}" + (f", {code}" if code else "")
        logger.warning(
            "%s: the server refused response_format %s (%s); falling back to %s: the server no longer"
            " enforces the schema (the kernel still validates every proposal)",
            self._name, before, why, after,
        )  # fmt: skip
        self._fallbacks.append({"event": "output_mode_fallback", "from": before, "to": after, "status": status})

    def take_fallbacks(self) -> list[dict[str, Any]]:
        """The output-mode fallbacks since the last call, each returned once (an LLM worker puts
        them in its record's meta as ``output_mode_fallback``)."""
        taken, self._fallbacks = self._fallbacks, []
        return taken

    def _adapt(self, response: httpx.Response) -> bool:
        """Learn from a 400 naming a parameter this model does not take; True when the request
        should be sent again (decided by the error's code and param, never its wording)."""
        code, param = error_fields(response)
        if self.strict and (code in SCHEMA_ERROR_CODES or (param or "").startswith("response_format")):
            # The strict subset refused this schema: send it non-strict (the documented fallback).
            self._fell_back("json_schema strict", "json_schema non-strict", response.status_code, code)
            self.strict = False
            return True
        if code not in ("unsupported_parameter", "unsupported_value") or param is None:
            return False
        if param in ("temperature", "top_p") and self.send_sampling:
            logger.info("%s does not take %s; sending no sampling parameters", self._name, param)
            self.send_sampling = False
            return True
        if param == self.token_param:
            other: TokenParam = "max_completion_tokens" if param == "max_tokens" else "max_tokens"
            logger.info("%s does not take %s; sending %s", self._name, param, other)
            self.token_param = other
            return True
        return False

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Generate one reply; see `Model.generate` for the guarantees."""
        return await self.generate_with(
            timeout,
            once=lambda: self._attempt(messages, json_schema, max_tokens, temperature),
            parse=lambda response: self._parse(reply_json(self._name, response), messages),
            streamed=lambda sink: self._attempt_stream(messages, json_schema, max_tokens, temperature, sink),
        )

    def _stream_payload(
        self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None, max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        payload = self._payload(messages, json_schema, max_tokens, temperature)
        payload["stream"] = True
        if self.stream_usage:
            payload["stream_options"] = {"include_usage": True}
        return payload

    async def _attempt_stream(
        self,
        messages: Sequence[Message],
        json_schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
        sink: TokenSink,
    ) -> tuple[str, str, GenerationUsage]:
        """One streamed attempt: the same fallbacks as ``_attempt`` (each re-sends the request at
        most once), then the deltas read as they come (see the class)."""
        sink.restart()
        refused: httpx.Response | None = None
        for _ in range(4):
            payload = self._stream_payload(messages, json_schema, max_tokens, temperature)
            async with self._poster.stream("/chat/completions", payload) as response:
                if response.is_success:
                    return await self._read_stream(response, messages, sink)
                await response.aread()
            refused = response
            if json_schema is not None and self.structured_output == "auto" and _rejects_response_format(response):
                self._fell_back("json_schema", "json_object", response.status_code)
                self.structured_output = "json_object"
                continue
            if response.status_code == 400 and self.stream_usage and _names_stream_options(response):
                logger.info("%s does not take stream_options; its streamed usage will be estimated", self._name)
                self.stream_usage = False
                continue
            if response.status_code == 400 and self._adapt(response):
                continue
            break
        assert refused is not None
        raise error_for_status(self._name, refused)

    async def _read_stream(
        self, response: httpx.Response, messages: Sequence[Message], sink: TokenSink
    ) -> tuple[str, str, GenerationUsage]:
        """The reply of a streamed response: its content deltas (each given to ``sink``), finish
        reason and usage; a JSON body (a server that does not stream) is read whole."""
        if "text/event-stream" not in response.headers.get("content-type", ""):
            await response.aread()
            whole = self._parse(reply_json(self._name, response), messages)
            sink(whole[0])
            return whole
        parts: list[str] = []
        refusal: list[str] = []
        finish_reason: str | None = None
        raw_usage: object = None
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue  # comments, event names, blank separators
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                chunk = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise ModelBadResponse(self._name, f"a streamed event is not JSON: {one_line(data, 120)}") from exc
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise ModelServerError(
                    self._name, f"the stream ended with an error: {one_line(str(chunk['error']), 300)}"
                )
            if chunk.get("usage") is not None:
                raw_usage = chunk["usage"]
            choices = chunk.get("choices")
            if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                continue
            choice = choices[0]
            delta = choice.get("delta")
            if isinstance(delta, dict):
                piece = _content_text(delta.get("content"))
                if piece:
                    parts.append(piece)
                    sink(piece)
                if isinstance(delta.get("refusal"), str):
                    refusal.append(delta["refusal"])
            if choice.get("finish_reason"):
                finish_reason = str(choice["finish_reason"])
        text = "".join(parts)
        if not text and refusal:
            raise ModelBadResponse(self._name, f"model refused: {''.join(refusal)}")
        return text, finish_reason or "unknown", _usage(raw_usage, messages, text)

    def _parse(self, data: dict[str, Any], messages: Sequence[Message]) -> tuple[str, str, GenerationUsage]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ModelBadResponse(self._name, "reply has no choices")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ModelBadResponse(self._name, "first choice has no message object")
        text = _content_text(message.get("content"))
        if text is None:
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                raise ModelBadResponse(self._name, f"model refused: {refusal}")
            raise ModelBadResponse(self._name, "reply message has no text content")
        finish_reason = choice.get("finish_reason")
        return text, str(finish_reason or "unknown"), _usage(data.get("usage"), messages, text)


def _names_stream_options(response: httpx.Response) -> bool:
    """True when a 400 refuses the ``stream_options`` field (by its param, or by naming it)."""
    _code, param = error_fields(response)
    return (param or "").startswith("stream_options") or "stream_options" in response.text


def _content_text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    # Some servers return content parts even for plain text replies.
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [p for p in parts if isinstance(p, str)]
        if texts:
            return "".join(texts)
    return None


def _usage(raw: object, messages: Sequence[Message], text: str) -> GenerationUsage:
    if isinstance(raw, dict):
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return GenerationUsage(prompt, completion, cache_read=_cached_tokens(raw, prompt))
    return GenerationUsage.estimate(messages, text)


def _cached_tokens(raw: dict[str, Any], prompt: int) -> int:
    """The prompt tokens served from the provider's cache: OpenAI's
    ``prompt_tokens_details.cached_tokens`` (DeepSeek's ``prompt_cache_hit_tokens``), 0 when not
    reported. Kept as reported; more than the prompt is logged (its price is then unknown)."""
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(cached, int) or isinstance(cached, bool):
        cached = raw.get("prompt_cache_hit_tokens")
    if not isinstance(cached, int) or isinstance(cached, bool) or cached <= 0:
        return 0
    if cached > prompt:
        logger.warning("the server reported %d cached prompt tokens of %d: the call's cost is unknown", cached, prompt)
    return cached
