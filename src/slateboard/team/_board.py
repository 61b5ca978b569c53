"""The built-in blueprint of the classic blackboard, and the board entries it holds.

State::

    {"task": "<the prompt>",
     "public": [entry, ...],                    # the shared board, append-only
     "private": {"<agent>": [entry, ...]},      # one scratchpad per agent
     "signatures": {"<author>": "<entry id>"},  # id of each author's latest public entry
     "answer": null | "<final answer>"}

    # with typed outputs (Agent(output_type=T)): "outputs": {"<agent>": [T, ...]} for typed
    # agents, and "answer" absent until the decider's T is accepted (the schema is T's)

    entry = {"id", "kind", "author", "references", "content", "timestamp"}

How the kernel knows that an agent only appends entries authored by itself: the kernel checks
invariants on the state, not on who wrote it, so authorship is tied to the write contract.

* Private scratchpads: only agent A's contract covers ``/private/A/-``, and an invariant at
  ``/private/A/*`` requires ``author == "A"``. So every entry there was written by A and says so.
* The public board is one shared list, so the path cannot tell writers apart. Each author has
  a signature slot ``/signatures/<author>`` that only its own contract may write, and an
  invariant on every entry a patch appends to ``/public`` requires that the signature slot of
  the entry's ``author`` holds the entry's id. A patch comes from one worker and every op path
  is authorised, so a patch by B that adds an entry claiming author A would have to write
  ``/signatures/A``, which B's contract forbids: the kernel rejects it (stage ``authorise``).
  Left alone, A's slot holds the id of an entry already on the board, and ids are unique (an
  invariant), so the new entry cannot carry it (stage ``invariants``). The ``user`` slot is
  set in the initial state for the problem entry and no contract writes it, so nobody can
  append as ``user``.
* Reserved kinds: ``problem`` entries only by ``user`` and ``error`` entries only by ``system``.
* References name existing public entries other than the entry itself.

Everything is CEL in the blueprint (stored with the board), so ``replay(..., revalidate=True)``
re-decides every proposal from the log alone. The three rules that read the whole state
(``root``: signed entries, unique ids, existing references) would cost O(board) per commit (the
state converted to CEL, then scanned); ``compile_blackboard`` runs them as native twins that read
only the signature slot and an incremental id index, with the same verdicts and messages, so a
live board's commit cost does not grow with the board.

Views: every agent and the decider pin ``/task`` (the problem statement), so no budget can cut
the problem from a prompt; the board's first entry is the problem, and prompts show the pinned
text in its place when the budget left that entry out. Timestamps are written by the proposing worker
into the entry, so they are part of the logged patch and replay never reads a clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..blueprint.output_type import embed_schema
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.invariants import CompiledInvariant, InvariantContext
from ..kernel.pointer import escape_token

__all__ = [
    "AGENT_OPS",
    "DECIDER_WORKER",
    "MAX_AGENT_NAME",
    "PROBLEM_ID",
    "RESERVED_AUTHORS",
    "SYSTEM_AUTHOR",
    "SYSTEM_WORKER",
    "USER_AUTHOR",
    "PublicIndex",
    "blackboard_blueprint",
    "check_agent_names",
    "compile_blackboard",
    "make_entry",
    "timestamp",
]

USER_AUTHOR = "user"
"""Author of the problem entry."""
SYSTEM_AUTHOR = "system"
"""Author of error entries (e.g. the coordinator named an unknown agent)."""
RESERVED_AUTHORS = (USER_AUTHOR, SYSTEM_AUTHOR)
SYSTEM_WORKER = "__system"
"""The blueprint worker that posts ``system`` entries."""
DECIDER_WORKER = "__decider"
"""The blueprint worker that writes ``/answer``."""
PROBLEM_ID = "e1"
"""Id of the problem entry: the first public entry of every board ``Team.blackboard`` runs."""
AGENT_OPS = ["add", "test"]
MAX_AGENT_NAME = 200
"""The longest agent name: an entry's ``author`` holds at most this many characters (the board's
schema), so a longer name could never contribute."""

_KIND_PATTERN = "^[A-Za-z][A-Za-z0-9_.-]{0,31}$"

ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "kind", "author", "references", "content", "timestamp"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 64},
        "kind": {"type": "string", "pattern": _KIND_PATTERN},
        "author": {"type": "string", "minLength": 1, "maxLength": MAX_AGENT_NAME},
        "references": {"type": "array", "items": {"type": "string"}, "maxItems": 64},
        "content": {"type": "string"},
        "timestamp": {"type": "string", "minLength": 1, "maxLength": 64},
    },
}


def check_agent_names(names: Sequence[str]) -> None:
    """Raise ValueError for an agent name the board cannot hold: not a non-empty string, longer
    than ``MAX_AGENT_NAME`` characters, one of the reserved authors (``user``, ``system``), or
    starting with ``__`` (internal workers)."""
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(f"agent names must be non-empty strings, got {name!r}")
        if len(name) > MAX_AGENT_NAME:
            raise InvalidInput(
                f"agent name {name[:40]!r}... is {len(name)} characters long; the board's entries hold "
                f"author names of at most {MAX_AGENT_NAME} characters"
            )
        if name in RESERVED_AUTHORS or name.startswith("__"):
            raise InvalidInput(f"agent name {name!r} is reserved (user, system and names starting with '__')")


def timestamp(moment: datetime) -> str:
    """ISO 8601 text of ``moment`` in UTC (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def make_entry(
    entry_id: str,
    author: str,
    content: str,
    *,
    kind: str = "contribution",
    references: Sequence[str] = (),
    at: datetime,
) -> dict[str, JSON]:
    """One board entry in the built-in schema."""
    return {
        "id": entry_id,
        "kind": kind,
        "author": author,
        "references": list(references),
        "content": content,
        "timestamp": timestamp(at),
    }


def _cel_str(text: str) -> str:
    # JSON string escapes are valid CEL string escapes.
    return json.dumps(text, ensure_ascii=True)


SIGNED = "public entries are signed by their author"
UNIQUE = "public entry ids are unique"
REFERENCES = "references exist"
_NATIVE_RULES = {
    SIGNED: "self.author in root.signatures && root.signatures[self.author] == self.id",
    UNIQUE: "root.public.filter(o, o.id == self.id).size() == 1",
    REFERENCES: "self.references.all(r, r != self.id && root.public.exists(e, e.id == r))",
}
"""The blueprint's rules that read the whole state (``root``), by invariant name. The CEL text is
what the board stores (replay re-decides with it); ``compile_blackboard`` evaluates each with an
equivalent native check against an incremental index instead."""


def blackboard_blueprint(
    agents: Sequence[str],
    *,
    instructions: Mapping[str, str] | None = None,
    view_budget: int = 100_000,
    name: str = "blackboard",
    outputs: Mapping[str, Mapping[str, Any]] | None = None,
    answer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The blueprint (plain JSON) of a blackboard for these agents (see module docstring).

    ``outputs`` maps typed agents to the JSON Schema of their ``output_type``: the board gets
    ``/outputs/<agent>``, an array of values of that schema only that agent's contract may
    append to. ``answer`` is the decider's output schema: ``/answer`` is then null or a value of
    it, absent until the decider's reply is accepted (instead of null or a string). Either way the kernel checks a typed value at stage
    ``schema``; without them the blueprint is the untyped one, digest included.

    Raises ValueError for reserved or repeated agent names, or a typed agent the team lacks.
    """
    names = list(agents)
    check_agent_names(names)
    if len(set(names)) != len(names):
        raise InvalidInput(f"agent names repeat: {names}")
    authors = [*names, SYSTEM_AUTHOR]
    # The user's slot is set once, in the initial state, for the problem entry; no contract
    # writes it, so nobody can append as the user later.
    signed = [*authors, USER_AUTHOR]
    schema: dict[str, Any] = {
        "type": "object",
        "required": ["task", "public", "private", "signatures", "answer"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "public": {"type": "array", "items": ENTRY_SCHEMA},
            "private": {
                "type": "object",
                "required": names,
                "additionalProperties": False,
                "properties": {n: {"type": "array", "items": ENTRY_SCHEMA} for n in names},
            },
            "signatures": {
                "type": "object",
                "required": signed,
                "additionalProperties": False,
                "properties": {a: {"type": "string", "maxLength": 64} for a in signed},
            },
            "answer": {"type": ["string", "null"]},
        },
    }
    typed = dict(outputs or {})
    strangers = [n for n in typed if n not in names]
    if strangers:
        raise InvalidInput(f"typed outputs name agents the board does not have: {strangers!r}")
    defs: dict[str, Any] = {}
    if typed:
        items: dict[str, Any] = {}
        for i, (n, out) in enumerate(typed.items()):
            body, more = embed_schema(dict(out), f"output{i}.")
            items[n] = {"type": "array", "items": body}
            defs.update(more)
        schema["required"].append("outputs")
        schema["properties"]["outputs"] = {
            "type": "object",
            "required": list(typed),
            "additionalProperties": False,
            "properties": items,
        }
    if answer is not None:
        # Absent until decided, rather than null-or-value: the kernel's reason for a reply that
        # does not fit then names the field at fault, not "not valid under any of anyOf".
        body, more = embed_schema(dict(answer), "answer.")
        schema["properties"]["answer"] = body
        schema["required"].remove("answer")
        defs.update(more)
    if defs:
        schema["$defs"] = defs
    roles = dict(instructions or {})
    workers: dict[str, Any] = {}
    for n in names:
        tok = escape_token(n)
        workers[n] = {
            "instruction": roles.get(n, ""),
            "reads": ["/task", "/public", f"/private/{tok}"],
            "writes": [
                "/public/-",
                f"/private/{tok}/-",
                f"/signatures/{tok}",
                *([f"/outputs/{tok}/-"] if n in typed else []),
            ],
            "ops": AGENT_OPS,
            "view_budget": view_budget,
            # The problem statement is in every agent's view whatever the budget (issue 15).
            "pinned": ["/task"],
        }
    workers[SYSTEM_WORKER] = {
        "instruction": "Posts system entries (errors) on the public board.",
        "reads": ["/public"],
        "writes": ["/public/-", f"/signatures/{SYSTEM_AUTHOR}"],
        "ops": AGENT_OPS,
        "view_budget": view_budget,
    }
    workers[DECIDER_WORKER] = {
        "instruction": "Writes the final answer from the public board.",
        "reads": ["/task", "/public"],
        "writes": ["/answer"],
        "ops": ["add", "replace", "test"],
        "view_budget": view_budget,
        "pinned": ["/task"],
    }
    # Every public rule is checked on the entries a patch appends only ("check: touched"):
    # /public is append-only for every contract (pattern /public/-, ops add/test), so an entry,
    # once accepted, can never be changed or removed, and what it was checked against (ids,
    # referenced entries) stays on the board. Checking the whole board instead would cost
    # O(entries^2) per commit.
    invariants: list[dict[str, Any]] = [
        {
            "name": SIGNED,
            "at": "/public/*",
            "rule": _NATIVE_RULES[SIGNED],
            "check": "touched",
            "message": "a new public entry must be signed by its author in the same patch "
            "(an agent may only append entries authored by itself)",
        },
        {
            "name": UNIQUE,
            "at": "/public/*",
            "rule": _NATIVE_RULES[UNIQUE],
            "check": "touched",
            "message": "public entry ids must be unique",
        },
        {
            "name": "reserved kinds",
            "at": "/public/*",
            "rule": "!(self.kind in ['problem', 'error']) || self.author in ['user', 'system']",
            "message": "only the user posts 'problem' entries and only the system posts 'error' entries",
        },
        {
            "name": REFERENCES,
            "at": "/public/*",
            "rule": _NATIVE_RULES[REFERENCES],
            "check": "touched",
            "message": "references must name other entries on the public board",
        },
    ]
    for n in names:
        invariants.append(
            {
                "name": f"{n} scratchpad is authored by {n}",
                "at": f"/private/{escape_token(n)}/*",
                "rule": f"self.author == {_cel_str(n)}",
                "message": f"entries in {n}'s scratchpad are authored by {n}",
            }
        )
    initial: dict[str, Any] = {
        "task": "",
        "public": [],
        "private": {n: [] for n in names},
        "signatures": dict.fromkeys(signed, ""),
        "answer": None,
    }
    if typed:
        initial["outputs"] = {n: [] for n in typed}
    if answer is not None:
        del initial["answer"]
    return {
        "name": name,
        "description": "The classic blackboard: a coordinator picks which agent contributes each round.",
        "schema": schema,
        "initial_state": initial,
        "workers": workers,
        "invariants": invariants,
        "done": "has(state.answer)" if answer is not None else "state.answer != null",
        "answer": "/answer",
    }


# -- the root-reading invariants, natively ----------------------------------------------------------
class PublicIndex:
    """The ids on the public board, kept in step with one ``public`` list as it changes.

    The index remembers each indexed entry object; before use it drops, from the end, every
    position whose object is no longer the one in the list (the kernel undid a rejected patch,
    or the list was shortened and grew again), then indexes the entries past that point. Because
    ``/public`` is append-only for every contract (see ``blackboard_blueprint``), that is O(entries
    appended or undone since the last check): a commit's checks cost O(1) in the board's size. A
    different list (another board, a restored state) is indexed afresh.
    """

    def __init__(self) -> None:
        self._list: list[Any] | None = None
        self._objs: list[Any] = []
        self._ids: list[str] = []
        self.counts: dict[str, int] = {}

    def sync(self, public: list[Any]) -> dict[str, int]:
        """The number of public entries carrying each id, for ``public`` as it is now."""
        if public is not self._list:
            self._list, self._objs, self._ids, self.counts = public, [], [], {}
        objs, ids, counts = self._objs, self._ids, self.counts
        while objs and (len(objs) > len(public) or public[len(objs) - 1] is not objs[-1]):
            objs.pop()
            gone = ids.pop()
            counts[gone] -= 1
            if not counts[gone]:
                del counts[gone]
        for entry in public[len(objs) :]:
            eid = entry.get("id") if isinstance(entry, dict) else None
            key = eid if isinstance(eid, str) else f"\x00{len(objs)}"  # never equal to a string id
            objs.append(entry)
            ids.append(key)
            counts[key] = counts.get(key, 0) + 1
        return counts


def _native_checks(message: Mapping[str, str | None]) -> dict[str, Any]:
    """Python twins of the ``_NATIVE_RULES``: the same verdict on every schema-valid state (the
    kernel checks the schema before the invariants), reading a few dict entries instead of the
    whole state converted to CEL."""
    index = PublicIndex()

    def counts(ctx: InvariantContext) -> dict[str, int]:
        state = ctx.state
        public = state.get("public") if isinstance(state, dict) else None
        return index.sync(public) if isinstance(public, list) else {}

    def signed(ctx: InvariantContext) -> str | None:
        entry, state = ctx.value, ctx.state
        signatures = state.get("signatures") if isinstance(state, dict) else None
        if isinstance(entry, dict) and isinstance(signatures, dict):
            author = entry.get("author")
            if isinstance(author, str) and author in signatures and signatures[author] == entry.get("id"):
                return None
        return message[SIGNED] or f"rule {_NATIVE_RULES[SIGNED]!r} is false"

    def unique(ctx: InvariantContext) -> str | None:
        entry = ctx.value
        if isinstance(entry, dict) and counts(ctx).get(entry.get("id"), 0) == 1:  # type: ignore[arg-type]
            return None
        return message[UNIQUE] or f"rule {_NATIVE_RULES[UNIQUE]!r} is false"

    def references(ctx: InvariantContext) -> str | None:
        entry = ctx.value
        if isinstance(entry, dict):
            seen, own, refs = counts(ctx), entry.get("id"), entry.get("references")
            if isinstance(refs, list) and all(r != own and r in seen for r in refs):
                return None
        return message[REFERENCES] or f"rule {_NATIVE_RULES[REFERENCES]!r} is false"

    return {SIGNED: signed, UNIQUE: unique, REFERENCES: references}


def compile_blackboard(spec: Mapping[str, Any]) -> CompiledBlueprint:
    """``compile_blueprint(spec)`` for a ``blackboard_blueprint`` spec, with its three invariants
    that read the whole state (signed entries, unique ids, existing references) evaluated by
    native checks that give the same verdict and the same message, in O(1) of the board's size
    per commit instead of converting and scanning the whole state (issue 14).

    The board still stores the CEL rules, so ``replay(..., revalidate=True)`` from the log alone
    re-decides every proposal the same way. An invariant is swapped only when its name, location,
    ``check: touched`` and CEL text are exactly the built-in ones, so an edited spec keeps its
    own rules.
    """
    compiled = compile_blueprint(dict(spec))
    wanted = {
        inv.name: inv
        for inv in compiled.invariants
        if inv.name in _NATIVE_RULES
        and inv.expr is not None
        and inv.expr.source == _NATIVE_RULES[inv.name]
        and inv.pattern.text == "/public/*"
        and inv.check == "touched"
    }
    checks = _native_checks({name: inv.message for name, inv in wanted.items()})
    for position, inv in enumerate(compiled.invariants):
        if wanted.get(inv.name) is inv:
            compiled.invariants[position] = CompiledInvariant(
                inv.index, inv.name, inv.pattern, inv.message, func=checks[inv.name], check="touched"
            )
    return compiled
