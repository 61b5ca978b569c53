"""The blackboard coordinator protocol: its prompt, its JSON answer, and tolerant parsing.

The coordinator answers ``{"terminate": bool, "next_agent": str | null, "instruction": str | null}``.
``parse_coordinator_decision`` reads that from whatever the model wrote (the bare object, a
fenced code block, or an object inside prose); when no object can be found the decision is the
conservative no-op: do not terminate, no contributor this round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..kernel.jsonvalue import utf8_text
from ..scheduling.coordinator import parse_json_object

__all__ = [
    "DEFAULT_COORDINATOR_INSTRUCTIONS",
    "ROUND_ROBIN_RAW",
    "CoordinatorDecision",
    "coordinator_prompt",
    "coordinator_schema",
    "parse_coordinator_decision",
    "round_robin_decision",
]

DEFAULT_COORDINATOR_INSTRUCTIONS = """\
You lead a team of specialist agents working on one problem through a shared blackboard.
Read the blackboard below, then decide:
- whether to stop now (a satisfactory answer is already on the board);
- if not, which agent should contribute next;
- what that agent should do next, in one instruction.

Agents:
{agents}

Reply with exactly one JSON object:
{{"terminate": <true|false>, "next_agent": <agent name or null>, "instruction": <text or null>}}
When you stop, set next_agent and instruction to null.
"""

ROUND_ROBIN_RAW = "(round-robin fallback)"
"""The ``raw`` text of decisions made without a coordinator."""


@dataclass(frozen=True, slots=True)
class CoordinatorDecision:
    """One round's decision. ``parsed`` is False when no JSON object could be read (the
    decision is then the no-op); ``raw`` is the coordinator's text."""

    terminate: bool
    next_agent: str | None
    instruction: str | None
    raw: str
    parsed: bool = True


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes")
    if isinstance(value, (int, float)):
        return value != 0
    return False


def parse_coordinator_decision(text: str) -> CoordinatorDecision:
    """Read a coordinator's answer tolerantly (see module docstring); never raises.

    ``terminate`` is true only for a JSON true (or the strings "true"/"yes", or a non-zero
    number); ``next_agent`` and ``instruction`` are kept as text (whitespace around the agent
    name is dropped) or None when missing or null; the strings "", "null" and "none" (any case)
    are read as null, as models write them and as loomflow does.
    """
    # A lone surrogate (a "\\ud800" escape) cannot be logged: it becomes U+FFFD, here and below.
    text = utf8_text(text)
    obj = parse_json_object(text, keys=("terminate", "next_agent", "instruction"))
    if obj is None:
        return CoordinatorDecision(False, None, None, text, parsed=False)
    agent_raw = obj.get("next_agent")
    instruction_raw = obj.get("instruction")
    agent = utf8_text(str(agent_raw)).strip() if agent_raw is not None else None
    return CoordinatorDecision(
        terminate=_truthy(obj.get("terminate", False)),
        next_agent=agent if agent is not None and agent.lower() not in ("", "null", "none") else None,
        instruction=utf8_text(str(instruction_raw)) if instruction_raw is not None else None,
        raw=text,
    )


def round_robin_decision(names: Sequence[str], round_num: int) -> CoordinatorDecision:
    """Without a coordinator: agent ``(round_num - 1) mod n`` in configuration order."""
    return CoordinatorDecision(False, names[(round_num - 1) % len(names)], None, ROUND_ROBIN_RAW)


def coordinator_prompt(template: str, agents: Mapping[str, str], board: str) -> str:
    """The coordinator's user prompt: ``template`` with ``{agents}`` filled in (one line per agent
    with the first 120 characters of its instructions), then the board."""
    listing = "\n".join(f"  - {name}: {(role or '(no description)')[:120]}" for name, role in agents.items())
    return template.format(agents=listing) + f"\n\nBlackboard state:\n{board}"


def coordinator_schema(names: Sequence[str]) -> dict[str, Any]:
    """A JSON schema of the answer, for providers that constrain decoding (``next_agent`` limited
    to the configured names or null)."""
    return {
        "type": "object",
        "properties": {
            "terminate": {"type": "boolean"},
            "next_agent": {"anyOf": [{"type": "string", "enum": list(names)}, {"type": "null"}]},
            "instruction": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["terminate", "next_agent", "instruction"],
        "additionalProperties": False,
    }
