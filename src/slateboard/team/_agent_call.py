"""One agent's model call: its system prompt, its tool calls, and the reply it ends with.

``run_agent`` is the only place a team member's model is called (agents, the coordinator and
the decider alike): the spend guard reserves each call first, each call is a telemetry span,
and tool-call replies are executed up to the agent's ``max_tool_calls``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import telemetry
from ..kernel.canonical import JSON
from ..kernel.record import Usage
from ..models import Message, Model, ModelError, streamed
from ..scheduling.coordinator import parse_json_object
from ..workers.llm import SpendHook, guarded_call
from ..workers.tools import Tool
from ._agent_spec import Agent
from ._compat import output_token_limit

__all__ = ["AgentReply", "run_agent"]


@dataclass(frozen=True, slots=True)
class AgentReply:
    """What one agent run produced: the final text, summed usage, tool calls, and the error
    (model failure) if any."""

    text: str
    usage: Usage
    tool_calls: tuple[JSON, ...] = ()
    error: str | None = None
    spend_settled: str | None = None
    """Set when a call was booked on the spend ledgers at its worst case (no usage reported)."""


def _tool_help(tools: Sequence[Tool]) -> str:
    import orjson

    lines = ["", "Tools you may call before answering:"]
    for t in tools:
        params = orjson.dumps(dict(t.parameters or {})).decode("utf-8")
        lines.append(f"- {t.name}: {t.description or '(no description)'} args schema: {params}")
    lines.append('To call one, reply with only {"tool": "<name>", "args": {...}}; you will then get its result.')
    return "\n".join(lines)


async def run_agent(
    agent: Agent,
    model: Model,
    prompt: str,
    *,
    json_schema: Mapping[str, Any] | None = None,
    spend: SpendHook | None = None,
) -> AgentReply:
    """Run ``agent`` on ``prompt`` with ``model``: its instructions as the system message, tool
    calls (``{"tool": name, "args": {...}}`` replies naming one of its tools) executed up to
    ``max_tool_calls``, and the last reply returned. Never raises for a model failure: the reply
    then carries ``error`` and the text so far. With ``spend`` (a run's spend guard) every model
    call reserves its worst case first (``workers.llm.guarded_call``); a refused reservation is
    such a failure (``SpendRefused``), and the call is not made."""
    started = time.perf_counter()
    tools = agent.tool_list
    user = prompt + (_tool_help(tools) if tools else "")
    messages: list[Message] = []
    if agent.instructions.strip():
        messages.append(Message.system(agent.instructions))
    messages.append(Message.user(user))
    tin = tout = read = written = 0
    calls: list[JSON] = []
    text = ""
    settled: str | None = None
    # No user cap: the provider's own maximum, not a framework default that cuts answers short.
    max_tokens = agent.max_tokens if agent.max_tokens is not None else output_token_limit(model)

    def usage() -> Usage:
        return Usage(tin, tout, round((time.perf_counter() - started) * 1000.0, 3), "worker", read, written)

    try:
        while True:
            allow = bool(tools) and len(calls) < agent.max_tool_calls
            # telemetry hook (issue 17): a GenAI "chat {model}" span per model call
            with telemetry.model_span(model.name, max_tokens=max_tokens, temperature=agent.temperature) as sp:
                gen, worst = await guarded_call(
                    spend,
                    model.name,
                    messages,
                    max_tokens,
                    functools.partial(
                        streamed.generate,  # the model's own generate; its tokens streamed when wanted
                        model,
                        messages,
                        json_schema=json_schema if not tools else None,
                        max_tokens=max_tokens,
                        temperature=agent.temperature,
                        timeout=agent.timeout,
                    ),
                )
                telemetry.record_generation(sp, gen)
            settled = worst or settled
            tin += gen.usage.prompt_tokens
            tout += gen.usage.completion_tokens
            read += gen.usage.cache_read
            written += gen.usage.cache_write
            text = gen.text
            if not allow:
                break
            obj = parse_json_object(text, keys=("tool",))
            found = next((t for t in tools if obj is not None and obj.get("tool") == t.name), None)
            if found is None or obj is None:
                break
            raw_args = obj.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            result = await found.call(args)
            calls.append({"tool": found.name, "ok": result.ok})
            left = agent.max_tool_calls - len(calls)
            tail = f"You may call {left} more tool(s), or give your answer." if left else "Give your answer now."
            messages = [*messages, Message.assistant(text), Message.user(f"{result.message()}\n{tail}")]
    except (ModelError, TimeoutError) as exc:
        return AgentReply(text, usage(), tuple(calls), f"{type(exc).__name__}: {exc}", settled)
    return AgentReply(text, usage(), tuple(calls), spend_settled=settled)
