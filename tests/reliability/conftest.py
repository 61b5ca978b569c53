"""Fixtures for the reliability regressions (issue 20): the CLI in process on a private store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    """A private SQLite store."""
    return f"sqlite:///{tmp_path / 'boards.db'}"


@pytest.fixture
def invoke(tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """The CLI with $SLATEBOARD_STORE set to the private store and a private data dir."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return Invoke({"SLATEBOARD_STORE": store_url, "COLUMNS": "200"})


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a file under tmp_path and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


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
