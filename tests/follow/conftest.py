"""Fixtures for the follow tests: the scale tests' helpers (a private PostgreSQL schema per test,
``slateboard worker`` subprocesses) reused from tests/scale."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCALE = Path(__file__).resolve().parent.parent / "scale"
if str(SCALE) not in sys.path:
    sys.path.insert(0, str(SCALE))

from scale_testkit import Workers, blueprint_file, private_pg_url  # noqa: E402, F401  (blueprint_file: a fixture)


@pytest.fixture
def pg_follow_url() -> Iterator[str]:
    """The URL of a fresh, private schema of the test database (dropped afterwards)."""
    yield from private_pg_url("sbt_follow")


@pytest.fixture
def follow_workers(tmp_path: Path) -> Iterator[Workers]:
    """Starts ``slateboard worker`` subprocesses; kills whatever is still running at the end."""
    pool = Workers(tmp_path)
    yield pool
    pool.kill_all()
