"""Walkthrough followers: workers and a model that always play the environment's own winning
commands. They prove a harness end to end (a system driven by them must win every game whose
environment knows its walkthrough), independently of any model's skill."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from slateboard.kernel.canonical import JSON
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
)

from ._protocol import TextEnvironment

if TYPE_CHECKING:
    from slateboard.views import View

__all__ = ["WALKTHROUGH_MODEL", "WalkthroughModel", "walkthrough_functions"]

WALKTHROUGH_MODEL = "walkthrough"
"""The model string the eval harness and the example read as "follow the walkthrough"."""

_WORKER = re.compile(r"You are worker '([^']+)'")
_PLAN_ITEMS = 5  # a short plan, as both the text_actor planner and the peers' planners are asked for
_PLAN_CHARS = 160
_CANDIDATE = "Candidate command: "


def _next(env: TextEnvironment) -> str:
    policy = env.policy()
    return policy[0] if policy else "look"


def _plan(env: TextEnvironment) -> list[str]:
    return [c[:_PLAN_CHARS] for c in env.policy()[:_PLAN_ITEMS]] or ["look"]


def _judge(messages: Sequence[Message], command: str) -> bool:
    """True unless the request shows a candidate command (``Candidate command: X``, the last
    such line) that is not ``command`` (case and spacing aside)."""
    shown: str | None = None
    for m in messages:
        for line in m.content.splitlines():
            if line.startswith(_CANDIDATE):
                shown = line[len(_CANDIDATE) :]
    return shown is None or " ".join(shown.split()).lower() == " ".join(command.split()).lower()


def walkthrough_functions(env: TextEnvironment) -> dict[str, Any]:
    """Function workers for the planner, actor and verifier of a text_actor board that follow
    ``env``'s walkthrough: the plan is the walkthrough from the current state, the actor issues
    its next command, the verifier says ``continue`` for the latest observation. Pass them with
    the environment worker: ``Runner(functions={**walkthrough_functions(env), "environment": ...})``."""

    def planner(view: View) -> list[dict[str, JSON]]:
        # add sets /plan whether or not it exists yet (RFC 6902 add replaces an object member)
        return [{"op": "add", "path": "/plan", "value": list(_plan(env))}]

    def actor(view: View) -> list[dict[str, JSON]]:
        return [{"op": "add", "path": "/actions/-", "value": {"command": _next(env), "why": "the walkthrough"}}]

    def verifier(view: View) -> list[dict[str, JSON]]:
        observations = view.data.get("/observations")
        step = len(observations) - 1 if isinstance(observations, list) else env.commands - 1
        verdict = {"step": step, "status": "continue", "reason": "following the walkthrough"}
        return [{"op": "add", "path": "/verdicts/-", "value": verdict}]

    return {"planner": planner, "actor": actor, "verifier": verifier}


def _typed(system: str, json_schema: Mapping[str, Any] | None) -> bool:
    """True when a slateboard worker asks for a typed reply (one JSON value, not a patch): its
    reply schema has no ``patch`` member, or (without a schema) its prompt asks for a value."""
    if json_schema is not None:
        props = json_schema.get("properties")
        return not (isinstance(props, Mapping) and "patch" in props) and "anyOf" not in json_schema
    return "one JSON value" in system


class WalkthroughModel:
    """A Model (slateboard's protocol) that answers every request with the environment's next
    walkthrough command, shaped for whoever asks:

    * a slateboard text_actor LLM worker (recognised by its prompt, "You are worker 'NAME'"):
      the patch that worker would make (plan = the walkthrough, action = the next command,
      verdict = continue on the latest observation), or for a typed worker (a reply schema
      without ``patch``) the value that patch adds (the command alone when the schema is an
      ``enum`` of commands);
    * a supervisor (a JSON schema that is an ``anyOf`` of tool calls ``{"tool", "args"}`` and an
      answer): each offered tool once per request (the planner once per conversation), in the
      order offered, then ``{"command": next command}``;
    * a request with a JSON schema: an object filling ``command`` with the next command,
      ``plan`` with the walkthrough, ``approve`` with whether the candidate the request shows
      (its last ``Candidate command: X`` line) is the next command (true when it shows none: a
      critic that follows the walkthrough rejects what the walkthrough would not do) and
      ``reason`` with a short text;
    * anything else: the next command as plain text.

    GenerationUsage is estimated from the text (``GenerationUsage.estimate``), like any provider that reports none.
    """

    def __init__(self, env: TextEnvironment) -> None:
        self.env = env
        self.calls = 0

    @property
    def name(self) -> str:
        """``walkthrough``."""
        return WALKTHROUGH_MODEL

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """One reply (see the class)."""
        started = time.perf_counter()
        self.calls += 1
        text = self._reply(messages, json_schema)
        return Generation(
            text=text,
            usage=GenerationUsage.estimate(messages, text),
            finish_reason="stop",
            model=self.name,
            latency_s=time.perf_counter() - started,
        )

    def _reply(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        system = next((m.content for m in messages if m.role == "system"), "")
        worker = _WORKER.search(system)
        if worker is not None:
            patch = self._patch(worker.group(1))
            if _typed(system, json_schema) and patch:
                value = patch[0]["value"]
                if json_schema is not None and "enum" in json_schema and isinstance(value, dict) and "command" in value:
                    value = value["command"]  # the schema asks for the command alone
                return json.dumps(value, separators=(",", ":"))
            return json.dumps({"patch": patch}, separators=(",", ":"))
        if json_schema is not None and isinstance(json_schema.get("anyOf"), list):
            return json.dumps(self._supervise(messages, json_schema["anyOf"]), separators=(",", ":"))
        if json_schema is not None:
            props = json_schema.get("properties")
            keys = set(props) if isinstance(props, Mapping) else set()
            reply: dict[str, JSON] = {}
            if "command" in keys:
                reply["command"] = _next(self.env)
            if "plan" in keys:
                reply["plan"] = list(_plan(self.env))
            approve = _judge(messages, _next(self.env))
            if "approve" in keys:
                reply["approve"] = approve
            if "reason" in keys:
                reply["reason"] = "the walkthrough" if approve else f"the walkthrough says {_next(self.env)!r}"
            return json.dumps(reply, separators=(",", ":"))
        return _next(self.env)

    def _supervise(self, messages: Sequence[Message], options: Sequence[Any]) -> dict[str, JSON]:
        """A supervisor's turn: call each offered tool once since the latest request (a tool
        named ``planner`` only once per conversation), in the order offered, then answer."""
        tools: list[str] = []
        for option in options:
            props = option.get("properties") if isinstance(option, Mapping) else None
            tool = props.get("tool") if isinstance(props, Mapping) else None
            if isinstance(tool, Mapping) and isinstance(tool.get("const"), str):
                tools.append(tool["const"])
        called_ever = {
            t for t in tools for m in messages if m.role == "user" and m.content.startswith(f"Tool result ({t})")
        }
        since = 0
        for i, m in enumerate(messages):
            if m.role == "user" and not m.content.startswith("Tool result ("):
                since = i
        called_now = {t for t in tools for m in messages[since:] if m.content.startswith(f"Tool result ({t})")}
        for t in tools:
            if t in called_now or (t == "planner" and t in called_ever):
                continue
            return {"tool": t, "args": {"request": "the next step"}}
        return {"command": _next(self.env)}

    def _patch(self, worker: str) -> list[dict[str, JSON]]:
        if worker == "planner":
            return [{"op": "add", "path": "/plan", "value": list(_plan(self.env))}]
        if worker == "actor":
            return [{"op": "add", "path": "/actions/-", "value": {"command": _next(self.env)}}]
        if worker == "verifier":
            verdict = {"step": self.env.commands - 1, "status": "continue", "reason": "the walkthrough"}
            return [{"op": "add", "path": "/verdicts/-", "value": verdict}]
        return []
