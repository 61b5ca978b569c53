"""Shared data of tests/subboards: a child blueprint that summarises one document, parents that
fan out over a list of them, the function workers (importable as ``subboards_kit:NAME``, also from
the subprocess a kill test starts), and store helpers for SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STORES = HERE.parent / "stores"

LOG_ENV = "SB_TEST_LOG"
"""File each run of the child's worker appends ``ran DOCUMENT`` to (when set)."""
GATE_ENV = "SB_TEST_GATE"
"""A file whose absence holds the child's worker on a document starting with ``slow`` (when set)."""

_RUNNING = {"now": 0, "most": 0}


def _note(line: str) -> None:
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())


async def summarise(view: Any) -> list[dict[str, Any]]:
    """The child's worker: the summary of ``/document`` is the document in capitals. Counts the
    children running at once (``running()``) and waits at the gate (see GATE_ENV)."""
    doc = view.data["/document"]
    _note(f"ran {doc}")
    _RUNNING["now"] += 1
    _RUNNING["most"] = max(_RUNNING["most"], _RUNNING["now"])
    try:
        gate = os.environ.get(GATE_ENV)
        await asyncio.sleep(0.01)  # let the other children start: the bound is what limits them
        while gate and doc.startswith("slow") and not os.path.exists(gate):
            await asyncio.sleep(0.02)
    finally:
        _RUNNING["now"] -= 1
    if doc == "bad":
        return [{"op": "add", "path": "/summary", "value": 42}]  # a schema rejection, every time
    return [{"op": "add", "path": "/summary", "value": doc.upper()}]


def running() -> dict[str, int]:
    """The most child workers that ran at once since the last ``reset_running``."""
    return dict(_RUNNING)


def reset_running() -> None:
    """Start counting again."""
    _RUNNING.update(now=0, most=0)


def child_blueprint() -> dict[str, Any]:
    """Summarise one document: ``/document`` in, ``/summary`` (a string) out as the answer."""
    return {
        "name": "summarise",
        "schema": {
            "type": "object",
            "properties": {"document": {"type": "string"}, "summary": {"type": "string"}},
            "additionalProperties": False,
        },
        "initial_state": {"document": ""},
        "workers": {
            "summariser": {"function": "subboards_kit:summarise", "reads": ["/document"], "writes": ["/summary"]}
        },
        "rules": [{"on": {"op": "start"}, "invoke": "summariser"}],
        "done": "has(state.summary)",
        "answer": "/summary",
        "limits": {"max_steps": 4},
        "circuit": {"max_consecutive_invalid": 1, "on_invalid": "halt"},
    }


def parent_blueprint(
    documents: list[str], *, each: bool = True, child: Any = None, max_parallel: int = 4, max_items: int = 1000
) -> dict[str, Any]:
    """A parent whose ``each_doc`` worker runs one child per document (or, without ``each``,
    one child on the first) and proposes the summaries at ``/summaries`` (``/summary``)."""
    board: dict[str, Any] = {
        "blueprint": child if child is not None else child_blueprint(),
        "max_parallel": max_parallel,
        "max_items": max_items,
    }
    if each:
        board.update(each="/documents", inputs={"document": "item"})
        output, schema = "/summaries", {"type": "array", "items": {"type": "string"}}
    else:
        board.update(inputs={"document": "/documents/0"})
        output, schema = "/summary", {"type": "string"}
    return {
        "name": "digest",
        "schema": {
            "type": "object",
            "properties": {"documents": {"type": "array", "items": {"type": "string"}}, output[1:]: schema},
            "additionalProperties": False,
        },
        "initial_state": {"documents": documents},
        "workers": {"each_doc": {"reads": ["/documents"], "writes": [output], "output": output, "board": board}},
        "rules": [{"on": {"op": "start"}, "invoke": "each_doc"}],
        "done": f"has(state.{output[1:]})",
        "answer": output,
        "circuit": {"max_consecutive_invalid": 1, "on_invalid": "halt"},
    }


# -- stores ----------------------------------------------------------------------------------------
def scratch_pg() -> Iterator[str]:
    """A scratch PostgreSQL schema's store URL (skipped without a server), dropped afterwards."""
    import sys

    sys.path.insert(0, str(STORES))
    from stores_testkit import pg_url, scratch_pg_schema

    schemas = scratch_pg_schema("sbt_sub")
    schema = next(schemas)
    yield pg_url(schema)
    next(schemas, None)


def write_record(url: str, board_id: str, seq: int, data: bytes) -> None:
    """Overwrite a stored record's bytes behind the store's back (a tampered log)."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///") :]) as db:
            db.execute("UPDATE records SET data = ? WHERE board_id = ? AND seq = ?", (data, board_id, seq))
        return
    import psycopg

    dsn, _, query = url.partition("?")
    opts = dict(part.split("=", 1) for part in query.split("&") if part)
    schema = opts.pop("schema")
    rest = "&".join(f"{k}={v}" for k, v in opts.items())
    with psycopg.connect(dsn + (f"?{rest}" if rest else ""), autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".records SET data = %s WHERE board_id = %s AND seq = %s', (data, board_id, seq))
