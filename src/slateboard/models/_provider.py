"""What the HTTP providers (``AnthropicModel``, ``OpenAICompatModel``) share: their name, closing
their client, and one ``generate`` call, streamed or not, under the retry policy."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self, TypeVar

from slateboard.models._http import JsonPoster
from slateboard.models.protocol import Generation, GenerationUsage
from slateboard.models.retry import RetryPolicy, call_with_retries
from slateboard.streaming import TokenSink, token_sink

__all__ = ["HttpModel", "Reply"]

Reply = tuple[str, str, GenerationUsage]
"""A provider's reply as ``generate`` reports it: text, finish reason, usage."""

R = TypeVar("R")


class HttpModel:
    """Base of the HTTP providers: a subclass sets ``_name``, ``_poster``, ``retry`` and
    ``streams`` in its constructor and builds its requests; this class owns the call around them.

    Guarantees: ``generate_with`` makes the streamed attempt when the run streams tokens and the
    model streams, else the plain one, each retried under ``retry`` within ``timeout``; a plain
    reply is parsed once, after the retries (a reply that cannot be parsed is not sent again);
    the ``Generation`` names this model and the wall time of the whole call. ``aclose`` (and
    leaving ``async with``) closes the HTTP client this model created, never an injected one.
    """

    _name: str
    _poster: JsonPoster
    retry: RetryPolicy
    streams: bool

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

    async def generate_with(
        self,
        timeout: float | None,
        *,
        once: Callable[[], Awaitable[R]],
        parse: Callable[[R], Reply],
        streamed: Callable[[TokenSink], Awaitable[Reply]],
    ) -> Generation:
        """One reply: ``streamed(sink)`` when tokens stream, else ``parse(await once())``."""
        started = time.perf_counter()
        sink = token_sink() if self.streams else None
        if sink is not None:
            (text, finish_reason, usage), retries = await call_with_retries(
                self._name, lambda: streamed(sink), policy=self.retry, timeout=timeout
            )
        else:
            response, retries = await call_with_retries(self._name, once, policy=self.retry, timeout=timeout)
            text, finish_reason, usage = parse(response)
        return Generation(
            text=text,
            usage=usage,
            finish_reason=finish_reason,
            model=self._name,
            latency_s=time.perf_counter() - started,
            retries=retries,
        )

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
