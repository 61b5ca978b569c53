"""Provider for any server speaking OpenAI's `/chat/completions` (OpenAI, vLLM, Ollama,
llama.cpp, LM Studio, DashScope)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import httpx

from slateboard.models._http import JsonPoster, error_for_status, reply_json
from slateboard.models.errors import ModelBadResponse, ModelConfigError
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
)
from slateboard.models.retry import RetryPolicy, call_with_retries

__all__ = [
    "OPENAI_BASE_URL",
    "OpenAICompatModel",
    "SchemaStyle",
    "StructuredOutput",
    "response_format",
]

logger = logging.getLogger("slateboard.models")

OPENAI_BASE_URL = "https://api.openai.com/v1"

SchemaStyle = Literal["json_schema", "json_object"]
StructuredOutput = Literal["auto", SchemaStyle]
"""How a JSON schema is sent: `json_schema` is OpenAI's structured-output format (OpenAI, vLLM,
Ollama, llama.cpp's C++ server); `json_object` is `{"type": "json_object", "schema": ...}`, the
only form `llama_cpp.server` (llama-cpp-python) accepts; `auto` sends `json_schema` and switches
to `json_object` for good when the server rejects the former."""

_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _schema_name(schema: Mapping[str, Any]) -> str:
    # OpenAI requires ^[a-zA-Z0-9_-]{1,64}$; the schema's title is the natural name.
    title = schema.get("title")
    name = _SCHEMA_NAME_CHARS.sub("_", title)[:64] if isinstance(title, str) else ""
    return name or "response"


def response_format(schema: Mapping[str, Any], style: SchemaStyle) -> dict[str, Any]:
    """The `response_format` request field constraining the reply to `schema` in `style`."""
    if style == "json_object":
        return {"type": "json_object", "schema": dict(schema)}
    return {
        "type": "json_schema",
        "json_schema": {"name": _schema_name(schema), "schema": dict(schema), "strict": True},
    }


def _rejects_response_format(response: httpx.Response) -> bool:
    """True when the server refused `response_format` and named `json_object` as what it takes.

    Requiring both words keeps other complaints about response_format (e.g. OpenAI rejecting a
    schema that strict mode cannot use) from silently downgrading to unconstrained JSON.
    llama_cpp.server answers 500 here because its error route wraps request validation errors.
    """
    if response.status_code not in (400, 422, 500):
        return False
    text = response.text
    return "response_format" in text and "json_object" in text


class OpenAICompatModel:
    """A `Model` over an OpenAI-compatible `/chat/completions` endpoint, via httpx.

    Guarantees: failures surface as typed `ModelError`s; 429 (honouring Retry-After), 5xx and
    connection errors are retried under `retry`; usage is the server's, or estimated and marked
    so when the server reports none. The API key, when given, is sent as a bearer token.
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
    ) -> None:
        self.model_id = model_id
        self._name = name or f"openai:{model_id}@{base_url}"
        if not model_id:
            raise ModelConfigError(self._name, "empty model id")
        headers = {"accept": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._poster = JsonPoster(self._name, base_url, headers, client=client)
        self.retry = retry or RetryPolicy()
        self.structured_output: StructuredOutput = structured_output

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

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
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if json_schema is not None:
            style: SchemaStyle = "json_object" if self.structured_output == "json_object" else "json_schema"
            payload["response_format"] = response_format(json_schema, style)
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
            logger.info(
                "%s rejected response_format json_schema; using json_object with schema",
                self._name,
            )
            self.structured_output = "json_object"
            payload = self._payload(messages, json_schema, max_tokens, temperature)
            response = await self._poster.post("/chat/completions", payload)
        if not response.is_success:
            raise error_for_status(self._name, response)
        return response

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
        started = time.perf_counter()
        response, retries = await call_with_retries(
            self._name,
            lambda: self._attempt(messages, json_schema, max_tokens, temperature),
            policy=self.retry,
            timeout=timeout,
        )
        text, finish_reason, usage = self._parse(reply_json(self._name, response), messages)
        return Generation(
            text=text,
            usage=usage,
            finish_reason=finish_reason,
            model=self._name,
            latency_s=time.perf_counter() - started,
            retries=retries,
        )

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

    async def aclose(self) -> None:
        """Close the HTTP client this model created."""
        await self._poster.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


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
            return GenerationUsage(prompt, completion)
    return GenerationUsage.estimate(messages, text)
