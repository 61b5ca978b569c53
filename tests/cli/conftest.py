"""Fixtures for the CLI tests: an isolated store and data dir, blueprint files, and ``invoke``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import GARBAGE_YAML, HERE, INVALID_YAML, NO_TASK_YAML, NOTES_YAML, Invoke, assert_no_boards  # noqa: F401  (re-exported for the fixtures below)


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
