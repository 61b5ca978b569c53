"""The definition of a team member: ``Agent``, its role, model, tools and call settings.

An ``Agent`` is a role (its instructions become the system prompt), a model, and optional tools.
Every setting is checked here, at construction, so a team built from agents only meets valid
ones; how an agent is called is ``slateboard.team._agent_call``, and how its reply becomes a
board proposal is ``slateboard.team._agent``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..models import Model
from ..workers.tools import Tool, as_tool
from ._compat import AGENT_EQUIVALENTS, check_model, refuse_unsupported

__all__ = ["Agent"]


@dataclass(frozen=True, init=False)
class Agent:
    """One role of a team: ``instructions`` (its system prompt), ``model`` (a Model, a model
    string, or None for the team's model), and ``tools`` it may call before answering.

    Written as in loomflow: ``Agent("instructions", model="claude-opus-4-7", tools=[...])``.
    Guarantees at construction: ``instructions`` is a string; a model string is in one of the
    accepted forms (bare ``claude-*``/``gpt-*``/``o1*``/``o3*``/``o4*``/``gemini-*`` names,
    litellm ``provider/model``, ``PROVIDER:MODEL``), else ``ModelConfigError`` listing them;
    ``max_tokens`` (None: the provider's own maximum output, see
    ``slateboard.team._compat.output_token_limit``), ``max_tool_calls``, ``temperature`` and
    ``timeout`` are in range, else ValueError/TypeError; tool names are unique; loomflow keywords
    slateboard does not take (``memory``, ``hooks``, ``budget``...) raise ``UnsupportedOption``
    naming the equivalent. ``tools`` holds Tools or plain callables; ``...`` entries (the
    placeholder of the documented usage example) are ignored. ``name`` is informational (the
    team's ``agents`` mapping names the agent on the board).

    ``output_type`` (a pydantic model, or any type pydantic expresses as a JSON Schema) makes the
    agent's replies typed: its JSON Schema goes into the board's state schema where the agent
    writes the value (``/outputs/<agent>/-`` for an agent, ``/answer`` for the decider), so the
    kernel rejects a reply that does not fit at stage ``schema``, the agent retries with that
    feedback, the schema is sent for constrained decoding, and ``TeamResult.output`` is an
    instance. A type that has no JSON Schema is a ``BlueprintError`` naming the agent, raised
    when the team is built.
    """

    instructions: str
    model: Model | str | None
    tools: Sequence[Tool | Callable[..., Any] | Any]
    max_tokens: int | None
    temperature: float
    max_tool_calls: int
    timeout: float | None
    name: str | None
    output_type: Any
    _tools: tuple[Tool, ...] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        instructions: str = "",
        *,
        model: Model | str | None = None,
        tools: Sequence[Tool | Callable[..., Any] | Any] | Tool | Callable[..., Any] | None = (),
        max_tokens: int | None = None,
        temperature: float = 0.0,
        max_tool_calls: int = 4,
        timeout: float | None = 120.0,
        name: str | None = None,
        output_type: Any = None,
        **unsupported: Any,
    ) -> None:
        refuse_unsupported("Agent", unsupported, AGENT_EQUIVALENTS)
        if not isinstance(instructions, str):
            raise TypeError(f"Agent instructions must be a string, got {type(instructions).__name__}")
        check_model(model, "Agent")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise InvalidInput(f"Agent max_tokens must be a positive integer or None, got {max_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0.0 <= temperature <= 2.0:
            raise InvalidInput(f"Agent temperature must be a number in [0, 2], got {temperature!r}")
        if isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int) or max_tool_calls < 0:
            raise InvalidInput(f"Agent max_tool_calls must be an integer >= 0, got {max_tool_calls!r}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise InvalidInput(f"Agent timeout must be a positive number of seconds or None, got {timeout!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Agent name must be a string, got {type(name).__name__}")
        if tools is None:
            tools = ()
        elif isinstance(tools, Tool) or callable(tools):
            tools = (tools,)  # loomflow accepts a single tool too
        elif isinstance(tools, str) or not isinstance(tools, Sequence):
            raise TypeError(f"Agent tools must be a list of tools or callables, got {type(tools).__name__}")
        built = tuple(as_tool(t) for t in tools if t is not Ellipsis)
        names = [t.name for t in built]
        if len(set(names)) != len(names):
            raise InvalidInput(f"duplicate tool names: {names}")
        for key, value in (
            ("instructions", instructions),
            ("model", model),
            ("tools", tuple(tools)),
            ("max_tokens", max_tokens),
            ("temperature", float(temperature)),
            ("max_tool_calls", max_tool_calls),
            ("timeout", timeout),
            ("name", name),
            ("output_type", output_type),
            ("_tools", built),
        ):
            object.__setattr__(self, key, value)

    @property
    def tool_list(self) -> tuple[Tool, ...]:
        """The agent's tools (placeholders removed)."""
        return self._tools
