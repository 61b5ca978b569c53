"""Provider for Anthropic's Messages API (`POST /v1/messages`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from slateboard.models._http import JsonPoster, error_for_status, reply_json
from slateboard.models._provider import HttpModel, Reply
from slateboard.models.errors import ModelBadResponse, ModelConfigError, ModelServerError
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
    estimate_tokens,
)
from slateboard.models.retry import RetryPolicy
from slateboard.redaction import register_secret
from slateboard.streaming import TokenSink

__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
# The forced tool's name; the model "calls" it with the structured reply as its input.
RESPONSE_TOOL = "respond"
CACHE_MIN_TOKENS = 1024
"""The shortest prompt prefix (tools and system, estimated tokens) marked for Anthropic's prompt
cache: the API caches nothing shorter (2048 on Haiku models), and a marked prefix is billed as
a cache write (1.25x input) on a miss, read back at 0.1x on later calls."""

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


class AnthropicModel(HttpModel):
    """A `Model` over Anthropic's Messages API, via httpx.

    Guarantees: as `OpenAICompatModel` for errors, retries (429, 5xx including 529 overloaded,
    connection errors) and usage. With `json_schema`, one tool whose `input_schema` is the schema
    is forced via `tool_choice`, and the reply text is that tool input serialised as JSON.
    `finish_reason` is mapped to OpenAI's vocabulary (`stop`, `length`).

    Streaming: when the run streams tokens (``slateboard.streaming``) and ``stream`` is true,
    the request asks for server-sent events and each text delta (or, with a schema, each
    ``input_json_delta`` of the forced tool) goes to the token sink as it arrives; the reply,
    usage (``message_start`` and ``message_delta``) and finish reason are those of the
    unstreamed call.

    Prompt caching: the system text is the part of a worker's prompt that does not change
    between its calls (role, format rules, writable paths); when it and the reply tool come to
    ``CACHE_MIN_TOKENS`` (estimated) or more, the system block carries
    ``cache_control: {"type": "ephemeral"}`` so later calls read that prefix from the cache
    (``cache_prompt=False``: never). Usage keeps the cache reads and writes the API reports.
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
        stream: bool = True,
        cache_prompt: bool = True,
    ) -> None:
        self.model_id = model_id
        self.streams = stream
        self.cache_prompt = cache_prompt
        self._name = name or f"anthropic:{model_id}@{base_url}"
        if not model_id:
            raise ModelConfigError(self._name, "empty model id")
        headers = {"accept": "application/json", "anthropic-version": version}
        # A key given here, not through a model string, is masked too: a gateway may echo it.
        register_secret(api_key)
        if api_key:
            headers["x-api-key"] = api_key
        self._poster = JsonPoster(self._name, base_url, headers, client=client)
        self._path = _messages_path(base_url)
        self.retry = retry or RetryPolicy()

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
        if json_schema is not None:
            payload["tools"] = [
                {
                    "name": RESPONSE_TOOL,
                    "description": "Give the reply as input conforming to the schema.",
                    "input_schema": dict(json_schema),
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": RESPONSE_TOOL}
        if system is not None:
            # tools, then system, is the order the API caches a prefix in
            prefix = estimate_tokens(system) + (estimate_tokens(json.dumps(json_schema)) if json_schema else 0)
            if self.cache_prompt and prefix >= CACHE_MIN_TOKENS:
                payload["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
            else:
                payload["system"] = system
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
        payload = self._payload(messages, json_schema, max_tokens, temperature)
        structured = json_schema is not None

        def parse(response: httpx.Response) -> Reply:
            data = reply_json(self._name, response)
            text = self._text(data, structured=structured)
            stop_reason = data.get("stop_reason")
            finish_reason = _FINISH_REASONS.get(str(stop_reason), str(stop_reason or "unknown"))
            return text, finish_reason, _usage(data.get("usage"), messages, text)

        return await self.generate_with(
            timeout,
            once=lambda: self._attempt(payload),
            parse=parse,
            streamed=lambda sink: self._attempt_stream({**payload, "stream": True}, messages, structured, sink),
        )

    async def _attempt_stream(
        self, payload: dict[str, Any], messages: Sequence[Message], structured: bool, sink: TokenSink
    ) -> tuple[str, str, GenerationUsage]:
        """One streamed attempt: the events read as they come; the reply assembled as the
        unstreamed call's (with a schema: the forced tool's input, parsed and serialised)."""
        sink.restart()
        async with self._poster.stream(self._path, payload) as response:
            if not response.is_success:
                await response.aread()
                raise error_for_status(self._name, response)
            if "text/event-stream" not in response.headers.get("content-type", ""):
                await response.aread()
                data = reply_json(self._name, response)
                text = self._text(data, structured=structured)
                sink(text)
                stop = data.get("stop_reason")
                return (
                    text,
                    _FINISH_REASONS.get(str(stop), str(stop or "unknown")),
                    _usage(data.get("usage"), messages, text),
                )
            blocks: dict[int, dict[str, Any]] = {}
            usage: dict[str, Any] = {}
            stop_reason: object = None
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                try:
                    event = json.loads(line[5:].strip())
                except (ValueError, RecursionError) as exc:
                    raise ModelBadResponse(self._name, f"a streamed event is not JSON: {line[:120]}") from exc
                if not isinstance(event, dict):
                    continue
                kind = event.get("type")
                if kind == "error":
                    raise ModelServerError(self._name, f"the stream ended with an error: {event.get('error')}")
                if kind == "message_start" and isinstance(event.get("message"), dict):
                    usage.update(event["message"].get("usage") or {})
                elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
                    block = dict(event["content_block"])
                    block["parts"] = []
                    blocks[int(event.get("index", len(blocks)))] = block
                elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
                    block = blocks.setdefault(int(event.get("index", 0)), {"type": "text", "parts": []})
                    delta = event["delta"]
                    piece = delta.get("text") if delta.get("type") == "text_delta" else delta.get("partial_json")
                    if isinstance(piece, str) and piece:
                        block["parts"].append(piece)
                        if structured == (block.get("type") == "tool_use"):
                            sink(piece)
                elif kind == "message_delta":
                    stop_reason = (event.get("delta") or {}).get("stop_reason", stop_reason)
                    usage.update(event.get("usage") or {})
                elif kind == "message_stop":
                    break
        content: list[dict[str, Any]] = []
        for _, block in sorted(blocks.items()):
            joined = "".join(block.pop("parts"))
            if block.get("type") == "tool_use":
                try:
                    block["input"] = json.loads(joined) if joined else block.get("input", {})
                except (ValueError, RecursionError) as exc:
                    raise ModelBadResponse(self._name, f"the streamed tool input is not JSON: {joined[:120]}") from exc
            elif block.get("type") == "text":
                block["text"] = str(block.get("text") or "") + joined
            content.append(block)
        text = self._text({"content": content}, structured=structured)
        finish_reason = _FINISH_REASONS.get(str(stop_reason), str(stop_reason or "unknown"))
        return text, finish_reason, _usage(usage or None, messages, text)

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


def _usage(raw: object, messages: Sequence[Message], text: str) -> GenerationUsage:
    if isinstance(raw, dict):
        prompt, completion = raw.get("input_tokens"), raw.get("output_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            # Cached prompt tokens are billed at their own rates but are still prompt tokens
            # (this API's input_tokens counts only the rest).
            read, written = (
                v if isinstance(v := raw.get(k), int) and not isinstance(v, bool) and v > 0 else 0
                for k in ("cache_read_input_tokens", "cache_creation_input_tokens")
            )
            return GenerationUsage(prompt + read + written, completion, cache_read=read, cache_write=written)
    return GenerationUsage.estimate(messages, text)
