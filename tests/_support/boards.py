"""The small demo blueprints that many test folders run, as builders that return a fresh dict
each call (a test may change its copy freely).

- ``notes_blueprint``: the README's ``notes`` board: workers ``a`` and ``b`` take turns
  appending ``{"author", "text"}`` notes, the ``decider`` answers.
- ``note_loop``: one worker ``a`` appends string notes until there are ``until``; with
  ``add_note`` (its function worker) and ``NOTE_REPLY`` (its model reply).
- ``approved_answer``: a ``writer`` note, then a ``decider`` answer that needs approval.
- ``quarantine_blueprint``: an untrusted ``fetcher`` writes only the quarantine region, a
  ``sanitiser`` promotes it to ``/facts``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
"""An array of strings (the plain ``notes`` of the smaller boards)."""


def notes_schema(*, max_text: int | None = 200) -> dict[str, Any]:
    """A closed object: ``task`` and ``notes`` (items ``{"author", "text"}``, ``text`` at most
    ``max_text`` characters, unbounded with None) required, ``answer`` optional."""
    text: dict[str, Any] = {"type": "string"}
    if max_text is not None:
        text["maxLength"] = max_text
    return {
        "type": "object",
        "required": ["task", "notes"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "notes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["author", "text"],
                    "additionalProperties": False,
                    "properties": {"author": {"type": "string"}, "text": text},
                },
            },
            "answer": {"type": "string"},
        },
    }


NOT_EMPTY: dict[str, Any] = {"at": "/notes/*", "rule": "size(self.text) > 0", "message": "notes are not empty"}
"""The notes boards' invariant: a note's text is never empty."""

TAKING_TURNS_WORKERS: dict[str, Any] = {
    "a": {"reads": ["/**"], "writes": ["/notes/-"]},
    "b": {"reads": ["/**"], "writes": ["/notes/-"]},
    "decider": {"reads": ["/**"], "writes": ["/answer"]},
}
"""The notes board's workers with full reads and no instructions (function workers)."""


def taking_turns(notes: int) -> list[dict[str, Any]]:
    """The notes board's rules: ``a`` starts, ``b`` answers each note of ``a``, ``a`` answers
    each note of ``b`` until there are ``notes`` notes, then the ``decider`` is asked."""
    by_b = "value.author == 'b' && size(state.notes)"
    return [
        {"on": {"op": "start"}, "invoke": "a"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "value.author == 'a'", "invoke": "b"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": f"{by_b} < {notes}", "invoke": "a"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": f"{by_b} >= {notes}", "invoke": "decider"},
    ]


def notes_blueprint(
    notes: int = 6, *, workers: Mapping[str, Any] | None = None, max_text: int | None = 200, **fields: Any
) -> dict[str, Any]:
    """The ``notes`` board (``notes_schema``, ``NOT_EMPTY``, ``taking_turns(notes)``, done when
    ``/answer`` is set, which is the answer). ``workers`` replaces ``TAKING_TURNS_WORKERS``;
    ``fields`` add or replace top-level fields (``name``, ``description``, ``rules`` ...)."""
    blueprint: dict[str, Any] = {
        "name": "notes",
        "schema": notes_schema(max_text=max_text),
        "initial_state": {"task": "", "notes": []},
        "workers": copy.deepcopy(dict(workers if workers is not None else TAKING_TURNS_WORKERS)),
        "invariants": [dict(NOT_EMPTY)],
        "rules": taking_turns(notes),
        "done": "has(state.answer)",
        "answer": "/answer",
    }
    blueprint.update(copy.deepcopy(fields))
    return blueprint


NOTE_PATCH: list[dict[str, Any]] = [{"op": "add", "path": "/notes/-", "value": "n"}]
"""The patch every ``note_loop`` step proposes."""

NOTE_REPLY = json.dumps({"patch": NOTE_PATCH})
"""A model reply that proposes ``NOTE_PATCH``."""


def add_note(view: Any) -> list[dict[str, Any]]:
    """``note_loop``'s function worker: appends the note ``"n"``."""
    return copy.deepcopy(NOTE_PATCH)


def note_loop(name: str, until: int, **fields: Any) -> dict[str, Any]:
    """One worker ``a`` (reads everything, writes ``/notes/-``) started once and asked again
    after each note while there are fewer than ``until``; no done condition, so the run ends
    when the agenda is empty. ``fields`` add top-level fields (``limits`` ...)."""
    blueprint: dict[str, Any] = {
        "name": name,
        "schema": {"type": "object", "properties": {"notes": copy.deepcopy(STRINGS)}},
        "initial_state": {"notes": []},
        "workers": {"a": {"reads": ["/**"], "writes": ["/notes/-"]}},
        "rules": [
            {"on": {"op": "start"}, "invoke": "a"},
            {"on": {"op": "add", "path": "/notes/-"}, "when": f"size(state.notes) < {until}", "invoke": "a"},
        ],
    }
    blueprint.update(copy.deepcopy(fields))
    return blueprint


def approved_answer(name: str, *, decider: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``writer`` (a string note at start), then a ``decider`` after each note whose
    ``/answer`` is held for approval; done when answered. ``decider`` adds fields to that
    worker (an ``instruction`` for an LLM decider)."""
    return {
        "name": name,
        "schema": {"type": "object", "properties": {"notes": copy.deepcopy(STRINGS), "answer": {"type": "string"}}},
        "initial_state": {"notes": []},
        "workers": {
            "writer": {"reads": ["/**"], "writes": ["/notes/-"]},
            "decider": {"reads": ["/**"], "writes": ["/answer"], **copy.deepcopy(dict(decider or {}))},
        },
        "rules": [
            {"on": {"op": "start"}, "invoke": "writer"},
            {"on": {"op": "add", "path": "/notes/-"}, "invoke": "decider"},
        ],
        "approval": ["/answer"],
        "done": "has(state.answer)",
        "answer": "/answer",
    }


def quarantine_blueprint(name: str, *, fact: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An untrusted ``fetcher`` (reads ``/facts``) may write only ``/quarantine/-``; each of its
    items asks the ``sanitiser`` (reads ``/quarantine``), which appends to ``/facts``. ``fact``
    is the schema of a fact (a string by default)."""
    return {
        "name": name,
        "schema": {
            "type": "object",
            "properties": {
                "quarantine": copy.deepcopy(STRINGS),
                "facts": {"type": "array", "items": copy.deepcopy(dict(fact or {"type": "string"}))},
            },
        },
        "initial_state": {"quarantine": [], "facts": []},
        "quarantine": "/quarantine/**",
        "workers": {
            "fetcher": {"reads": ["/facts"], "writes": ["/quarantine/-"], "untrusted": True},
            "sanitiser": {"reads": ["/quarantine"], "writes": ["/facts/-"]},
        },
        "rules": [
            {"on": {"op": "start"}, "invoke": "fetcher"},
            {"on": {"op": "add", "path": "/quarantine/-"}, "invoke": "sanitiser"},
        ],
    }
