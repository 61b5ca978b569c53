"""Shared pieces of the tenant tests: a blueprint, the CLI in process, and the oracle check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slateboard.cli import app

HERE = Path(__file__).resolve().parent

NOTES = {
    "name": "notes",
    "schema": {
        "type": "object",
        "properties": {
            "task": {"type": "string"},
            "notes": {"type": "array", "items": {"type": "string"}},
            "answer": {"type": "string"},
        },
    },
    "initial_state": {"task": "", "notes": []},
    "workers": {
        "writer": {"function": "tenant_workers:note", "reads": ["/notes"], "writes": ["/notes/-"]},
        "decider": {"function": "tenant_workers:decide", "reads": ["/notes"], "writes": ["/answer"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) < 2", "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) >= 2", "invoke": "decider"},
    ],
    "done": "has(state.answer)",
    "answer": "/answer",
}
"""Two notes, then the answer; with ``approval: [/answer]`` the answer is held for a person."""

HELD = {**NOTES, "approval": ["/answer"]}

OTHER_ID = "f" * 32
"""A board id no test creates: what 'missing' looks like."""


def write_blueprint(path: Path, spec: dict[str, Any]) -> Path:
    """``spec`` as a JSON blueprint file."""
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


class Cli:
    """The CLI in process against one store; ``tenant`` (None: unscoped) as ``--tenant``."""

    def __init__(self, store_url: str) -> None:
        self.runner = CliRunner()
        self.store_url = store_url

    def __call__(self, *args: str, tenant: str | None = None) -> Any:
        extra = ["--tenant", tenant] if tenant is not None else []
        env = {"SLATEBOARD_STORE": self.store_url, "COLUMNS": "200", "SLATEBOARD_TENANT": ""}
        return self.runner.invoke(app, [*args, *extra], env=env, catch_exceptions=False)

    def json(self, *args: str, tenant: str | None = None) -> Any:
        result = self(*args, "--json", tenant=tenant)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


def same_as_missing(theirs: str, missing: str, their_id: str) -> bool:
    """Whether the answer about another tenant's board ``their_id`` is the answer about a board
    that does not exist (``OTHER_ID``) with the id swapped: nothing tells them apart."""
    return theirs.replace(their_id, OTHER_ID) == missing
