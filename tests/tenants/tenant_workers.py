"""Function workers the tenant tests' blueprints name as ``tenant_workers:callable``."""

from __future__ import annotations

from typing import Any


def note(view: Any) -> list[dict[str, Any]]:
    """Append one note."""
    notes = view.data.get("/notes", [])
    return [{"op": "add", "path": "/notes/-", "value": f"note {len(notes) if isinstance(notes, list) else 0}"}]


def decide(view: Any) -> list[dict[str, Any]]:
    """Write the answer: how many notes there are."""
    notes = view.data.get("/notes", [])
    return [{"op": "add", "path": "/answer", "value": f"{len(notes) if isinstance(notes, list) else 0} notes"}]
