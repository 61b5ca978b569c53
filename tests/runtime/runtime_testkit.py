"""Shared test data of tests/runtime (a module of its own, not conftest: several conftest.py
files are all called ``conftest``)."""

from __future__ import annotations

from typing import Any


def chain_blueprint(max_steps: int) -> dict[str, Any]:
    """One worker ``w`` appending to ``/notes``, invoked at the start and again after each of its
    notes, stopped by ``limits.max_steps``: a board whose every step depends on the one before."""
    return {
        "name": "chain",
        "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}},
        "initial_state": {"notes": []},
        "workers": {"w": {"reads": ["/notes"], "writes": ["/notes/-"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w"}, {"on": {"op": "add", "path": "/notes/-"}, "invoke": "w"}],
        "limits": {"max_steps": max_steps},
    }
