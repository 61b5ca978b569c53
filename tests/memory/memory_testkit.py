"""The research board and its findings, shared by the memory tests (library and CLI)."""

from __future__ import annotations

from typing import Any

RESEARCH: dict[str, Any] = {
    "name": "research",
    "schema": {
        "type": "object",
        "required": ["task", "facts"],
        "additionalProperties": False,
        "properties": {"task": {"type": "string"}, "facts": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"task": "find the project facts", "facts": []},
    "workers": {"finder": {"reads": ["/task", "/facts"], "writes": ["/facts/-"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "finder"},
        {"on": {"op": "add", "path": "/facts/-"}, "invoke": "finder"},
    ],
    "done": "size(state.facts) >= 3",
}

FINDINGS = [
    "The Orion project stores its backups in the Lisbon data centre.",
    "The vault code of the Orion project is 4711.",
    "Release trains of the Vega project leave every second Tuesday.",
]
