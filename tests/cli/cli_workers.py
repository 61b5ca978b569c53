"""Function workers that the CLI test blueprints name as "cli_workers:callable"."""

from __future__ import annotations

from typing import Any


def _notes(view: Any) -> list[Any]:
    notes = view.data.get("/notes", [])
    return notes if isinstance(notes, list) else []


def note_a(view: Any) -> list[dict[str, Any]]:
    """Append a note by a."""
    return [{"op": "add", "path": "/notes/-", "value": {"author": "a", "text": f"note {len(_notes(view))}"}}]


def note_b(view: Any, event: Any = None, feedback: Any = None) -> list[dict[str, Any]]:
    """Append a reply by b; its first reply is empty (rejected by the invariant) until it gets feedback."""
    text = "" if feedback is None and len(_notes(view)) == 1 else "reply"
    return [{"op": "add", "path": "/notes/-", "value": {"author": "b", "text": text}}]


def decide(view: Any) -> list[dict[str, Any]]:
    """Write the answer: how many notes there are, on which task."""
    return [{"op": "add", "path": "/answer", "value": f"{len(_notes(view))} notes on {view.data.get('/task')}"}]


def garbage(view: Any) -> str:
    """Not a patch at all: every proposal is rejected at stage parse."""
    return "this is not a patch"
