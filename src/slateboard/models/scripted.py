"""Deterministic models for tests and replays: scripted replies, and record/replay of real ones."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from slateboard.models.errors import ModelConfigError, ModelScriptError
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
    Model,
)
from slateboard.streaming import token_sink

__all__ = [
    "RecordingModel",
    "ReplayModel",
    "Reply",
    "ScriptedCall",
    "ScriptedModel",
    "request_key",
]

_WORDS = re.compile(r"\s*\S+|\s+")

Reply = str | Callable[[Sequence[Message]], str]
"""A scripted reply: fixed text, or a function of the messages (which may raise to script a
failure)."""


def request_key(messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
    """SHA-256 hex of the canonical JSON (sorted keys, no whitespace) of the messages and schema.

    Equal requests get equal keys across processes and platforms; sampling parameters are
    deliberately not part of the key.
    """
    canonical = orjson.dumps(
        {
            "messages": [m.to_dict() for m in messages],
            "json_schema": None if json_schema is None else dict(json_schema),
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(canonical).hexdigest()


def _first_user_line(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role == "user":
            return m.content[:60]
    return ""


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One call a `ScriptedModel` received, kept for assertions in tests."""

    messages: tuple[Message, ...]
    json_schema: Mapping[str, Any] | None
    max_tokens: int
    temperature: float


class ScriptedModel:
    """A `Model` that returns `replies` in order, one per call.

    Guarantees: call n gets reply n (a callable reply is called with the messages); when the
    replies run out it raises `ModelScriptError`, or starts over if `cycle=True`. When the run
    streams tokens, each reply is streamed a word at a time (the chunks join to the reply). GenerationUsage is the
    whitespace/4-character estimate, marked `estimated=True`. Every call is kept in `calls`,
    unless `keep_calls=False` (a long run, a benchmark: each call holds its whole prompt).
    """

    def __init__(
        self, replies: Sequence[Reply], *, cycle: bool = False, name: str = "scripted", keep_calls: bool = True
    ) -> None:
        if not replies:
            raise ModelConfigError(name, "a scripted model needs at least one reply")
        self._replies = list(replies)
        self._cycle = cycle
        self._name = name
        self._next = 0
        self.calls: list[ScriptedCall] = []
        self._keep_calls = keep_calls

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Return the next scripted reply; see the class for the guarantees."""
        started = time.perf_counter()
        # A real checkpoint, so cancellation behaves as it does with real providers.
        await asyncio.sleep(0)
        if self._keep_calls:
            self.calls.append(ScriptedCall(tuple(messages), json_schema, max_tokens, temperature))
        if self._next >= len(self._replies):
            if not self._cycle:
                raise ModelScriptError(
                    self._name,
                    f"script exhausted: call {self._next + 1} but only {len(self._replies)} replies scripted",
                )
            self._next = 0
        reply = self._replies[self._next]
        self._next += 1
        text = reply if isinstance(reply, str) else reply(messages)
        sink = token_sink()
        if sink is not None:
            # Streamed as a provider would: a word (with the space after it) per chunk.
            for piece in _WORDS.findall(text):
                sink(piece)
                await asyncio.sleep(0)
        return Generation(
            text=text,
            usage=GenerationUsage.estimate(messages, text),
            finish_reason="stop",
            model=self._name,
            latency_s=time.perf_counter() - started,
        )


class RecordingModel:
    """A `Model` that forwards to `inner` and appends every reply to a JSONL file.

    Guarantees: each successful call appends exactly one line `{"key", "messages",
    "json_schema", "generation"}` (key = `request_key`) before returning the inner model's
    `Generation` unchanged; failures are raised and not recorded. `ReplayModel` reads the file.
    """

    def __init__(self, inner: Model, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def name(self) -> str:
        """The inner model's model string."""
        return self.inner.name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Generate with the inner model and record the reply; see the class."""
        generation = await self.inner.generate(
            messages,
            json_schema=json_schema,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=timeout,
        )
        record = {
            "key": request_key(messages, json_schema),
            "messages": [m.to_dict() for m in messages],
            "json_schema": None if json_schema is None else dict(json_schema),
            "generation": generation.to_dict(),
        }
        # One write per line with no await in between, so concurrent calls cannot interleave.
        with self.path.open("ab") as fh:
            fh.write(orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n")
        return generation


class ReplayModel:
    """A `Model` that answers from a `RecordingModel` file, by request key, without any model.

    Guarantees: a request recorded k times is answered with those k replies in recorded order;
    an unrecorded request, or the (k+1)-th identical one, raises `ModelScriptError`. The replayed
    `Generation` keeps the recorded text, usage and finish reason; `model` is this model's name
    and `latency_s` the replay's own time. A missing or malformed file raises `ModelConfigError`.
    """

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = Path(path)
        self._name = name or f"replay:{self.path}"
        self._replies: dict[str, deque[Generation]] = {}
        self._served: dict[str, int] = {}
        try:
            lines = self.path.read_bytes().splitlines()
        except OSError as exc:
            raise ModelConfigError(self._name, f"cannot read recording: {exc}") from exc
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
                key = str(record["key"])
                generation = Generation.from_dict(record["generation"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ModelConfigError(self._name, f"line {number} is not a recording: {exc!r}") from exc
            self._replies.setdefault(key, deque()).append(generation)

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

    def __len__(self) -> int:
        """How many recorded replies have not been replayed yet."""
        return sum(len(q) for q in self._replies.values())

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Replay the next recorded reply for this request; see the class for the guarantees."""
        started = time.perf_counter()
        await asyncio.sleep(0)
        key = request_key(messages, json_schema)
        queue = self._replies.get(key)
        if not queue:
            served = self._served.get(key, 0)
            why = f"all {served} recorded replies already used" if served else "no recording"
            raise ModelScriptError(
                self._name,
                f"{why} for request {key[:16]} (first user message: {_first_user_line(messages)!r})",
            )
        recorded = queue.popleft()
        self._served[key] = self._served.get(key, 0) + 1
        return Generation(
            text=recorded.text,
            usage=recorded.usage,
            finish_reason=recorded.finish_reason,
            model=self._name,
            latency_s=time.perf_counter() - started,
        )
