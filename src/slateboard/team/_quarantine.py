"""The quarantine path of ``Team.blackboard(..., untrusted=[...], sanitiser=fn)`` (issue 18).

An untrusted agent (one that reads untrusted input: web pages, tool output) never writes the
public board. The team's board gets the blueprint's ``quarantine`` region (``/quarantine/**``,
one entry array per untrusted agent); the untrusted agent's contract is marked ``untrusted`` and
may write only its own array there (the blueprint compiler refuses anything else), and an
invariant ties every entry in that array to its author. Views cut the region out for every
worker whose read contract does not name it (``views.readable_state``, applied by the view
builder), so no other agent, the coordinator or the decider ever sees quarantined text.

The sanitiser is a function the run calls on each quarantined entry right after it is
committed: it returns the text to release (posted on the public board by the system worker,
kind ``released``, logged with where it came from) or None to withhold it (an action record
says so). Only the system worker's contract names the quarantine region (it reads it to release).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.pointer import escape_token
from ..views import View
from ..workers.base import Feedback, Worker, WorkerReply
from ._board import ENTRY_SCHEMA, SYSTEM_WORKER

__all__ = [
    "QUARANTINE_REGION",
    "RELEASED_KIND",
    "QuarantineWorker",
    "Sanitiser",
    "quarantine_board",
]

QUARANTINE_REGION = "/quarantine/**"
"""The blueprint's quarantine region on a team board with untrusted agents."""
RELEASED_KIND = "released"
"""Kind of the public entry the system posts for a released quarantined entry."""

Sanitiser = Callable[[dict[str, Any]], "str | Awaitable[str | None] | None"]
"""Given a quarantined entry (a copy), the text to release on the public board, or None to
withhold it; may be async."""


def quarantine_board(spec: dict[str, Any], untrusted: Sequence[str]) -> dict[str, Any]:
    """``spec`` (the built-in blackboard's blueprint, plain JSON) with the quarantine region for
    the ``untrusted`` agents: a ``quarantine`` object of one entry array per untrusted agent in
    the schema and the initial state, their contracts marked ``untrusted`` and writing only their
    own array, an authorship invariant on each array, and the system worker reading the region
    (it releases what the sanitiser lets through). Returns a new dict."""
    out = copy.deepcopy(spec)
    names = list(untrusted)
    schema = out["schema"]
    schema["required"] = [*schema["required"], "quarantine"]
    schema["properties"]["quarantine"] = {
        "type": "object",
        "required": names,
        "additionalProperties": False,
        "properties": {n: {"type": "array", "items": copy.deepcopy(ENTRY_SCHEMA)} for n in names},
    }
    out["initial_state"]["quarantine"] = {n: [] for n in names}
    out["quarantine"] = QUARANTINE_REGION
    for n in names:
        tok = escape_token(n)
        worker = out["workers"][n]
        worker["writes"] = [f"/quarantine/{tok}/-"]
        worker["untrusted"] = True
        out["invariants"].append(
            {
                "name": f"{n} quarantine is authored by {n}",
                "at": f"/quarantine/{tok}/*",
                # A JSON string literal is a valid CEL string literal.
                "rule": f"self.author == {json.dumps(n)}",
                "message": f"entries in {n}'s quarantine are authored by {n}",
            }
        )
    system = out["workers"][SYSTEM_WORKER]
    system["reads"] = [*system["reads"], "/quarantine"]
    return out


class QuarantineWorker:
    """The worker of an untrusted agent: the agent's own worker (``inner``) runs as usual, and
    the public entry it would append goes to the agent's quarantine array instead, with the id
    ``q<n>`` (n: its place in that array); signature and scratchpad ops are dropped (the
    untrusted contract may write nothing else). A reply that appends no entry (a model failure)
    is passed on unchanged, for the kernel to reject."""

    def __init__(self, inner: Worker, state: Callable[[], JSON]) -> None:
        self.inner = inner
        self.state = state
        self.kind = "agent"

    @property
    def name(self) -> str:
        """The blueprint worker (the agent's name)."""
        return self.inner.name

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """The inner worker's reply, its entry moved into quarantine."""
        reply = await self.inner.propose(view, event, feedback=feedback)
        ops = reply.patch if isinstance(reply.patch, list) else None
        entry = next(
            (
                op.get("value")
                for op in ops or ()
                if isinstance(op, dict) and op.get("path") == "/public/-" and isinstance(op.get("value"), dict)
            ),
            None,
        )
        if not isinstance(entry, dict):
            return reply
        state = self.state()
        held = state.get("quarantine") if isinstance(state, dict) else None
        mine = held.get(self.name) if isinstance(held, dict) else None
        moved = {**entry, "id": f"q{(len(mine) if isinstance(mine, list) else 0) + 1}"}
        diagnostics = {**reply.diagnostics, "entry": moved["id"], "quarantined": True}
        patch: list[dict[str, JSON]] = [
            {"op": "add", "path": f"/quarantine/{escape_token(self.name)}/-", "value": moved}
        ]
        return WorkerReply(patch, reply.usage, reply.expand, diagnostics, raw=reply.raw)
