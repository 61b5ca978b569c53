"""The peer systems of the TextWorld suite, on the same interface as the slateboard team.

Every system gets, each turn, the same things from the environment (the objective, the latest
observation, the admissible commands, and what it keeps of the history itself), the same model
(slateboard's Model protocol, wrapped in ``CountingModel`` so every prompt and completion token
of every call is counted) and the same command budget. A command goes to the environment as
the system produced it (matched to an admissible command when the reply is free text); an empty
or unknown one is a wasted turn, as it would be for a player.

* **langgraph-lean**: a lean supervisor-subagent ``StateGraph``. Its supervisor is not a model
  call: the node routes deterministically (Python) on the graph state: the
  planner subagent writes the plan at the start, the actor subagent picks an admissible command
  (decoded from the admissible list, like slateboard's actor), the critic subagent checks the
  candidate (one retry with its critique), and the environment node executes it. Each
  environment turn is a state update. Nodes call the model directly (no LangChain chat model).
* **langgraph**: the baseline as seed 000 (Appendix B.1) describes it, a supervisor that is
  itself a model call with planner/action/critic subagents as tools (see
  ``slateboard_eval.textworld_langgraph``).
* **loomflow**: the published plain blackboard (seed 001), ``loomflow.team.Team.blackboard``,
  one run per environment turn (the turn-level bridge of seed 000's Flock baseline): a planner
  agent and an actor agent contribute in plain text on the shared board in loomflow's
  round-robin order (no coordinator), and the actor's contribution, matched to the admissible
  commands, is the command. The team (and each agent's own memory) lives for the whole episode.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from slateboard.models import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
    Model,
    ModelError,
)

from .envs import History, TextEnvironment, TextTurn, admissible_match, clip
from .prompt_cache import PromptCache

__all__ = [
    "PEER_SYSTEMS",
    "CountingModel",
    "PeerEpisode",
    "context_text",
    "missing_peer",
    "outcome_word",
    "play_langgraph_lean",
    "play_loomflow",
]

PEER_SYSTEMS = ("langgraph-lean", "langgraph", "loomflow")
_HISTORY_LINES = 6
_ADMISSIBLE_SHOWN = 60
_OBS_CHARS = 1200


def missing_peer(system: str) -> str | None:
    """Why ``system`` cannot run here (its package is not installed), or None."""
    import importlib.util

    module = {"langgraph-lean": "langgraph", "langgraph": "langgraph", "loomflow": "loomflow"}.get(system)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    extra = "peers"
    return f"{system} is not installed (pip install 'slateboard[{extra}]')"


ESTIMATE_METHOD = "estimate:chars/4"
PROVIDER_METHOD = "provider"


class TokenCounter(Protocol):
    """Counts one call's tokens with a model's own vocabulary (``GGUFTokenCounter``)."""

    name: str

    def usage(self, messages: Sequence[Message], completion: str) -> GenerationUsage:
        """The prompt and completion tokens of one call."""
        ...

    def count(self, text: str, *, special: bool = False) -> int:
        """Tokens of ``text`` (``special``: chat-template tokens parsed as such)."""
        ...


@dataclass
class CountingModel:
    """Wraps a Model and counts every call's tokens (reported or estimated, never hidden).

    Counting, in order of preference: the provider's usage when it reports it; else, with a
    ``tokenizer``, the model's own vocabulary (the Generation returned carries that count, so a
    board's log holds it too); the chars/4 estimate only as a last resort. ``methods`` names
    every method used (``provider``, ``tokenizer:NAME``, ``estimate:chars/4``). A model failure
    (any ModelError) is counted too and re-raised. Each counted call's prompt also goes to the
    modelled prompt cache (``cache``, ``slateboard_eval.prompt_cache``): what of it an earlier
    call's prompt already began with."""

    inner: Model
    tokenizer: TokenCounter | None = None
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    errors: int = 0
    estimated: bool = False
    methods: set[str] = field(default_factory=set)
    component: str = "model"
    """The component the next calls are counted under (a system sets it before each call)."""
    by_component: dict[str, int] = field(default_factory=dict)
    """Prompt plus completion tokens per component."""
    cache: PromptCache | None = None
    """The modelled prompt cache (default: one counted with ``tokenizer``, else chars/4)."""

    def __post_init__(self) -> None:
        if self.cache is None:
            self.cache = PromptCache(counter=self.tokenizer)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
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
        """Forward to the wrapped model and count."""
        self.calls += 1
        try:
            gen = await self.inner.generate(
                messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature, timeout=timeout
            )
        except ModelError:
            self.errors += 1
            raise
        if not gen.usage.estimated:
            self.methods.add(PROVIDER_METHOD)
        elif self.tokenizer is not None:
            gen = dataclasses.replace(gen, usage=self.tokenizer.usage(messages, gen.text))
            self.methods.add(self.tokenizer.name)
        else:
            self.methods.add(ESTIMATE_METHOD)
            self.estimated = True
        self.tokens_in += gen.usage.prompt_tokens
        self.tokens_out += gen.usage.completion_tokens
        self.by_component[self.component] = self.by_component.get(self.component, 0) + gen.usage.total_tokens
        if self.cache is not None:
            self.cache.add(messages, gen.usage.prompt_tokens)
        return gen

    @property
    def cached(self) -> dict[str, int]:
        """Prompt tokens the modelled cache would have served, per rule (``CACHE_RULES``)."""
        cache = self.cache
        return {"any": cache.any, "min1024": cache.min1024} if cache is not None else {"any": 0, "min1024": 0}

    @property
    def method(self) -> str:
        """How this model's calls were counted: one method, or several joined by ``+``."""
        return "+".join(sorted(self.methods)) or "none"

    @property
    def total(self) -> int:
        """Prompt plus completion tokens so far."""
        return self.tokens_in + self.tokens_out


@dataclass
class PeerEpisode:
    """One episode of a peer system: how it ended and what it cost."""

    won: bool
    lost: bool
    commands: int
    outcome: str
    last: TextTurn | None
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int = 0
    notes: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    """The commands sent to the environment, in order."""

    @classmethod
    def ended(
        cls,
        env: TextEnvironment,
        model: CountingModel,
        history: History,
        max_commands: int,
        *,
        fallback: str = "finished",
        notes: Sequence[str] = (),
    ) -> PeerEpisode:
        """The episode as ``env`` left it (its latest turn, command count and outcome, see
        ``outcome_word``), with what ``model`` counted and the commands ``history`` recorded."""
        last = env.last
        return cls(
            won=bool(last and last.won),
            lost=bool(last and last.lost),
            commands=env.commands,
            outcome=outcome_word(last, env.commands, max_commands, fallback),
            last=last,
            calls=model.calls,
            tokens_in=model.tokens_in,
            tokens_out=model.tokens_out,
            errors=model.errors,
            notes=list(notes),
            trace=[command for command, _ in history.pairs],
        )


def outcome_word(turn: TextTurn | None, commands: int, max_commands: int, fallback: str) -> str:
    """Why a peer episode ended: won, lost, budget, else ``fallback``."""
    if turn is not None and turn.won:
        return "won"
    if turn is not None and turn.lost:
        return "lost"
    if max_commands > 0 and commands >= max_commands:
        return "budget"
    return fallback


def context_text(objective: str, turn: TextTurn, history: History, plan: Sequence[str] = ()) -> str:
    """What a peer's subagent reads: the task, the plan, the recent commands, the observation
    and the admissible commands."""
    lines = [f"Task: {objective}"]
    if plan:
        lines.append("Plan: " + "; ".join(plan))
    recent = history.recent(_HISTORY_LINES)
    if recent:
        lines.append("Recent commands:")
        lines.extend(recent)
    lines.append(f"Observation: {clip(turn.observation, _OBS_CHARS)}")
    if turn.admissible:
        lines.append("Admissible commands: " + ", ".join(turn.admissible[:_ADMISSIBLE_SHOWN]))
    return "\n".join(lines)


async def _ask(
    model: CountingModel, system: str, user: str, schema: dict[str, Any], max_tokens: int, component: str
) -> Any:
    """The model's JSON reply as an object (None when it failed or did not parse)."""
    model.component = component
    try:
        gen = await model.generate(
            [Message.system(system), Message.user(user)], json_schema=schema, max_tokens=max_tokens, temperature=0.0
        )
    except ModelError:
        return None
    try:
        return json.loads(gen.text)
    except ValueError:
        return None


# -- LangGraph ------------------------------------------------------------------------------------
class _TurnState(TypedDict, total=False):
    plan: list[str]
    candidate: str | None
    critique: str | None
    checked: bool
    retries: int
    commands: int
    done: bool


_PLANNER = "You are the planner subagent. Write a short plan (at most 5 steps) to achieve the task."
_ACTOR = "You are the action subagent. Choose the next command for the game, one of the admissible commands."
_CRITIC = "You are the critic subagent. Check the candidate command: approve it if it helps the task."


async def play_langgraph_lean(env: TextEnvironment, model: CountingModel, *, max_commands: int) -> PeerEpisode:
    """One episode of ``langgraph-lean``: the Python-routed graph (see the module docstring)."""
    from langgraph.errors import GraphRecursionError
    from langgraph.graph import END, START, StateGraph

    first = await env.reset()
    history = History()
    box: dict[str, TextTurn] = {"turn": first}

    def supervisor(state: _TurnState) -> dict[str, Any]:
        return {}

    def route(state: _TurnState) -> str:
        if state.get("done"):
            return END
        if not state.get("plan"):
            return "planner"
        if state.get("candidate") is None:
            return "actor"
        if not state.get("checked"):
            return "critic"
        return "environment"

    async def planner(state: _TurnState) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"plan": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "string", "maxLength": 80}}},
            "required": ["plan"],
            "additionalProperties": False,
        }  # fmt: skip
        reply = await _ask(model, _PLANNER, context_text(env.objective, box["turn"], history), schema, 160, "planner")
        plan = [str(p) for p in reply.get("plan", [])] if isinstance(reply, dict) else []
        return {"plan": [p for p in plan if p.strip()] or ["explore and follow the task"]}

    async def actor(state: _TurnState) -> dict[str, Any]:
        turn = box["turn"]
        command_schema: dict[str, Any] = (
            {"enum": list(turn.admissible)} if turn.admissible else {"type": "string", "maxLength": 120}
        )
        schema = {
            "type": "object",
            "properties": {"command": command_schema},
            "required": ["command"],
            "additionalProperties": False,
        }
        user = context_text(env.objective, turn, history, state.get("plan", []))
        if state.get("critique"):
            user += f"\nThe critic rejected your last choice: {state.get('critique')}"
        reply = await _ask(model, _ACTOR, user, schema, 48, "actor")
        raw = str(reply.get("command", "")) if isinstance(reply, dict) else ""
        return {"candidate": admissible_match(raw, turn.admissible), "checked": False}

    async def critic(state: _TurnState) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"approve": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 100}},
            "required": ["approve", "reason"],
            "additionalProperties": False,
        }
        user = context_text(env.objective, box["turn"], history, state.get("plan", []))
        user += f"\nCandidate command: {state.get('candidate')}"
        reply = await _ask(model, _CRITIC, user, schema, 64, "verifier")
        approve = bool(reply.get("approve")) if isinstance(reply, dict) else True
        if approve or state.get("retries", 0) >= 1:
            return {"checked": True}
        reason = str(reply.get("reason", "")) if isinstance(reply, dict) else ""
        return {"candidate": None, "critique": reason or "not helpful", "retries": state.get("retries", 0) + 1}

    async def environment(state: _TurnState) -> dict[str, Any]:
        command = str(state.get("candidate") or "")
        turn = await env.step(command)
        box["turn"] = turn
        history.add(command, turn.observation)
        commands = state.get("commands", 0) + 1
        done = turn.over or (max_commands > 0 and commands >= max_commands)
        return {"candidate": None, "critique": None, "checked": False, "retries": 0, "commands": commands, "done": done}

    graph = StateGraph(_TurnState)
    graph.add_node("supervisor", supervisor)
    graph.add_node("planner", planner)
    graph.add_node("actor", actor)
    graph.add_node("critic", critic)
    graph.add_node("environment", environment)
    graph.add_edge(START, "supervisor")
    for node in ("planner", "actor", "critic", "environment"):
        graph.add_edge(node, "supervisor")
    graph.add_conditional_edges("supervisor", route, ["planner", "actor", "critic", "environment", END])
    app = graph.compile()
    limit = 2 * (6 * max(max_commands, 1) + 10)
    fallback = "finished"
    initial: _TurnState = {
        "plan": [],
        "candidate": None,
        "checked": False,
        "retries": 0,
        "commands": 0,
        "done": first.over,
    }
    try:
        await app.ainvoke(initial, {"recursion_limit": limit})
    except GraphRecursionError:
        fallback = "recursion_limit"
    return PeerEpisode.ended(env, model, history, max_commands, fallback=fallback)


# -- loomflow -------------------------------------------------------------------------------------
_LOOM_MAX_TOKENS = 128
_LOOM_PLANNER = "You are the planner. Say in one or two sentences what to do next to achieve the task."
_LOOM_ACTOR = "You are the actor. Reply with exactly one command from the admissible commands, nothing else."


class LoomModel:
    """loomflow's Model protocol (``complete``/``stream``) over a slateboard CountingModel.

    Messages are passed through (tool messages as user text); a model failure becomes an empty
    reply (counted in ``CountingModel.errors``), so one bad call costs a turn, not the run."""

    def __init__(self, model: CountingModel) -> None:
        self.model = model
        self.name = model.name

    async def complete(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        output_schema: Any | None = None,
        effort: str | None = None,
        strict_effort: bool = False,
        prompt_caching: Any = None,
    ) -> tuple[str, list[Any], Any, str]:
        """One reply: (text, no tool calls, usage, finish reason)."""
        from loomflow.core.types import Usage as LoomUsage

        converted = _loom_messages(messages)
        limit = min(max_tokens or _LOOM_MAX_TOKENS, _LOOM_MAX_TOKENS)
        try:
            gen = await self.model.generate(converted, max_tokens=limit, temperature=0.0)
        except ModelError:
            return "", [], LoomUsage(), "error"
        usage = LoomUsage(input_tokens=gen.usage.prompt_tokens, output_tokens=gen.usage.completion_tokens)
        return gen.text, [], usage, gen.finish_reason or "stop"

    async def stream(self, messages: list[Any], **kwargs: Any) -> AsyncIterator[Any]:
        """The same reply as one text chunk and a finish chunk."""
        from loomflow.core.types import ModelChunk

        text, _, usage, finish = await self.complete(messages, **kwargs)
        yield ModelChunk(kind="text", text=text)
        yield ModelChunk(kind="finish", finish_reason=finish, usage=usage)


def _loom_messages(messages: Sequence[Any]) -> list[Message]:
    """loomflow messages as slateboard messages: consecutive system messages merged, tool
    messages as user text."""
    out: list[Message] = []
    for m in messages:
        role = str(getattr(m, "role", "user"))
        content = str(getattr(m, "content", ""))
        role = role if role in ("system", "user", "assistant") else "user"
        if out and role == "system" and out[-1].role == "system":
            out[-1] = Message.system(out[-1].content + "\n\n" + content)
        else:
            out.append(Message(role, content))  # type: ignore[arg-type]
    return out


async def play_loomflow(env: TextEnvironment, model: CountingModel, *, max_commands: int) -> PeerEpisode:
    """One episode on loomflow's Team.blackboard (see the module docstring)."""
    from loomflow.agent.api import Agent
    from loomflow.team import Team

    loom = LoomModel(model)
    team = Team.blackboard(
        {
            "planner": Agent(model=loom, instructions=_LOOM_PLANNER),
            "actor": Agent(model=loom, instructions=_LOOM_ACTOR),
        },
        model=loom,
        max_rounds=2,
    )
    turn = await env.reset()
    history = History()
    unmatched = 0
    while not turn.over and (max_commands <= 0 or env.commands < max_commands):
        result = await team.run(context_text(env.objective, turn, history))
        output = str(getattr(result, "output", "") or "")
        command = admissible_match(output, turn.admissible)
        unmatched += bool(turn.admissible) and command not in turn.admissible
        turn = await env.step(command)
        history.add(command, turn.observation)
    return PeerEpisode.ended(
        env,
        model,
        history,
        max_commands,
        notes=[f"{unmatched} replies matched no admissible command"] if unmatched else [],
    )
