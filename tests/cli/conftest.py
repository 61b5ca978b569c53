"""Fixtures for the CLI tests: an isolated store and data dir, blueprint files, and ``invoke``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private XDG data dir, so the default store never touches the user's."""
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.delenv("SLATEBOARD_STORE", raising=False)
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's SQLite store lives."""
    return tmp_path / "boards.db"


@pytest.fixture
def store_url(db_path: Path) -> str:
    """The test's SQLite store URL."""
    return f"sqlite:///{db_path}"


@pytest.fixture
def invoke(data_home: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """The CLI with $SLATEBOARD_STORE pointing at the test store and cli_workers importable."""
    monkeypatch.syspath_prepend(str(HERE))
    return Invoke({"SLATEBOARD_STORE": store_url, "COLUMNS": "200"})


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a file under tmp_path and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def notes_file(write_file: Callable[[str, str], Path]) -> Path:
    """The notes blueprint (function workers in cli_workers)."""
    return write_file("notes.yaml", NOTES_YAML)


@pytest.fixture
def board(invoke: Invoke, notes_file: Path) -> dict[str, Any]:
    """A finished notes board in the test store: the ``run --json`` result."""
    data: dict[str, Any] = invoke.json("run", str(notes_file), "--task", "write notes")
    return data


def assert_no_boards(invoke: Invoke, db_path: Path) -> None:
    """No board was left behind: the store holds none, or was never created (read-only
    commands then refuse it rather than create it)."""
    if db_path.exists():
        assert invoke.json("boards") == []
    else:
        assert "no store at" in invoke("boards").output
        assert not db_path.exists()
