"""Helpers of the store tests: the PostgreSQL server to test against, and the conformance kit
(re-exported from ``slateboard.testing.kit``, where the suite shipped in the package lives)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from slateboard.testing.kit import (
    WORKERS,
    Board,
    OpenStore,
    blueprint_json,
    compiled,
    entry,
    inv,
    kernel_from,
)

__all__ = [
    "DEFAULT_PG",
    "WORKERS",
    "Board",
    "OpenStore",
    "blueprint_json",
    "compiled",
    "entry",
    "inv",
    "kernel_from",
    "pg_dsn",
    "pg_skip_reason",
    "pg_url",
    "scratch_pg_schema",
]

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


def pg_dsn() -> str:
    """The PostgreSQL DSN tests use: $SLATEBOARD_TEST_PG or the local default."""
    return os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG


_PG_STATE: dict[str, str | None] = {}


def pg_skip_reason() -> str | None:
    """None when the test PostgreSQL server answers, else why it is skipped."""
    if "reason" not in _PG_STATE:
        try:
            import psycopg

            with psycopg.connect(pg_dsn(), connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _PG_STATE["reason"] = None
        except Exception as exc:  # any failure means: no server for these tests
            _PG_STATE["reason"] = f"PostgreSQL at {pg_dsn()} does not answer ({type(exc).__name__}: {exc})"
    return _PG_STATE["reason"]


def pg_url(schema: str, **opts: object) -> str:
    dsn = pg_dsn()
    extra = "&".join(f"{k}={v}" for k, v in {"schema": schema, **opts}.items())
    return f"{dsn}{'&' if '?' in dsn else '?'}{extra}"


def scratch_pg_schema(prefix: str) -> Iterator[str]:
    """A fixture's body: a fresh schema name ``PREFIX_<random>`` on the test server (the test
    is skipped when the server does not answer), dropped with all it holds afterwards."""
    if reason := pg_skip_reason():
        pytest.skip(reason)
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    yield schema
    import psycopg

    with psycopg.connect(pg_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
