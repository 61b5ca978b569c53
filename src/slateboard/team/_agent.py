"""The workers that turn a team member's free-text reply into a board proposal.

Agents reply in plain text, so any model works, even a tiny local one; ``AgentWorker`` wraps the
reply into one entry authored by the agent and proposes the patch that appends it (and signs it,
see slateboard.team._board); ``DeciderWorker`` proposes the ``/answer``. The kernel still
decides: the patch is authorised, schema-checked and checked against the board's invariants like
any other proposal.

The member itself is ``slateboard.team._agent_spec.Agent``, its model call
``slateboard.team._agent_call.run_agent`` and the prompt's board text ``slateboard.team._render``;
they are imported here under their old paths too (``slateboard.team._agent.Agent``, ...).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Container, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ..blueprint.output_type import OutputType
from ..kernel.canonical import JSON
from ..kernel.kernel import DECLINE_KEY, declined_reason
from ..kernel.pointer import escape_token
from ..kernel.record import Usage
from ..models import Model, resolve_model
from ..scheduling.coordinator import parse_json_object
from ..views import View
from ..workers.base import Feedback, WorkerReply, feedback_lines
from ..workers.llm import SpendHook
from ..workers.parse import parse_value, reply_fault
from ._agent_call import AgentReply, run_agent
from ._agent_spec import Agent
from ._board import DECIDER_WORKER, SYSTEM_AUTHOR, USER_AUTHOR, PublicIndex, make_entry
from ._render import (
    BoardShown,
    _entries_only,
    _public_shown,
    _refused,
    _shown_arrays,
    _shown_at,
    bounded_board,
    render_board,
    typed_instructions,
)

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
    if not stripped.startswith("{") or reply_fault(stripped) is not None:
        return None
    try:
        return declined_reason(json.loads(stripped))
    except ValueError:
        return None


_WHOLE_FENCE = re.compile(r"```[A-Za-z]*\n(.*)\n```", re.S)


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
        if reply_fault(reply.text) is not None:
            # Never decoded: proposed as it is, so the kernel rejects it at stage parse with the
            # bound it breaks, and the agent is told so on its next turn (issue 46).
            return WorkerReply(reply.text, reply.usage, diagnostics=diagnostics, raw=reply.text)
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
        usage = dataclasses.replace(reply.usage, component="decider")
        diagnostics["model"] = self.model.name
        if reply.spend_settled is not None:
            diagnostics["spend_settled"] = reply.spend_settled
        if reply.tool_calls:
            diagnostics["tool_calls"] = list(reply.tool_calls)
        if reply.error is None and reply_fault(reply.text) is not None:
            diagnostics["fallback"] = False  # rejected at stage parse, as an agent's reply over a bound
            return WorkerReply(reply.text, usage, (), diagnostics, reply.text)
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
