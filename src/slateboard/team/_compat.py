"""What loomflow users write, checked and translated at construction time.

``Agent(...)`` and ``Team.blackboard(...)`` accept the calling conventions of seed 004 (loomflow's
documented blackboard): positional instructions and agents, bare model names, and a budget
object whose ``allows_step()`` takes no arguments. loomflow keywords slateboard has no use for
are refused at construction, each with the slateboard feature that does the job instead, so a
port fails on the first line that needs attention rather than in the middle of a run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UsageError
from ..models import Model, ModelConfigError
from ..models.anthropic import AnthropicModel
from ..models.openai_compat import OpenAICompatModel, is_openai_host
from ..models.registry import ACCEPTED_FORMS, normalise_model_string

__all__ = [
    "AGENT_EQUIVALENTS",
    "RUN_EQUIVALENTS",
    "TEAM_EQUIVALENTS",
    "UnsupportedOption",
    "check_model",
    "output_token_limit",
    "refuse_unsupported",
    "seed_budget",
]


class UnsupportedOption(UsageError, TypeError):
    """A loomflow keyword slateboard does not take; the message names what to use instead.

    A ``TypeError`` like any unexpected keyword, and a ``UsageError`` (the caller must change the
    call)."""


_SHARED: dict[str, str] = {
    "memory": "the board is the team's memory; an agent keeps private notes by replying "
    '{"content": ..., "note": ...}; pass store= to Team.blackboard to keep boards across runs',
    "runtime": "pass store= (a Store or a URL such as sqlite:///boards.db) to Team.blackboard",
    "permissions": "every change is a proposal checked against the board's contracts by the kernel",
    "guardrails": "every change is a proposal checked against the board's contracts by the kernel",
    "hooks": "subscribe to events with on_event= on Team.blackboard / team.run, or team.events()",
    "stop_hooks": "the coordinator ends the run (terminate) or max_rounds / budget= does",
    "telemetry": "slateboard.telemetry (OpenTelemetry spans for every model call)",
    "audit_log": "the board's record log in its store (verify with slateboard.kernel.replay)",
    "rate_limiter": "the model's RetryPolicy (resolve_model(..., retry=...)) handles 429s",
    "skills": "give the agent tools=[...]",
    "workspace": "pass store= to Team.blackboard; the board persists there",
    "living_plan": "not available; the board is the shared plan",
    "run_until": "the coordinator's terminate decision, max_rounds or budget=",
    "auto_extract": "not available",
    "approval_handler": "approval= on Team.blackboard (a callable deciding each held contribution; approval_paths= "
    "chooses what is held), or a blueprint's approval gates with the Runner",
    "output_schema": "a board blueprint with a state schema (slateboard.blueprint) gives typed output",
    "effort": "not available; choose the model instead",
    "strict_effort": "not available; choose the model instead",
    "prompt_caching": "not available",
    "tool_result_summarizer": "not available; keep tool results short",
    "snip_window": "view_budget= on Team.blackboard bounds every prompt",
    "auto_compact_at_tokens": "view_budget= on Team.blackboard bounds every prompt",
    "auto_compact_summariser": "view_budget= on Team.blackboard bounds every prompt",
    "auto_compact_keep_recent_turns": "view_budget= on Team.blackboard bounds every prompt",
    "persist_tool_transcripts": "tool calls are recorded in the record's diagnostics",
    "tool_transcript_max_bytes": "tool calls are recorded in the record's diagnostics",
    "retry_policy": "pass a resolved model: resolve_model(name, retry=RetryPolicy(...))",
    "secrets": "API keys come from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)",
    "response_tone": "put it in the agent's instructions",
    "tuning": "not available",
}

AGENT_EQUIVALENTS: dict[str, str] = {
    **_SHARED,
    "budget": "pass budget= to Team.blackboard (it is checked before every round)",
    "max_turns": "max_tool_calls= (tool calls per invocation)",
    "architecture": "Team.blackboard builds the architecture",
}
"""loomflow ``Agent`` keywords slateboard refuses, with what to use instead."""

TEAM_EQUIVALENTS: dict[str, str] = {
    **_SHARED,
    "instructions": "coordinator_instructions= / decider_instructions=, or each Agent's instructions",
    "tools": "give each Agent its tools=[...]",
    "max_turns": "max_rounds= (and max_tool_calls= on each Agent)",
    "auto_consolidate": "not available",
    "persistent_subagents": "agents are stateless between rounds; the board carries their context",
}
"""loomflow ``Team.blackboard`` keywords slateboard refuses, with what to use instead."""


RUN_EQUIVALENTS: dict[str, str] = {
    "emit": "on_event= (called with each RunEvent; async callbacks are awaited)",
    "user_id": "not available: one board per run; keep per-user boards in separate stores or names",
    "session_id": "each run creates a board; its id is result.run_id (board_id)",
    "metadata": "name= on Team.blackboard names the board; the board's meta records the agents",
    "context": "not available",
    "extra_tools": "give each Agent its tools=[...]",
    "output_schema": "a board blueprint with a state schema (slateboard.blueprint) gives typed output",
    "output_validation_retries": "not available",
    "response_tone": "put it in the agents' instructions",
    "effort": "not available; choose the model instead",
}
"""loomflow ``run`` keywords slateboard refuses, with what to use instead."""


def refuse_unsupported(where: str, given: Mapping[str, Any], equivalents: Mapping[str, str]) -> None:
    """Raise ``UnsupportedOption`` naming every keyword in ``given`` (loomflow's, with our
    equivalent, or unknown), or return when ``given`` is empty."""
    if not given:
        return
    parts = []
    for key in given:
        if key in equivalents:
            parts.append(f"{key}= (loomflow) is not supported: {equivalents[key]}")
        else:
            parts.append(f"unexpected keyword {key}=")
    raise UnsupportedOption(f"{where}: " + "; ".join(parts))


def check_model(model: object, what: str) -> None:
    """Raise at construction for a model that can never resolve: a string in none of the
    accepted forms (``ModelConfigError`` listing them) or something that is neither a string nor
    a ``Model`` (``TypeError``). None (use the team's model) passes."""
    if model is None or isinstance(model, Model):
        return
    if not isinstance(model, str):
        raise TypeError(f"{what}: model must be a model string or a Model, got {type(model).__name__}")
    if not model.strip():
        raise ModelConfigError(model, f"{what}: empty model string; accepted: {ACCEPTED_FORMS}")
    normalise_model_string(model)


# Documented maximum output tokens per model family (longest prefix wins). Anthropic's API
# requires max_tokens and rejects values above the model's maximum, so "no cap" means exactly
# this number; OpenAI's API rejects values above the model's maximum too.
_ANTHROPIC_MAX_OUTPUT = (
    ("claude-3-haiku", 4096),
    ("claude-3-opus", 4096),
    ("claude-3-sonnet", 4096),
    ("claude-3-5", 8192),
    ("claude-3-7", 64000),
    ("claude-sonnet-4", 64000),
    ("claude-haiku-4", 64000),
    ("claude-opus-4-5", 64000),
    ("claude-opus-4", 32000),  # opus-4, 4-1, and later ids not listed here: the safe documented value
)
_OPENAI_MAX_OUTPUT = (
    ("gpt-3.5", 4096),
    ("gpt-4-turbo", 4096),
    ("gpt-4o", 16384),
    ("gpt-4o-2024-05-13", 4096),
    ("chatgpt-4o", 16384),
    ("gpt-4.1", 32768),
    ("gpt-4", 8192),
    ("gpt-5", 128000),
    ("o1-mini", 65536),
    ("o1-preview", 32768),
    ("o1", 100000),
    ("o3", 100000),
    ("o4", 100000),
)
_ANTHROPIC_DEFAULT = 8192
_OTHER_DEFAULT = 16384
LOCAL_OUTPUT_TOKENS = 256
"""The default ``max_tokens`` of an agent on an in-process model: the whole context (4,096) made
the README's team take 12 minutes on the 135M default model, which repeats itself until the
cap; 256 tokens is a paragraph, and the run takes seconds. Set ``Agent(max_tokens=...)`` for
more."""


def _lookup(model_id: str, table: tuple[tuple[str, int], ...]) -> int | None:
    lower = model_id.lower()
    best: tuple[int, int] | None = None
    for prefix, limit in table:
        if lower.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), limit)
    return best[1] if best is not None else None


def output_token_limit(model: Model) -> int:
    """The ``max_tokens`` sent when the user set none: the provider's own documented maximum
    output of the model where it is known (Anthropic and OpenAI model families), the context size
    a model run in process (``n_ctx`` known) gets ``LOCAL_OUTPUT_TOKENS`` (at most a quarter of
    its context, so the prompt always fits beside it), else 16,384 (OpenAI-compatible servers
    stop at their context anyway). Never the 512 of ``DEFAULT_MAX_TOKENS`` for a hosted model,
    which cut real answers mid-sentence."""
    model_id = str(getattr(model, "model_id", "") or "")
    if isinstance(model, AnthropicModel):
        return _lookup(model_id, _ANTHROPIC_MAX_OUTPUT) or _ANTHROPIC_DEFAULT
    if isinstance(model, OpenAICompatModel) and is_openai_host(model.base_url):
        return _lookup(model_id, _OPENAI_MAX_OUTPUT) or _OTHER_DEFAULT
    n_ctx = getattr(model, "n_ctx", None)
    if isinstance(n_ctx, int) and n_ctx > 0:
        return max(1, min(LOCAL_OUTPUT_TOKENS, n_ctx // 4))
    return _OTHER_DEFAULT


class _SeedBudget:
    """A budget written for seed 004 (``allows_step()`` without arguments, sync or async, whose
    result has ``blocked`` and ``reason``) seen as a slateboard ``BudgetPolicy``."""

    def __init__(self, budget: Any, status: Callable[[bool, str | None], Any]) -> None:
        self.budget = budget
        self.status = status

    async def allows_step(self, spent: Any) -> Any:
        status = self.budget.allows_step()
        if inspect.isawaitable(status):
            status = await status
        blocked = bool(getattr(status, "blocked", False))
        reason = getattr(status, "reason", None)
        return self.status(blocked, str(reason) if reason is not None else ("blocked" if blocked else None))


def _takes_spend(method: Any) -> bool:
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)


def seed_budget(budget: Any, status: Callable[[bool, str | None], Any]) -> Any:
    """``budget`` as slateboard calls it (``await allows_step(spent)``): unchanged when its
    ``allows_step`` takes the spend, wrapped when it takes no positional argument (loomflow's
    ``allows_step(*, user_id=None)``), the wrapper answering ``status(blocked, reason)``.
    TypeError for an object without ``allows_step``."""
    method = getattr(budget, "allows_step", None)
    if not callable(method):
        raise TypeError(f"budget must have an allows_step method, got {type(budget).__name__}")
    return budget if _takes_spend(method) else _SeedBudget(budget, status)
