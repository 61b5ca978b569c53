"""Retry logic: which errors are retried, backoff and Retry-After, budgets, logging, cancellation.

Driven through `OpenAICompatModel` over an in-process `httpx.MockTransport`, and through
`call_with_retries` directly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random

import httpx
import pytest
from models_testkit import RecordingSleep, chat_completion

from slateboard.models import (
    Message,
    ModelAuthError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
    OpenAICompatModel,
    RetryPolicy,
)
from slateboard.models.retry import call_with_retries

ASK = [Message.user("hi")]


def scripted_transport(
    *steps: httpx.Response | Exception,
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client whose n-th request gets the n-th step (the last step repeats)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = steps[min(len(seen), len(steps)) - 1]
        if isinstance(step, Exception):
            raise step
        # A fresh response per request: httpx responses are single-use streams.
        return httpx.Response(step.status_code, headers=step.headers, content=step.content)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def model_over(client: httpx.AsyncClient, policy: RetryPolicy) -> OpenAICompatModel:
    return OpenAICompatModel("m", base_url="http://mock/v1", client=client, retry=policy)


OK = httpx.Response(200, json=chat_completion("fine", usage={"prompt_tokens": 5, "completion_tokens": 1}))


async def test_429_with_retry_after_is_retried_after_the_requested_wait(
    fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    client, seen = scripted_transport(httpx.Response(429, headers={"retry-after": "3"}), OK)
    generation = await model_over(client, fast_retry).generate(ASK)
    assert generation.text == "fine"
    assert generation.retries == 1
    assert len(seen) == 2
    assert sleeps.delays == [3.0]


async def test_5xx_and_connection_errors_are_retried_until_attempts_run_out(
    fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    client, seen = scripted_transport(httpx.ConnectError("refused"), httpx.Response(502), httpx.Response(503))
    with pytest.raises(ModelServerError, match="HTTP 503"):
        await model_over(client, fast_retry).generate(ASK)
    assert len(seen) == 4
    assert len(sleeps.delays) == 3


async def test_success_after_failures_counts_the_retries(fast_retry: RetryPolicy) -> None:
    client, _ = scripted_transport(httpx.ConnectError("refused"), httpx.Response(500), httpx.ReadError("reset"), OK)
    generation = await model_over(client, fast_retry).generate(ASK)
    assert generation.retries == 3
    assert generation.usage.prompt_tokens == 5
    assert not generation.usage.estimated


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, ModelRequestError), (401, ModelAuthError), (403, ModelAuthError), (404, ModelNotFound)],
)
async def test_client_errors_are_not_retried(
    status: int, error: type[Exception], fast_retry: RetryPolicy, sleeps: RecordingSleep
) -> None:
    client, seen = scripted_transport(httpx.Response(status, json={"error": {"message": "no"}}))
    with pytest.raises(error):
        await model_over(client, fast_retry).generate(ASK)
    assert len(seen) == 1
    assert sleeps.delays == []


async def test_connection_errors_exhaust_into_model_unavailable(fast_retry: RetryPolicy) -> None:
    client, seen = scripted_transport(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(ModelUnavailable, match="Connection refused"):
        await model_over(client, fast_retry).generate(ASK)
    assert len(seen) == fast_retry.max_attempts


async def test_max_attempts_one_disables_retries(sleeps: RecordingSleep) -> None:
    client, seen = scripted_transport(httpx.Response(500))
    with pytest.raises(ModelServerError):
        await model_over(client, RetryPolicy(max_attempts=1, sleep=sleeps)).generate(ASK)
    assert len(seen) == 1


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(base_delay=1.0, multiplier=2.0, max_delay=5.0, rng=random.Random(1))
    for retry_number, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delay = policy.backoff(retry_number)
        assert ceiling / 2 <= delay <= ceiling


def test_backoff_is_reproducible_from_the_injected_rng() -> None:
    first = RetryPolicy(rng=random.Random(42))
    second = RetryPolicy(rng=random.Random(42))
    assert [first.backoff(n) for n in range(1, 6)] == [second.backoff(n) for n in range(1, 6)]


def test_retry_after_only_lengthens_the_wait() -> None:
    policy = RetryPolicy(base_delay=4.0, rng=random.Random(0))
    short = ModelRateLimited("m", "slow down", retry_after=0.5)
    assert policy.delay_for(short, 1) >= 2.0
    assert policy.delay_for(ModelRateLimited("m", "x", retry_after=9.0), 1) == 9.0


def test_invalid_policies_are_rejected() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(multiplier=0.5)


async def test_each_retry_is_logged(fast_retry: RetryPolicy, caplog: pytest.LogCaptureFixture) -> None:
    client, _ = scripted_transport(httpx.Response(500, text="oops"), httpx.Response(429), OK)
    with caplog.at_level(logging.WARNING, logger="slateboard.models"):
        await model_over(client, fast_retry).generate(ASK)
    retries = [r for r in caplog.records if r.name == "slateboard.models" and "retrying" in r.message]
    assert len(retries) == 2
    assert "attempt 1 of 4" in retries[0].message
    assert "HTTP 500" in retries[0].message


async def test_a_wait_beyond_the_time_budget_fails_fast(sleeps: RecordingSleep) -> None:
    client, seen = scripted_transport(httpx.Response(429, headers={"retry-after": "600"}))
    model = model_over(client, RetryPolicy(sleep=sleeps))
    with pytest.raises(ModelRateLimited) as info:
        await model.generate(ASK, timeout=30)
    assert info.value.retry_after == 600.0
    assert len(seen) == 1
    assert sleeps.delays == []


async def test_a_wait_beyond_max_retry_after_is_not_taken(sleeps: RecordingSleep) -> None:
    client, seen = scripted_transport(httpx.Response(429, headers={"retry-after": "5000"}))
    with pytest.raises(ModelRateLimited):
        await model_over(client, RetryPolicy(sleep=sleeps)).generate(ASK, timeout=None)
    assert len(seen) == 1


async def test_the_budget_covers_the_whole_call() -> None:
    async def never() -> str:
        await asyncio.Event().wait()
        return "unreachable"

    with pytest.raises(ModelTimeout, match=r"no reply within 0\.05s") as info:
        await call_with_retries("m", never, policy=RetryPolicy(), timeout=0.05)
    assert isinstance(info.value, TimeoutError)


async def test_cancellation_propagates_and_stops_retrying(sleeps: RecordingSleep) -> None:
    attempts = 0
    started = asyncio.Event()

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    task = asyncio.create_task(call_with_retries("m", flaky, policy=RetryPolicy(sleep=sleeps), timeout=None))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert attempts == 1
    assert sleeps.delays == []


async def test_request_payload_shape(fast_retry: RetryPolicy) -> None:
    client, seen = scripted_transport(OK)
    model = OpenAICompatModel("gpt-x", base_url="http://mock/v1/", api_key="sk-1", client=client, retry=fast_retry)
    schema = {"title": "My Answer!", "type": "object"}
    await model.generate(ASK, json_schema=schema, max_tokens=33, temperature=0.3)
    request = seen[0]
    assert request.url == "http://mock/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-1"
    body = json.loads(request.content)
    assert body["model"] == "gpt-x"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert (body["max_tokens"], body["temperature"]) == (33, 0.3)
    assert body["response_format"] == {
        "type": "json_schema",
        # An object schema without additionalProperties: false is not strict-mode material.
        "json_schema": {"name": "My_Answer_", "schema": schema, "strict": False},
    }
