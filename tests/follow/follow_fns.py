"""Function workers for the follow tests, with a count of their calls."""

from __future__ import annotations

from typing import Any

CALLS: dict[str, int] = {}


def write(view: Any) -> list[dict[str, Any]]:
    """Propose the answer (held for approval by the test blueprint); counts its calls."""
    CALLS["write"] = CALLS.get("write", 0) + 1
    return [{"op": "add", "path": "/answer", "value": {"text": "draft", "score": 1}}]
