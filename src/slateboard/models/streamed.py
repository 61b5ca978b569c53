"""A model call whose tokens reach the run's ``tokens`` stream when someone streams it."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from slateboard.models.protocol import Generation, Message, Model
from slateboard.streaming import TokenSink, open_sink, sink_installed

__all__ = ["generate"]


def generate(
    model: Model,
    messages: Sequence[Message],
    *,
    json_schema: Mapping[str, Any] | None = None,
    max_tokens: int,
    temperature: float,
    timeout: float | None,
) -> Awaitable[Generation]:
    """``model.generate(...)``, returning exactly what the model returned; when the run streams
    tokens (``slateboard.streaming``) a provider that can stream hands its chunks to the call's
    sink as they arrive, and the chunks of the call's last attempt joined equal the returned
    text (a model that cannot stream yields its reply as one chunk). The sink is opened when
    this is called; when none is (nobody streams), what is returned is the model's own call,
    so no coroutine of this module waits on it."""
    sink = open_sink(model.name)
    if sink is None:
        return model.generate(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature, timeout=timeout
        )
    return _streamed(sink, model, messages, json_schema, max_tokens, temperature, timeout)


async def _streamed(
    sink: TokenSink,
    model: Model,
    messages: Sequence[Message],
    json_schema: Mapping[str, Any] | None,
    max_tokens: int,
    temperature: float,
    timeout: float | None,
) -> Generation:
    with sink_installed(sink):
        gen = await model.generate(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature, timeout=timeout
        )
    sink.settle(gen.text)
    return gen
