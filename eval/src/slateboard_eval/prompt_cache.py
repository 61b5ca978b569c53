"""A provider's prompt cache, modelled over the calls of one episode (issue 42).

Providers bill the part of a prompt that repeats the start of an earlier prompt at a cached
rate (OpenAI automatically, half the input price for gpt-4o-mini; Anthropic on the prefix marked
``cache_control``; DeepSeek automatically). The eval harnesses talk to the walkthrough or to a
model that reports no cache, so the cache is modelled: ``PromptCache`` keeps every prompt an
episode sent, in the order sent, and says for each new one how many of its tokens are a prefix
some earlier prompt of the episode already had (the longest such prefix). The same model is
applied to every system, since every system's model goes through the same ``CountingModel``.

Two rules are counted for each call:

* ``any``: every repeated prefix token is a cache read (an upper bound on what a cache saves);
* ``min1024``: OpenAI's published rule: nothing under 1,024 prefix tokens, then in steps of 128.

Prompts are compared as their chat rendering (ChatML, as ``GGUFTokenCounter`` counts them) and
the prefix is counted with the same tokenizer (chars/4 without one), never above the call's
prompt tokens. A cache lives for one episode; no write surcharge is modelled (OpenAI has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from slateboard.models import Message

__all__ = ["CACHE_RULES", "CACHE_STEP", "MIN_CACHED_TOKENS", "CacheCounts", "PromptCache", "cached_under_minimum"]

MIN_CACHED_TOKENS = 1024
"""OpenAI's (and Anthropic's Sonnet/Opus) smallest cacheable prefix, in tokens."""
CACHE_STEP = 128
"""OpenAI caches a prefix over the minimum in steps of this many tokens."""
CACHE_RULES = ("any", "min1024")
"""The rules a ``PromptCache`` counts (see the module docstring)."""


class PrefixCounter(Protocol):
    """Counts the tokens of a text (``GGUFTokenCounter.count``)."""

    def count(self, text: str, *, special: bool = False) -> int:
        """Tokens of ``text``; ``special`` parses chat-template tokens."""
        ...


def render(messages: Sequence[Message]) -> str:
    """A prompt as one text, in the ChatML form the tokenizer counts prompts in."""
    return "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)


def cached_under_minimum(tokens: int) -> int:
    """The prefix tokens OpenAI bills as cached for a repeated prefix of ``tokens`` tokens:
    0 under ``MIN_CACHED_TOKENS``, else the minimum plus whole ``CACHE_STEP`` steps."""
    if tokens < MIN_CACHED_TOKENS:
        return 0
    return MIN_CACHED_TOKENS + (tokens - MIN_CACHED_TOKENS) // CACHE_STEP * CACHE_STEP


def _common(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


_CHUNK = 64
"""Prompts are indexed by the running hash of their 64-character chunks, so a new prompt finds
the longest prefix any earlier one shares in one pass (then refined within a chunk)."""


@dataclass(frozen=True, slots=True)
class CacheCounts:
    """One call's prompt tokens read from the modelled cache, under each rule."""

    any: int = 0
    min1024: int = 0


@dataclass
class PromptCache:
    """The prompts of one episode and what each new one could read from a prefix cache."""

    counter: PrefixCounter | None = None
    seen: list[str] = field(default_factory=list)
    _index: dict[int, int] = field(default_factory=dict, repr=False)
    """Running hash of a prefix of whole chunks -> the first prompt that had it."""
    any: int = 0
    """Prompt tokens read from the cache so far, any repeated prefix counted."""
    min1024: int = 0
    """Prompt tokens read from the cache so far under OpenAI's rule (``cached_under_minimum``)."""

    def add(self, messages: Sequence[Message], prompt_tokens: int) -> CacheCounts:
        """Count the call that sent ``messages`` (``prompt_tokens`` as counted for it) and keep
        its prompt for the calls after it."""
        text = render(messages)
        chars = self._longest(text)
        self._keep(text)
        if not chars:
            return CacheCounts()
        prefix = text[:chars]
        tokens = self.counter.count(prefix, special=True) if self.counter is not None else chars // 4
        tokens = max(0, min(tokens, prompt_tokens))
        counts = CacheCounts(tokens, cached_under_minimum(tokens))
        self.any += counts.any
        self.min1024 += counts.min1024
        return counts

    def _longest(self, text: str) -> int:
        """The longest prefix of ``text`` that an earlier prompt of the episode starts with."""
        if not self.seen:
            return 0
        key, at = 0, 0
        while at + _CHUNK <= len(text):
            following = hash((key, text[at : at + _CHUNK]))
            if following not in self._index:
                break
            key, at = following, at + _CHUNK
        earlier = self.seen[self._index[key]]
        return at + _common(text[at : at + _CHUNK], earlier[at : at + _CHUNK])

    def _keep(self, text: str) -> None:
        number = len(self.seen)
        self.seen.append(text)
        key, at = 0, 0
        self._index.setdefault(key, number)
        while at + _CHUNK <= len(text):
            key, at = hash((key, text[at : at + _CHUNK])), at + _CHUNK
            self._index.setdefault(key, number)
