"""Helpers for the reliability regressions (issue 20): the CLI in process, scripted boards.

Kept out of conftest.py: test files import helpers from here, never ``from conftest``, so this
package does not depend on which package's ``conftest`` module was imported last."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from slateboard.cli import app


class Invoke:
    """Runs the CLI in process; ``(args) -> Result`` with ``.exit_code``, ``.stdout``, ``.stderr``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.runner = CliRunner()
        self.env = env

    def __call__(self, *args: str) -> Any:
        return self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)

    def json(self, *args: str) -> Any:
        """Run with --json appended and parse stdout (the command must succeed)."""
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


def scripted_blueprint(replies: list[str], *, max_steps: int | None = None) -> str:
    """YAML of a one-worker board whose LLM worker is a scripted model with ``replies``."""
    model = json.dumps("scripted:" + json.dumps(replies))
    limits = f"limits: {{max_steps: {max_steps}}}\n" if max_steps else ""
    return (
        "name: scripted\n"
        "schema: {type: object, properties: {task: {type: string}, notes: {type: array, items: {type: string}}}}\n"
        'initial_state: {task: "", notes: []}\n'
        f"workers:\n  a: {{model: {model}, reads: [/notes], writes: [/notes/-]}}\n"
        'rules:\n  - {"on": {op: start}, invoke: a}\n'
        '  - {"on": {op: add, path: /notes/-}, invoke: a}\n' + limits
    )


NOTE_LONG = json.dumps([{"op": "add", "path": "/notes/-", "value": "far too long"}])
"""A scripted reply that breaks ``guarded_blueprint``'s invariant (a note of 5 characters or more)."""


def guarded_blueprint(replies: list[str]) -> str:
    """YAML of a one-worker board, its worker a scripted model with ``replies``, whose invariant
    ("notes are short": under 5 characters) rejects ``NOTE_LONG``; one invocation at start."""
    model = json.dumps("scripted:" + json.dumps(replies))
    return (
        "name: guarded\n"
        "schema: {type: object, properties: {task: {type: string}, notes: {type: array, items: {type: string}}}}\n"
        'initial_state: {task: "", notes: []}\n'
        f"workers:\n  a: {{model: {model}, reads: [/notes], writes: [/notes/-]}}\n"
        'invariants:\n  - {at: "/notes/*", rule: "size(self) < 5", message: "notes are short"}\n'
        'rules:\n  - {"on": {op: start}, invoke: a}\n'
    )
