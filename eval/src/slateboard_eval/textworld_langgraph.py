"""The ``langgraph`` system of the TextWorld suite, as seed 000 (Appendix B.1) describes its
LangGraph baseline: a supervisor that is itself a model call, coordinating planner, action and
critic subagents exposed to it as tools, with message passing.

Built from LangGraph's own prebuilt pieces: a ``StateGraph`` over ``MessagesState`` whose
``supervisor`` node calls a LangChain chat model bound to the tools, ``ToolNode`` runs the tool
calls and ``tools_condition`` routes between them (the ReAct loop ``create_react_agent`` builds,
without the deprecated wrapper). The chat model is ``SlateChatModel``: slateboard's Model
protocol (wrapped in ``CountingModel``, so every call is counted) behind LangChain's
``BaseChatModel``; a tool call is decoded as ``{"tool": NAME, "args": {...}}`` and the final
answer as ``{"command": ...}`` constrained to the admissible commands.

Each environment turn is one ``ainvoke`` of the graph with a human message carrying the
observation and the admissible commands (the same interface as every system); the supervisor's
conversation (every message, tool call and tool result) is passed on from turn to turn, as a
LangGraph supervisor keeps its thread. Each subagent is one model call with its own prompt (the
task, its plan, the latest observation, the admissible commands and the recent history the
system keeps itself, as ``langgraph-lean`` gives its nodes). The supervisor's final answer,
matched to an admissible command, goes to the environment.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

from slateboard.models import Message, ModelError

from .envs import History, TextEnvironment, TextTurn, admissible_match
from .textworld_peers import CountingModel, PeerEpisode, context_text

__all__ = ["SUPERVISOR_PROMPT", "play_langgraph_supervisor"]

SUPERVISOR_PROMPT = (
    "You are the supervisor of a team playing a text game. Coordinate your subagents by calling "
    "them as tools: planner (writes the plan), actor (proposes the next command), critic (checks "
    'a proposed command). When you have a command you trust, answer {"command": COMMAND} with '
    "one of the admissible commands."
)
_PLANNER = "You are the planner subagent. Write a short plan (at most 5 steps) to achieve the task."
_ACTOR = "You are the action subagent. Choose the next command for the game, one of the admissible commands."
_CRITIC = "You are the critic subagent. Check the candidate command: approve it if it helps the task."
_TURN_RECURSION = 24
"""LangGraph steps one turn may take (supervisor and tool nodes alternate)."""


def _lc_to_messages(messages: Sequence[Any]) -> list[Message]:
    """LangChain messages as slateboard messages: the supervisor's tool calls as the JSON it
    decoded, tool results as user text naming the tool."""
    from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

    out: list[Message] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append(Message.system(str(m.content)))
        elif isinstance(m, AIMessage):
            if m.tool_calls:
                call = m.tool_calls[0]
                out.append(Message.assistant(json.dumps({"tool": call["name"], "args": call["args"]})))
            else:
                out.append(Message.assistant(str(m.content)))
        elif isinstance(m, ToolMessage):
            out.append(Message.user(f"Tool result ({m.name}): {m.content}"))
        else:
            out.append(Message.user(str(m.content)))
    return out


def _chat_model_class() -> type[Any]:
    """``SlateChatModel``, defined on first use so that importing this module needs no LangChain."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import ConfigDict

    class SlateChatModel(BaseChatModel):
        """A LangChain chat model over a slateboard CountingModel (see the module docstring)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        counting: Any
        admissible: Any = None
        """A zero-argument callable returning the admissible commands of the current turn."""

        @property
        def _llm_type(self) -> str:
            return "slateboard"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError("SlateChatModel is asynchronous only")

        async def _agenerate(
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            tools = kwargs.get("tools") or []
            options: list[dict[str, Any]] = []
            for t in tools:
                fn = t.get("function", {})
                params = fn.get("parameters") or {"type": "object"}
                options.append(
                    {
                        "type": "object",
                        "properties": {"tool": {"const": fn.get("name")}, "args": params},
                        "required": ["tool", "args"],
                        "additionalProperties": False,
                    }
                )
            commands = list(self.admissible() if self.admissible is not None else [])
            command: dict[str, Any] = {"enum": commands} if commands else {"type": "string", "maxLength": 120}
            options.append(
                {
                    "type": "object",
                    "properties": {"command": command},
                    "required": ["command"],
                    "additionalProperties": False,
                }
            )
            schema = {"anyOf": options}
            self.counting.component = "supervisor"
            try:
                gen = await self.counting.generate(
                    _lc_to_messages(messages), json_schema=schema, max_tokens=96, temperature=0.0
                )
                reply = json.loads(gen.text)
            except (ModelError, ValueError):
                reply = None
            if isinstance(reply, dict) and isinstance(reply.get("tool"), str):
                args = reply.get("args") if isinstance(reply.get("args"), dict) else {}
                n = sum(1 for m in messages if getattr(m, "type", "") == "ai")
                message = AIMessage(content="", tool_calls=[{"name": reply["tool"], "args": args, "id": f"call_{n}"}])
            else:
                text = str(reply.get("command", "")) if isinstance(reply, dict) else ""
                message = AIMessage(content=text)
            return ChatResult(generations=[ChatGeneration(message=message)])

    return SlateChatModel


async def _ask(model: CountingModel, component: str, system: str, user: str, schema: dict[str, Any]) -> Any:
    model.component = component
    try:
        gen = await model.generate(
            [Message.system(system), Message.user(user)], json_schema=schema, max_tokens=160, temperature=0.0
        )
        return json.loads(gen.text)
    except (ModelError, ValueError):
        return None


async def play_langgraph_supervisor(env: TextEnvironment, model: CountingModel, *, max_commands: int) -> PeerEpisode:
    """One episode on the supervisor graph (see the module docstring)."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import StructuredTool
    from langgraph.errors import GraphRecursionError
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    first = await env.reset()
    history = History()
    box: dict[str, Any] = {"turn": first, "plan": [], "candidate": ""}

    async def planner(request: str = "") -> str:
        """Write a short plan for the task from the latest observation."""
        schema = {
            "type": "object",
            "properties": {"plan": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "string", "maxLength": 80}}},
            "required": ["plan"],
            "additionalProperties": False,
        }  # fmt: skip
        user = context_text(env.objective, box["turn"], history) + (f"\nSupervisor: {request}" if request else "")
        reply = await _ask(model, "planner", _PLANNER, user, schema)
        plan = [str(p) for p in reply.get("plan", [])] if isinstance(reply, dict) else []
        box["plan"] = [p for p in plan if p.strip()] or ["explore and follow the task"]
        return "Plan: " + "; ".join(box["plan"])

    async def actor(request: str = "") -> str:
        """Propose the next command, one of the admissible commands."""
        turn: TextTurn = box["turn"]
        command_schema: dict[str, Any] = (
            {"enum": list(turn.admissible)} if turn.admissible else {"type": "string", "maxLength": 120}
        )
        schema = {
            "type": "object",
            "properties": {"command": command_schema},
            "required": ["command"],
            "additionalProperties": False,
        }
        user = context_text(env.objective, turn, history, box["plan"]) + (f"\nSupervisor: {request}" if request else "")
        reply = await _ask(model, "actor", _ACTOR, user, schema)
        raw = str(reply.get("command", "")) if isinstance(reply, dict) else ""
        box["candidate"] = admissible_match(raw, turn.admissible)
        return f"Proposed command: {box['candidate']}"

    async def critic(request: str = "") -> str:
        """Check the proposed command: approve it or say why not."""
        schema = {
            "type": "object",
            "properties": {"approve": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 100}},
            "required": ["approve", "reason"],
            "additionalProperties": False,
        }
        user = context_text(env.objective, box["turn"], history, box["plan"])
        user += f"\nCandidate command: {box['candidate']}"
        reply = await _ask(model, "verifier", _CRITIC, user, schema)
        approve = bool(reply.get("approve")) if isinstance(reply, dict) else True
        reason = str(reply.get("reason", "")) if isinstance(reply, dict) else ""
        return f"{'Approved' if approve else 'Rejected'}: {reason}".strip()

    tools = [StructuredTool.from_function(coroutine=f, name=f.__name__) for f in (planner, actor, critic)]
    chat = _chat_model_class()(counting=model, admissible=lambda: list(box["turn"].admissible)).bind_tools(tools)

    async def supervisor(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("supervisor", supervisor)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", tools_condition)
    graph.add_edge("tools", "supervisor")
    app = graph.compile()

    messages: list[Any] = [SystemMessage(SUPERVISOR_PROMPT)]
    turn = first
    stalled = 0
    while not turn.over and (max_commands <= 0 or env.commands < max_commands):
        messages.append(HumanMessage(_turn_text(env.objective, turn)))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                out = await app.ainvoke({"messages": messages}, {"recursion_limit": _TURN_RECURSION})
            messages = list(out["messages"])
            answer = str(messages[-1].content or "")
        except GraphRecursionError:
            stalled += 1
            answer = box["candidate"]
        command = admissible_match(answer, turn.admissible)
        turn = await env.step(command)
        history.add(command, turn.observation)
    return PeerEpisode.ended(
        env, model, history, max_commands, notes=[f"{stalled} turns hit the recursion limit"] if stalled else []
    )


def _turn_text(objective: str, turn: TextTurn) -> str:
    text = f"Task: {objective}\nObservation: {turn.observation}"
    if turn.admissible:
        text += "\nAdmissible commands: " + ", ".join(turn.admissible)
    return text
