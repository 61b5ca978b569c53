"""The one protocol every model provider implements, and the values it exchanges."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from ..errors import InvalidInput

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TIMEOUT",
    "Generation",
    "GenerationUsage",
    "Message",
    "Model",
    "Role",
    "estimate_tokens",
]

Role = Literal["system", "user", "assistant"]
_ROLES: frozenset[str] = frozenset(get_args(Role))

DEFAULT_MAX_TOKENS = 512
# Workers want reproducible proposals; sampling is opt-in.
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT = 120.0

# Chat formats wrap every message in a few special tokens (role header, separators).
_MESSAGE_OVERHEAD_TOKENS = 4


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message; construction guarantees a known role and string content."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise InvalidInput(f"message role must be one of {sorted(_ROLES)}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise TypeError(f"message content must be str, got {type(self.content).__name__}")

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        """An assistant message."""
        return cls("assistant", content)

    def to_dict(self) -> dict[str, str]:
        """The wire shape shared by OpenAI-style APIs: `{"role": ..., "content": ...}`."""
        return {"role": self.role, "content": self.content}


def estimate_tokens(text: str) -> int:
    """A provider-independent token estimate: the larger of the word count and chars/4.

    Used only where a provider reports no usage; always paired with `GenerationUsage.estimated=True`.
    """
    if not text:
        return 0
    quarter = math.ceil(len(text) / 4)
    if text.isascii():
        # A text has at most one word more than it has whitespace characters: when even that
        # bound is below a quarter of its length, the word count (a list of every word, the
        # costly part on a long prompt) cannot win. Deleting bytes counts them in one C pass.
        raw = text.encode("ascii")
        if len(raw) - len(raw.translate(None, _ASCII_SPACE)) + 1 <= quarter:
            return quarter
    return max(len(text.split()), quarter)


_ASCII_SPACE = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
"""The ASCII characters ``str.split()`` splits on (``str.isspace``)."""


@dataclass(frozen=True, slots=True)
class GenerationUsage:
    """Token usage of one generation; `estimated` is True when the provider did not report it.

    What a provider reports for one call. A worker turns the calls of one invocation into the
    kernel's ``Usage`` (tokens in/out, latency, component), which is what the log keeps.
    ``cache_read`` and ``cache_write`` are the prompt tokens the provider served from its prompt
    cache and wrote to it (both part of ``prompt_tokens``; 0 where it reports none), kept as
    reported: a report of more cached than prompt tokens is priced ``unknown``, never clamped.
    """

    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def estimate(cls, messages: Sequence[Message], completion: str) -> GenerationUsage:
        """Estimated usage for `messages` answered by `completion`, marked `estimated=True`."""
        prompt = sum(estimate_tokens(m.content) + _MESSAGE_OVERHEAD_TOKENS for m in messages)
        return cls(prompt, estimate_tokens(completion), estimated=True)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that `from_dict` reads back unchanged (the cache counts only when
        non-zero, so recordings made before they existed read the same)."""
        out: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "estimated": self.estimated,
        }
        if self.cache_read:
            out["cache_read"] = self.cache_read
        if self.cache_write:
            out["cache_write"] = self.cache_write
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerationUsage:
        """Inverse of `to_dict`."""
        return cls(
            int(data["prompt_tokens"]),
            int(data["completion_tokens"]),
            bool(data.get("estimated", False)),
            int(data.get("cache_read", 0)),
            int(data.get("cache_write", 0)),
        )


@dataclass(frozen=True, slots=True)
class Generation:
    """The result of one `Model.generate` call.

    `text` is the reply (JSON text when a schema was given), `finish_reason` uses OpenAI's
    vocabulary where the provider allows (`"stop"`, `"length"`, ...), `model` is the model
    string that produced it, `latency_s` the wall time of the whole call including retries,
    and `retries` how many failed attempts were retried before this reply.
    """

    text: str
    usage: GenerationUsage
    finish_reason: str
    model: str
    latency_s: float
    retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that `from_dict` reads back unchanged."""
        return {
            "text": self.text,
            "usage": self.usage.to_dict(),
            "finish_reason": self.finish_reason,
            "model": self.model,
            "latency_s": self.latency_s,
            "retries": self.retries,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Generation:
        """Inverse of `to_dict`."""
        return cls(
            text=str(data["text"]),
            usage=GenerationUsage.from_dict(data["usage"]),
            finish_reason=str(data["finish_reason"]),
            model=str(data["model"]),
            latency_s=float(data["latency_s"]),
            retries=int(data.get("retries", 0)),
        )


@runtime_checkable
class Model(Protocol):
    """A chat model. Every provider in `slateboard.models` implements exactly this.

    Guarantees of `generate`: it returns a `Generation` whose usage is reported or estimated
    (never missing), or raises a `ModelError` subclass; asyncio cancellation propagates as
    `CancelledError`; `timeout` (seconds, None for no limit) bounds the whole call including
    retries and raises `ModelTimeout`. With `json_schema`, providers that can constrain decoding
    do so, and the reply text is the JSON document (callers still validate it).
    """

    @property
    def name(self) -> str:
        """The model string this model was resolved from (e.g. `openai:gpt-4o-mini`)."""
        ...

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Generate one reply to `messages`."""
        ...
