"""Issue 29, R1: a board with no records is bound to its stored blueprint and initial state.

On ec36c64 only record 1 carried the genesis binding, so a ``submit``ted board that had not
stepped yet had nothing binding it: loosening its stored blueprint (an invariant set to ``true``)
let ``resume`` commit what the original contract forbade, and ``replay --verify --revalidate``
passed afterwards. These tests fail there (``resume`` succeeds, verify exits 0, ``anchor`` refuses
a board without records). Now every store writes the binding into the board's meta when it creates
the board; ``resume``, ``replay --verify`` and ``anchor`` (a record-0 checkpoint) check it. A board
created before the binding has none and verifies as ``unbound``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_testkit import NOTE_LONG, Invoke, guarded_blueprint

from slateboard.kernel.record import GENESIS_META, board_genesis
from slateboard.stores._common import decode_json, encode_json

PG = os.environ.get("SLATEBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")

Tamper = Callable[[str, Callable[[Any], None]], None]


def _sqlite_tamper(db: Path) -> Tamper:
    def tamper(column: str, change: Callable[[Any], None]) -> None:
        con = sqlite3.connect(db)
        try:
            (raw,) = con.execute(f"SELECT {column} FROM boards").fetchone()
            value = decode_json(raw, column)
            change(value)
            con.execute(f"UPDATE boards SET {column} = ?", (encode_json(value),))
            con.commit()
        finally:
            con.close()

    return tamper


def _pg_tamper(schema: str) -> Tamper:
    import psycopg

    def tamper(column: str, change: Callable[[Any], None]) -> None:
        with psycopg.connect(PG, autocommit=True) as con:
            row = con.execute(f'SELECT {column} FROM "{schema}".boards').fetchone()
            assert row is not None
            value = decode_json(bytes(row[0]), column)
            change(value)
            con.execute(f'UPDATE "{schema}".boards SET {column} = %s', (encode_json(value),))

    return tamper


@pytest.fixture(params=["sqlite", "postgresql"])
def board_store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Invoke, Tamper]]:
    """The CLI on a private store of each SQL backend, and a way to edit its boards row."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    if request.param == "sqlite":
        db = tmp_path / "boards.db"
        yield Invoke({"SLATEBOARD_STORE": f"sqlite:///{db}", "COLUMNS": "200"}), _sqlite_tamper(db)
        return
    try:
        import psycopg

        with psycopg.connect(PG, connect_timeout=3) as con:
            con.execute("SELECT 1")
    except Exception as exc:
        pytest.skip(f"PostgreSQL at {PG} does not answer ({type(exc).__name__})")
    schema = f"sbg_{uuid.uuid4().hex[:16]}"
    url = f"{PG}{'&' if '?' in PG else '?'}schema={schema}"
    yield Invoke({"SLATEBOARD_STORE": url, "COLUMNS": "200"}), _pg_tamper(schema)
    with psycopg.connect(PG, autocommit=True) as con:
        con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _submit(invoke: Invoke, tmp_path: Path) -> str:
    path = tmp_path / "guarded.yaml"
    path.write_text(guarded_blueprint([NOTE_LONG]))
    result = invoke("submit", str(path), "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["board_id"])


def _loosen(bp: dict[str, Any]) -> None:
    bp["invariants"][0]["rule"] = "true"


def _plant(state: dict[str, Any]) -> None:
    state["notes"] = ["far too long, planted"]


@pytest.mark.parametrize(("column", "change"), [("blueprint", _loosen), ("initial_state", _plant)])
def test_r1_an_unstepped_board_whose_blueprint_was_loosened_is_refused(
    board_store: tuple[Invoke, Tamper], tmp_path: Path, column: str, change: Callable[[Any], None]
) -> None:
    invoke, tamper = board_store
    board = _submit(invoke, tmp_path)
    ok = invoke("replay", board, "--verify", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["genesis"] == "bound", ok.output
    tamper(column, change)
    for mode in (["--verify"], ["--verify", "--revalidate"]):
        result = invoke("replay", board, *mode)
        assert result.exit_code == 3, result.output
        assert "record 0: genesis" in result.stderr
        assert ("blueprint differs" if column == "blueprint" else "initial state differs") in result.stderr
    resumed = invoke("resume", board)
    assert resumed.exit_code == 1 and "cannot be resumed" in resumed.stderr, resumed.output
    assert invoke.json("log", board)["records"] == []  # nothing was committed under the loosened rules


def test_r1_an_anchor_signs_the_genesis_of_a_board_without_records(
    board_store: tuple[Invoke, Tamper], tmp_path: Path
) -> None:
    invoke, tamper = board_store
    key = tmp_path / "anchor.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef")
    anchor = tmp_path / "anchors.jsonl"
    board = _submit(invoke, tmp_path)
    signed = invoke("anchor", board, "--anchor", str(anchor), "--key-file", str(key), "--json")
    assert signed.exit_code == 0, signed.output
    assert json.loads(signed.stdout)["seq"] == 0
    verify = ("replay", board, "--verify", "--anchor", str(anchor), "--key-file", str(key))
    assert invoke(*verify).exit_code == 0
    # Edit the blueprint and rewrite the binding in meta to match: only the anchor can tell.
    loosened: dict[str, Any] = {}

    def loosen_and_keep(bp: dict[str, Any]) -> None:
        _loosen(bp)
        loosened.update(bp)

    tamper("blueprint", loosen_and_keep)
    tamper("initial_state", lambda s: loosened.__setitem__("_initial", dict(s)))
    initial = loosened.pop("_initial")
    tamper("meta", lambda meta: meta.__setitem__(GENESIS_META, board_genesis(loosened, initial)))
    assert invoke("replay", board, "--verify").exit_code == 0  # the chain alone cannot see it
    result = invoke(*verify)
    assert result.exit_code == 3 and "genesis" in result.stderr, result.output


def test_r1_a_board_created_before_the_binding_verifies_as_unbound(
    board_store: tuple[Invoke, Tamper], tmp_path: Path
) -> None:
    invoke, tamper = board_store
    board = _submit(invoke, tmp_path)
    tamper("meta", lambda meta: meta.pop(GENESIS_META))
    result = invoke("replay", board, "--verify", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["genesis"] == "unbound", result.output
    assert "unbound" in invoke("replay", board, "--verify").stdout


async def test_r1_the_memory_store_binds_too() -> None:
    from slateboard.blueprint import compile_blueprint
    from slateboard.kernel.record import board_genesis_problem
    from slateboard.runtime import create_board
    from slateboard.stores import open_store

    store = await open_store("memory://")
    bp = compile_blueprint({"schema": {"type": "object"}, "initial_state": {"a": 1}, "workers": {"w": {}}})
    board = await create_board(store, bp)
    loaded = await store.load_board(board)
    info = await store.board_info(board)
    assert info.meta[GENESIS_META] == {
        "blueprint": bp.digest,
        "initial_state": board_genesis({}, {"a": 1})["initial_state"],
    }
    assert board_genesis_problem(info.meta, loaded.blueprint, loaded.initial_state) is None
    assert board_genesis_problem(info.meta, {**loaded.blueprint, "name": "other"}, loaded.initial_state)
