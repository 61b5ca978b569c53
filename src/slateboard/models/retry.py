"""Bounded retries with exponential backoff and jitter, inside one call's time budget."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from slateboard.errors import InvalidInput
from slateboard.models.errors import (
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)

__all__ = ["RETRYABLE", "RetryPolicy", "call_with_retries"]

logger = logging.getLogger("slateboard.models")

T = TypeVar("T")

RETRYABLE: tuple[type[ModelError], ...] = (ModelRateLimited, ModelServerError, ModelUnavailable)
"""The error classes a retry can fix; any other error is raised at once."""


@dataclass(frozen=True)
class RetryPolicy:
    """How failed attempts are retried.

    At most `max_attempts` attempts are made (1 disables retries). Before retry n (1-based) the
    call waits `d/2 + uniform(0, d/2)` seconds with `d = min(max_delay, base_delay *
    multiplier**(n-1))`, or the server's Retry-After if that is longer. A wait longer than
    `max_retry_after` or than the call's remaining time budget is not taken: the last error is
    raised instead. `rng` and `sleep` are injectable so tests run fast and deterministically.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 20.0
    max_retry_after: float = 120.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidInput(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0 or self.multiplier < 1:
            raise InvalidInput("delays must be >= 0 and multiplier >= 1")

    def backoff(self, retry_number: int) -> float:
        """The jittered wait before retry `retry_number` (1-based), ignoring Retry-After."""
        ceiling = min(self.max_delay, self.base_delay * self.multiplier ** (retry_number - 1))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def delay_for(self, error: ModelError, retry_number: int) -> float:
        """The wait before retry `retry_number` after `error`: backoff, or Retry-After if longer."""
        delay = self.backoff(retry_number)
        if isinstance(error, ModelRateLimited) and error.retry_after is not None:
            delay = max(delay, error.retry_after)
        return delay


async def call_with_retries(
    model: str,
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    timeout: float | None,
) -> tuple[T, int]:
    """Run `attempt` until it succeeds, retrying only `RETRYABLE` errors, within `timeout`.

    Returns the result and how many retries were needed. Each retry is logged at WARNING on
    the `slateboard.models` logger. Raises the last error when attempts run out or the next
    wait would not fit the budget, `ModelTimeout` when the budget runs out mid-attempt, and
    lets `CancelledError` through untouched.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    retries = 0
    try:
        async with asyncio.timeout_at(deadline):
            while True:
                try:
                    return await attempt(), retries
                except RETRYABLE as error:
                    attempt_number = retries + 1
                    if attempt_number >= policy.max_attempts:
                        raise
                    delay = policy.delay_for(error, attempt_number)
                    if delay > policy.max_retry_after:
                        logger.warning("not retrying %s: asked to wait %.1fs", model, delay)
                        raise
                    if deadline is not None and loop.time() + delay >= deadline:
                        logger.warning("not retrying %s: a %.2fs wait exceeds the time budget", model, delay)
                        raise
                    logger.warning(
                        "retrying %s in %.2fs (attempt %d of %d failed: %s)",
                        model,
                        delay,
                        attempt_number,
                        policy.max_attempts,
                        error.detail,
                    )
                    await policy.sleep(delay)
                    retries += 1
    except ModelTimeout:
        raise
    except TimeoutError as exc:
        # Only the budget's own expiry lands here; other errors pass through unchanged.
        detail = "timed out" if timeout is None else f"no reply within {timeout:g}s"
        raise ModelTimeout(model, detail) from exc
