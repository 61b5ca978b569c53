"""Provider for Anthropic's Messages API (`POST /v1/messages`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

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

__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
# The forced tool's name; the model "calls" it with the structured reply as its input.
RESPONSE_TOOL = "respond"

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
}


def _messages_path(base_url: str) -> str:
    # Accept both the API root and a root that already ends in /v1.
    return "/messages" if base_url.rstrip("/").endswith("/v1") else "/v1/messages"


def _conversation(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, str]]]:
    """System text (top-level in this API) and the turns, same-role neighbours merged because
    the API requires alternating roles."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1]["role"] == m.role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": m.role, "content": m.content})
    return system, turns


class AnthropicModel:
    """A `Model` over Anthropic's Messages API, via httpx.

    Guarantees: as `OpenAICompatModel` for errors, retries (429, 5xx including 529 overloaded,
    connection errors) and usage. With `json_schema`, one tool whose `input_schema` is the schema
    is forced via `tool_choice`, and the reply text is that tool input serialised as JSON.
    `finish_reason` is mapped to OpenAI's vocabulary (`stop`, `length`).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = ANTHROPIC_BASE_URL,
        api_key: str | None = None,
        name: str | None = None,
        version: str = ANTHROPIC_VERSION,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model_id = model_id
        self._name = name or f"anthropic:{model_id}@{base_url}"
        if not model_id:
            raise ModelConfigError(self._name, "empty model id")
        headers = {"accept": "application/json", "anthropic-version": version}
        if api_key:
            headers["x-api-key"] = api_key
        self._poster = JsonPoster(self._name, base_url, headers, client=client)
        self._path = _messages_path(base_url)
        self.retry = retry or RetryPolicy()

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

    def _payload(
        self,
        messages: Sequence[Message],
        json_schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> dict[str, Any]:
        system, turns = _conversation(messages)
        payload: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": turns,
        }
        if system is not None:
            payload["system"] = system
        if json_schema is not None:
            payload["tools"] = [
                {
                    "name": RESPONSE_TOOL,
                    "description": "Give the reply as input conforming to the schema.",
                    "input_schema": dict(json_schema),
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": RESPONSE_TOOL}
        return payload

    async def _attempt(self, payload: dict[str, Any]) -> httpx.Response:
        response = await self._poster.post(self._path, payload)
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
        payload = self._payload(messages, json_schema, max_tokens, temperature)
        response, retries = await call_with_retries(
            self._name, lambda: self._attempt(payload), policy=self.retry, timeout=timeout
        )
        data = reply_json(self._name, response)
        text = self._text(data, structured=json_schema is not None)
        stop_reason = data.get("stop_reason")
        finish_reason = _FINISH_REASONS.get(str(stop_reason), str(stop_reason or "unknown"))
        return Generation(
            text=text,
            usage=_usage(data.get("usage"), messages, text),
            finish_reason=finish_reason,
            model=self._name,
            latency_s=time.perf_counter() - started,
            retries=retries,
        )

    def _text(self, data: dict[str, Any], *, structured: bool) -> str:
        content = data.get("content")
        if not isinstance(content, list):
            raise ModelBadResponse(self._name, "reply has no content list")
        blocks = [b for b in content if isinstance(b, dict)]
        if structured:
            for block in blocks:
                if block.get("type") == "tool_use" and block.get("name") == RESPONSE_TOOL:
                    return json.dumps(block.get("input"), ensure_ascii=False)
            raise ModelBadResponse(self._name, f"reply has no {RESPONSE_TOOL!r} tool_use block")
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        if not texts:
            raise ModelBadResponse(self._name, "reply has no text block")
        return "".join(texts)

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


def _usage(raw: object, messages: Sequence[Message], text: str) -> GenerationUsage:
    if isinstance(raw, dict):
        prompt, completion = raw.get("input_tokens"), raw.get("output_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            # Cached prompt tokens are billed separately but are still prompt tokens.
            cached = sum(
                v
                for k in ("cache_creation_input_tokens", "cache_read_input_tokens")
                if isinstance(v := raw.get(k), int)
            )
            return GenerationUsage(prompt + cached, completion)
    return GenerationUsage.estimate(messages, text)
