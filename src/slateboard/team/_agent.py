"""Agents of a team and the workers that turn their free-text replies into board proposals.

An ``Agent`` is a role (its instructions become the system prompt), a model, and optional tools.
Agents reply in plain text, so any model works, even a tiny local one; ``AgentWorker`` wraps the
reply into one entry authored by the agent and proposes the patch that appends it (and signs it,
see slateboard.team._board). The kernel still decides: the patch is authorised, schema-checked
and checked against the board's invariants like any other proposal.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import telemetry
from ..blueprint.output_type import OutputType
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.kernel import DECLINE_KEY, declined_reason
from ..kernel.pointer import escape_token, is_array_index
from ..kernel.record import Usage
from ..models import Message, Model, ModelError, resolve_model, streamed
from ..scheduling.coordinator import parse_json_object
from ..views import View
from ..workers.base import Feedback, WorkerReply, feedback_lines
from ..workers.llm import SpendHook, guarded_call
from ..workers.parse import parse_value
from ..workers.tools import Tool, as_tool
from ._board import DECIDER_WORKER, PROBLEM_ID, SYSTEM_AUTHOR, USER_AUTHOR, PublicIndex, make_entry
from ._compat import AGENT_EQUIVALENTS, check_model, output_token_limit, refuse_unsupported

__all__ = [
    "DEFAULT_DECIDER_INSTRUCTIONS",
    "Agent",
    "AgentReply",
    "AgentWorker",
    "BoardShown",
    "DeciderWorker",
    "bounded_board",
    "fallback_answer",
    "render_board",
    "run_agent",
    "typed_instructions",
]

Clock = Callable[[], datetime]

DEFAULT_DECIDER_INSTRUCTIONS = """\
Write the final answer to the task from the blackboard discussion below. Give the best answer
the board supports, refer to specific entries where it helps, and mention disagreement when it
matters."""

_REF = re.compile(r"\[([A-Za-z0-9_.:-]{1,64})\]")


def _utcnow() -> datetime:
    return datetime.now(UTC)


def agent_declined(text: str) -> str | None:
    """The reason when an agent's reply is a decline, else None: the reply is the JSON object
    ``{"decline": "why"}`` alone (that one member, a string), maybe in a code fence, the form
    every worker declines with (``slateboard.kernel.kernel.DECLINE_KEY``). Prose around it, or
    a contribution object (``{"content": ...}``), is a contribution."""
    stripped = text.strip()
    fenced = _WHOLE_FENCE.fullmatch(stripped)
    if fenced is not None:
        stripped = fenced.group(1).strip()
    if not stripped.startswith("{"):
        return None
    try:
        return declined_reason(json.loads(stripped))
    except ValueError:
        return None


_WHOLE_FENCE = re.compile(r"```[A-Za-z]*\n(.*)\n```", re.S)


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
    tin = tout = 0
    calls: list[JSON] = []
    text = ""
    settled: str | None = None
    # No user cap: the provider's own maximum, not a framework default that cuts answers short.
    max_tokens = agent.max_tokens if agent.max_tokens is not None else output_token_limit(model)

    def usage() -> Usage:
        return Usage(tin, tout, round((time.perf_counter() - started) * 1000.0, 3), "worker")

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


# -- rendering ------------------------------------------------------------------------------------
Shown = Mapping[str, Any] | str
"""A board entry to render, or an already rendered line (a summary of an entry not shown)."""


def _index_of(path: str | None, prefix: str) -> int | None:
    if path is None or not path.startswith(prefix):
        return None
    rest = path[len(prefix) :]
    return int(rest) if is_array_index(rest) else None


def _range_start(handle_id: str) -> int | None:
    """``a`` of a range handle id ``[a:b]``, else None."""
    if not (handle_id.startswith("[") and handle_id.endswith("]")):
        return None
    start = handle_id[1:-1].split(":", 1)[0]
    return int(start) if start.isdigit() else None


def _shown_at(view: View, pointer: str) -> tuple[list[Shown], int]:
    """What the view shows of the entry array at ``pointer``, in board order: whole entries, and
    for entries the budget left out a summary line (``<id> … <start of the entry>``); plus how
    many entries are only covered by range handles (not shown at all)."""
    shown, hidden, _first = _shown_with_first(view, pointer)
    return shown, hidden


def _shown_with_first(view: View, pointer: str) -> tuple[list[Shown], int, bool]:
    """``_shown_at`` plus whether the array's first item (the problem, on the public board) is
    shown whole."""
    return _shown_arrays(view, (pointer,))[pointer]


def _shown_arrays(view: View, pointers: Sequence[str]) -> dict[str, tuple[list[Shown], int, bool]]:
    """``_shown_with_first`` for several arrays, in one pass over the view's pointers (hundreds
    per prompt): an item of an array is a key ``"<pointer>/<index>"`` (the view's pointers are
    canonical: no leading zeros)."""
    data = view.data
    found: dict[str, list[tuple[int, Shown]]] = {p: [] for p in pointers}
    for pointer, items in found.items():
        whole = data.get(pointer)
        if isinstance(whole, list):
            items.extend((i, e) for i, e in enumerate(whole) if isinstance(e, dict))
    for key, value in data.items():
        head, _, tail = key.rpartition("/")
        into = found.get(head)
        if into is not None and tail.isdigit() and isinstance(value, dict):
            into.append((int(tail), value))
    first = {p: any(i == 0 for i, _ in items) for p, items in found.items()}
    hidden = dict.fromkeys(pointers, 0)
    for h in view.handles:
        into = found.get(h.pointer)
        if into is None:
            continue
        index = _index_of(h.path, h.pointer + "/")
        if index is None:
            hidden[h.pointer] += h.items or 0
        else:
            into.append((index, f"{h.id} (shortened) {h.summary or ''}"))
    out: dict[str, tuple[list[Shown], int, bool]] = {}
    for pointer, items in found.items():
        items.sort(key=lambda kv: kv[0])
        out[pointer] = ([item for _, item in items], hidden[pointer], first[pointer])
    return out


@dataclass(frozen=True, slots=True)
class BoardShown:
    """The public board as one view shows it: ``public`` items in board order (entries, or
    summary lines of shortened ones), ``hidden`` entries covered by range handles only,
    ``problem`` the pinned problem statement to show first when the view does not show the
    problem entry whole (None when it does, or when the view has no pinned ``/task``)."""

    public: list[Shown]
    hidden: int
    problem: str | None

    @property
    def complete(self) -> bool:
        """True when every public entry is shown whole (nothing shortened, hidden or pinned)."""
        return not self.hidden and self.problem is None and not any(isinstance(e, str) for e in self.public)


def _public_shown(view: View, shown: tuple[list[Shown], int, bool] | None = None) -> BoardShown:
    """The public board of ``view`` with the problem statement pinned: when the budget cut or
    shortened the first entry (the problem), the pinned ``/task`` stands in for it, so every
    prompt built from a view states the problem whatever the board's size. ``shown`` is
    ``_shown_with_first(view, "/public")`` when the caller has it already."""
    public, hidden, first_whole = shown if shown is not None else _shown_with_first(view, "/public")
    task = view.data.get("/task")
    if first_whole or not isinstance(task, str):
        return BoardShown(public, hidden, None)
    if public and isinstance(public[0], str) and public[0].startswith(f"{PROBLEM_ID} (shortened)"):
        public = public[1:]  # its summary is replaced by the whole pinned problem
    elif hidden and any(h.pointer == "/public" and _range_start(h.id) == 0 for h in view.handles):
        hidden -= 1  # the problem is the first of the range's entries
    return BoardShown(public, hidden, task)


def _entries_only(shown: Sequence[Shown]) -> list[dict[str, Any]]:
    return [dict(e) for e in shown if not isinstance(e, str)]


def _line(entry: Shown, private: bool = False) -> str:
    if isinstance(entry, str):
        return entry
    kind = entry.get("kind", "contribution")
    refs = entry.get("references") or []
    tail = f" (refs: {', '.join(str(r) for r in refs)})" if refs else ""
    if private:
        return f"{entry.get('id', '?')} [private:{kind}] {entry.get('content', '')}{tail}"
    return f"{entry.get('id', '?')} [{kind}] {entry.get('author', '?')}: {entry.get('content', '')}{tail}"


def render_board(
    public: Sequence[Shown],
    private: Sequence[Shown] = (),
    *,
    hidden_public: int = 0,
    hidden_private: int = 0,
    problem: str | None = None,
) -> str:
    """The board as text: every public entry, then the reader's own private notes, or
    ``(empty)``. One line per entry: ``<id> [<kind>] <author>: <content>``; string items are
    lines already rendered (summaries of entries a bounded view shortened). ``problem`` (the
    pinned problem statement of a view that cut the problem entry) comes first, as that entry's
    line, then the count of entries not shown."""
    parts: list[str] = []
    lines = [_line(e) for e in public]
    if hidden_public:
        lines.insert(0, f"({hidden_public} earlier entries not shown)")
    if problem is not None:
        lines.insert(0, _problem_line(problem))
    if lines:
        parts.append("=== Public board ===\n" + "\n".join(lines))
    notes = [_line(e, private=True) for e in private]
    if hidden_private:
        notes.insert(0, f"({hidden_private} earlier notes not shown)")
    if notes:
        parts.append("=== Your private notes ===\n" + "\n".join(notes))
    return "\n\n".join(parts) if parts else "(empty)"


def _problem_line(problem: str) -> str:
    return f"{PROBLEM_ID} [problem] {USER_AUTHOR}: {problem}"


def bounded_board(public: Sequence[Mapping[str, Any]], budget: int) -> str:
    """The public board as text within ``budget`` characters plus the problem: the first entry
    (the problem statement) always whole, then the newest entries that fit, newest kept, and a
    line counting the earlier entries left out with their id range (their handles). Same line
    format as ``render_board``; equal to ``render_board(public)`` when that fits the budget.

    Cost: O(entries shown), independent of the board's length. This is the coordinator's
    digest, bounded like every worker's view (issue 15)."""
    if not public:
        return "(empty)"
    head = _line(public[0])
    lines: list[str] = []
    used = 0
    index = len(public) - 1
    while index >= 1:
        line = _line(public[index])
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
        index -= 1
    if index >= 1:
        first, last = public[1].get("id", "?"), public[index].get("id", "?")
        lines.append(f"({index} earlier entries not shown: {first} to {last})")
    lines.append(head)
    lines.reverse()
    return "=== Public board ===\n" + "\n".join(lines)


def fallback_answer(public: Sequence[Mapping[str, Any]]) -> str:
    """The answer without a decider: the last ``answer``-kind entry, else the last contribution
    (an entry by an agent, i.e. not by ``user`` or ``system``), else ``""``."""
    for entry in reversed(public):
        if entry.get("kind") == "answer":
            return str(entry.get("content", ""))
    for entry in reversed(public):
        if entry.get("author") not in (USER_AUTHOR, SYSTEM_AUTHOR):
            return str(entry.get("content", ""))
    return ""


# -- typed replies --------------------------------------------------------------------------------
def typed_instructions(output: OutputType[Any]) -> str:
    """The prompt lines asking for a typed reply: the schema itself, for providers that do not
    constrain decoding (those that do get the same schema as ``json_schema``)."""
    schema = json.dumps(output.schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"Reply with only one JSON value that matches this JSON Schema:\n{schema}"


def _refused(view: View | None, feedback: Feedback) -> str:
    lines = feedback_lines(view, feedback)
    return ("\n\nYour previous reply was refused: " + "; ".join(lines)) if lines else ""


# -- workers --------------------------------------------------------------------------------------
def _event_field(event: JSON, key: str) -> Any:
    return event.get(key) if isinstance(event, dict) else None


class AgentWorker:
    """The worker of one agent: prompt with the board view and the coordinator's instruction,
    wrap the text reply into one public entry authored by the agent, propose appending it.

    Guarantees: the proposed patch appends exactly one public entry whose ``author`` is this
    worker's name, with a fresh id (``e<n>``), the ``timestamp`` from the worker's clock (so it is
    part of the logged patch), references to existing entries cited as ``[id]`` in the text, and
    the signature op the board requires. A reply that is a JSON object with a string ``content``
    may also set ``kind`` (not ``problem``/``error``), ``references`` and a private ``note`` (an
    entry appended to the agent's own scratchpad). A model failure gives an empty patch with
    ``diagnostics["model_error"]``, which the kernel rejects at stage ``model`` (the provider
    failed), with the error in the diagnostics. Never raises for a
    model or tool failure.
    """

    kind = "agent"

    def __init__(
        self,
        name: str,
        agent: Agent,
        model: Model | str | None = None,
        *,
        state: Callable[[], JSON] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._name = name
        self.agent = agent
        self.model: Model = resolve_model(model if model is not None else (agent.model or "local"))
        self.state = state
        self.clock: Clock = clock or _utcnow
        self._index = PublicIndex()
        self.output: OutputType[Any] | None = (
            OutputType.of(agent.output_type, f"agents/{name}/output_type") if agent.output_type is not None else None
        )
        """The agent's checked ``output_type`` (None: plain-text replies)."""
        self.spend: SpendHook | None = None
        """Set by a run with a spend cap (``Budget(max_cost=...)``): each model call reserves first."""

    @property
    def name(self) -> str:
        """The blueprint worker (the agent's name)."""
        return self._name

    def prompt(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> str:
        """The user prompt of one invocation (deterministic in its inputs)."""
        pad = f"/private/{escape_token(self._name)}"
        arrays = _shown_arrays(view, ("/public", pad))
        shown = _public_shown(view, arrays["/public"])
        private, hidden_p, _first = arrays[pad]
        board = render_board(
            shown.public, private, hidden_public=shown.hidden, hidden_private=hidden_p, problem=shown.problem
        )
        instruction = _event_field(event, "instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            instruction = f"Contribute to the blackboard as {self._name}."
        text = f"You are {self._name}.\n\nBlackboard state:\n{board}\n\nCoordinator instruction: {instruction}\n\n"
        if self.output is not None:
            return text + typed_instructions(self.output) + _refused(view, feedback)
        text += (
            "Write ONE contribution in plain text. Be concrete, and cite earlier entries by their id "
            "in brackets (for example [e2]) when you build on them."
        )
        lines = feedback_lines(view, feedback)
        if lines:
            text += "\n\nYour previous contribution was refused: " + "; ".join(lines)
        return text

    def _ids(self, view: View) -> tuple[Container[str], int, int]:
        state = self.state() if self.state is not None else None
        if isinstance(state, dict) and isinstance(state.get("public"), list):
            # The committed board's ids through an incremental index: O(1) in the board's size
            # (the board is append-only), where a set of every id costs O(N) per contribution.
            public = state["public"]
            priv = state.get("private")
            mine = priv.get(self._name) if isinstance(priv, dict) else None
            return self._index.sync(public), len(public), len(mine) if isinstance(mine, list) else 0
        items, hidden = _shown_at(view, "/public")
        notes, hidden_p = _shown_at(view, f"/private/{escape_token(self._name)}")
        ids = {str(e.get("id")) for e in _entries_only(items)} | {
            e.split(" ", 1)[0] for e in items if isinstance(e, str)
        }
        return ids, len(items) + hidden, len(notes) + hidden_p

    def entry_patch(self, text: str, view: View) -> tuple[list[dict[str, JSON]], dict[str, JSON]]:
        """The patch appending ``text`` as this agent's entry, and the entry itself. A typed
        agent's patch also appends the reply's JSON value to ``/outputs/<agent>`` (where the
        board's schema is the agent's ``output_type``); its entry's content is that value's JSON
        text (the reply text when it holds no JSON value: the kernel then rejects the patch)."""
        known, count, notes = self._ids(view)
        entry_id = f"e{count + 1}"
        kind = "contribution"
        content = text.strip()
        refs: list[str] = []
        note: str | None = None
        obj = parse_json_object(content) if self.output is None else None
        typed: JSON = None
        if self.output is not None:
            typed = parse_value(content)
            if not (isinstance(typed, str) and typed == content):
                # Read: the entry shows the value as plain JSON (no fence or prose around it).
                content = json.dumps(typed, ensure_ascii=False)
        if obj is not None and isinstance(obj.get("content"), str) and content.lstrip().startswith(("{", "`")):
            content = obj["content"]
            k = obj.get("kind")
            if (
                isinstance(k, str)
                and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]{0,31}", k)
                and k not in ("problem", "error")
            ):
                kind = k
            raw_refs = obj.get("references")
            if isinstance(raw_refs, list):
                refs = [r for r in raw_refs if isinstance(r, str)]
            if isinstance(obj.get("note"), str) and obj["note"].strip():
                note = obj["note"]
        for m in _REF.finditer(content):
            refs.append(m.group(1))
        refs = [r for i, r in enumerate(refs) if r in known and r not in refs[:i]][:64]
        now = self.clock()
        entry = make_entry(entry_id, self._name, content, kind=kind, references=refs, at=now)
        tok = escape_token(self._name)
        ops: list[dict[str, JSON]] = [
            {"op": "add", "path": "/public/-", "value": entry},
            {"op": "add", "path": f"/signatures/{tok}", "value": entry_id},
        ]
        if note is not None:
            ops.append(
                {
                    "op": "add",
                    "path": f"/private/{tok}/-",
                    "value": make_entry(f"{self._name}.n{notes + 1}", self._name, note, kind="note", at=now),
                }
            )
        if self.output is not None:
            ops.append({"op": "add", "path": f"/outputs/{tok}/-", "value": typed})
        return ops, entry

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Run the agent and propose its entry (see class docstring)."""
        reply = await run_agent(
            self.agent,
            self.model,
            self.prompt(view, event, feedback=feedback),
            json_schema=self.output.schema if self.output is not None else None,
            spend=self.spend,
        )
        diagnostics: dict[str, JSON] = {"kind": self.kind, "model": self.model.name}
        if reply.spend_settled is not None:
            diagnostics["spend_settled"] = reply.spend_settled
        if reply.tool_calls:
            diagnostics["tool_calls"] = list(reply.tool_calls)
        if reply.error is not None:
            # The kernel rejects at stage "model" with this text, and the agent's next prompt
            # says the provider failed (not that its plain-text answer was "not valid JSON").
            diagnostics["error"] = reply.error
            diagnostics["model_error"] = f"the model call failed (provider error): {reply.error}"
            return WorkerReply("", reply.usage, diagnostics=diagnostics, raw=reply.text)
        declined = agent_declined(reply.text)
        if declined is not None:
            # Nothing to add: the kernel logs a no-op at stage ``decline`` (never an entry whose
            # content is the JSON text), in sequential and parallel rounds alike.
            return WorkerReply({DECLINE_KEY: declined}, reply.usage, diagnostics=diagnostics, raw=reply.text)
        ops, entry = self.entry_patch(reply.text, view)
        diagnostics["entry"] = entry["id"]
        return WorkerReply(ops, reply.usage, diagnostics=diagnostics, raw=reply.text)


class DeciderWorker:
    """The worker that writes ``/answer``: a decider agent's reply to the whole public board, or,
    without one (or when its model fails), ``fallback_answer`` of the board. The fallback reads
    the committed board from ``state`` (a zero-argument callable) when given, so that a bounded
    view cannot hide the entry it must return; otherwise the entries the view shows.

    Guarantees: the patch is one ``add /answer`` op with a string; ``diagnostics["fallback"]``
    says whether the fallback was used and ``diagnostics["error"]`` why, when the model failed.
    A decider with an ``output_type`` proposes the reply's JSON value instead (``slateboard.workers.parse.parse_value``),
    which the kernel checks against the type's schema at ``/answer``; it has no fallback (a text
    is not an instance): a model failure is an empty patch the kernel rejects at stage ``model``,
    and the rejection reason is in the next attempt's prompt.
    """

    kind = "decider"

    def __init__(
        self,
        agent: Agent | None,
        model: Model | str | None = None,
        *,
        instructions: str | None = None,
        state: Callable[[], JSON] | None = None,
    ) -> None:
        self.agent = agent
        self.state = state
        self.model: Model | None = (
            resolve_model(model if model is not None else (agent.model or "local")) if agent is not None else None
        )
        self.instructions = instructions or DEFAULT_DECIDER_INSTRUCTIONS
        self.output: OutputType[Any] | None = (
            OutputType.of(agent.output_type, "decider/output_type")
            if agent is not None and agent.output_type is not None
            else None
        )
        """The decider's checked ``output_type`` (None: a text answer)."""
        self.spend: SpendHook | None = None
        """Set by a run with a spend cap: the decider's model call reserves first (refused: the
        fallback answer, ``diagnostics["error"]`` naming the ledger)."""

    @property
    def name(self) -> str:
        """The blueprint worker that writes the answer."""
        return DECIDER_WORKER

    def _public(self, view: View) -> Sequence[Mapping[str, Any]]:
        state = self.state() if self.state is not None else None
        public = state.get("public") if isinstance(state, dict) else None
        if isinstance(public, list):
            # The committed list itself (read only: fallback_answer scans it from the end); the
            # board's schema makes every entry an object, so no filtered copy of the board.
            return public
        return _entries_only(_shown_at(view, "/public")[0])

    def prompt(self, view: View, feedback: Feedback = None) -> str:
        """The decider's user prompt: its instructions and the public board, headed "Full
        blackboard state" when the view shows every entry whole, else honestly labelled a
        summary with handles (the problem statement is pinned and always shown); a typed
        decider's prompt ends with its schema and why its previous reply was refused."""
        shown = _public_shown(view)
        board = render_board(shown.public, hidden_public=shown.hidden, problem=shown.problem)
        if shown.complete:
            text = f"{self.instructions}\n\nFull blackboard state:\n{board}"
        else:
            text = (
                f"{self.instructions}\n\nBlackboard summary with handles (the board is over the "
                f"{view.budget:,}-character view budget: the problem is shown first, then the newest entries; "
                f"earlier ones are shortened or counted):\n{board}"
            )
        if self.output is None:
            return text
        return f"{text}\n\n{typed_instructions(self.output)}{_refused(view, feedback)}"

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Decide the answer (see class docstring)."""
        public = self._public(view)
        diagnostics: dict[str, JSON] = {"kind": self.kind}
        if self.agent is None or self.model is None:
            diagnostics["fallback"] = True
            answer = fallback_answer(public)
            return WorkerReply(
                [{"op": "add", "path": "/answer", "value": answer}], Usage(component="decider"), (), diagnostics
            )
        reply = await run_agent(
            self.agent,
            self.model,
            self.prompt(view, feedback),
            json_schema=self.output.schema if self.output is not None else None,
            spend=self.spend,
        )
        usage = Usage(reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.latency_ms, "decider")
        diagnostics["model"] = self.model.name
        if reply.spend_settled is not None:
            diagnostics["spend_settled"] = reply.spend_settled
        if reply.tool_calls:
            diagnostics["tool_calls"] = list(reply.tool_calls)
        if self.output is not None:
            diagnostics["fallback"] = False
            if reply.error is not None:
                diagnostics.update({"error": reply.error, "model_error": f"the model call failed: {reply.error}"})
                return WorkerReply("", usage, (), diagnostics, reply.text)
            value = parse_value(reply.text)
            return WorkerReply([{"op": "add", "path": "/answer", "value": value}], usage, (), diagnostics, reply.text)
        if reply.error is not None:
            diagnostics.update({"error": reply.error, "fallback": True})
            answer = fallback_answer(public)
        else:
            diagnostics["fallback"] = False
            answer = reply.text
        return WorkerReply([{"op": "add", "path": "/answer", "value": answer}], usage, (), diagnostics, reply.text)
