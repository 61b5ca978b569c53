"""Helpers shared by the tests in this directory (kept out of conftest.py so that test modules
import them by a unique module name: several conftest.py files are all called ``conftest``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slateboard.cli import app

HERE = Path(__file__).resolve().parent


NOTES_YAML = """\
name: notes
description: a writes notes, b replies, the decider counts them
schema:
  type: object
  required: [task, notes]
  additionalProperties: false
  properties:
    task: {type: string}
    notes:
      type: array
      items:
        type: object
        required: [author, text]
        additionalProperties: false
        properties:
          author: {type: string}
          text: {type: string}
    answer: {type: string}
initial_state: {task: "", notes: []}
workers:
  a: {function: "cli_workers:note_a", reads: ["/task", "/notes"], writes: ["/notes/-"]}
  b: {function: "cli_workers:note_b", reads: ["/notes"], writes: ["/notes/-"]}
  decider: {function: "cli_workers:decide", reads: ["/task", "/notes"], writes: ["/answer"]}
invariants:
  - {at: "/notes/*", rule: "size(self.text) > 0", message: "notes are not empty"}
rules:
  - {"on": {op: start}, invoke: a}
  - {"on": {op: add, path: "/notes/-"}, when: "value.author == 'a'", invoke: b}
  - {"on": {op: add, path: "/notes/-"}, when: "value.author == 'b' && size(state.notes) < 4", invoke: a}
  - {"on": {op: add, path: "/notes/-"}, when: "value.author == 'b' && size(state.notes) >= 4", invoke: decider}
done: "has(state.answer)"
answer: /answer
"""


GARBAGE_YAML = """\
name: garbage
schema: {type: object, properties: {task: {type: string}, notes: {type: array, items: {type: string}}}}
initial_state: {task: "", notes: []}
workers:
  a: {function: "cli_workers:garbage", reads: ["/notes"], writes: ["/notes/-"]}
rules:
  - {"on": {op: start}, invoke: a}
"""


NO_TASK_YAML = """\
name: no-task
schema: {type: object, properties: {question: {type: string}, answer: {type: string}}}
initial_state: {question: ""}
workers:
  w: {function: "cli_workers:decide", reads: ["/question"], writes: ["/answer"]}
"""


INVALID_YAML = """\
name: invalid
schema: {type: object, additionalProperties: false, properties: {notes: {type: array}}}
workers:
  a: {reads: ["/notes"], writes: ["/nowhere"]}
invariants:
  - {at: "", rule: "size(self.notes) >"}
rules:
  - {"on": {op: start}, invoke: ghost}
"""


class Invoke:
    """Runs the CLI in process; ``(args) -> Result`` with ``.exit_code``, ``.stdout``, ``.stderr``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.runner = CliRunner()
        self.env = env

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Any:
        return self.runner.invoke(app, list(args), env={**self.env, **(env or {})}, catch_exceptions=False)

    def json(self, *args: str) -> Any:
        """Run with --json appended and parse stdout (the command must succeed)."""
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


def assert_no_boards(invoke: Invoke, db_path: Path) -> None:
    """No board was left behind: the store holds none, or was never created (read-only
    commands then refuse it rather than create it)."""
    if db_path.exists():
        assert invoke.json("boards") == []
    else:
        assert "no store at" in invoke("boards").output
        assert not db_path.exists()
