"""Fixtures for the reliability regressions (issue 20): the CLI in process on a private store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_testkit import Invoke


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
