"""D5: the stored blueprint and initial state are bound to the hash chain's genesis.

Before: editing ``boards.blueprint`` (an invariant set to ``true``) left ``replay --verify``
passing, ``resume`` committed what the original contract forbade, and ``--revalidate`` passed
afterwards. Now record 1 carries the blueprint digest and the initial state hash, so either
change fails verification at record 0, and ``resume`` refuses the board.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from reliability_testkit import NOTE_LONG, Invoke, guarded_blueprint

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, Record
from slateboard.kernel.replay import replay
from slateboard.stores._common import decode_json, encode_json

NOTE_OK = json.dumps([{"op": "add", "path": "/notes/-", "value": "ok"}])


def _tamper(db: Path, column: str, change: Any) -> None:
    con = sqlite3.connect(db)
    try:
        (raw,) = con.execute(f"SELECT {column} FROM boards").fetchone()
        value = decode_json(raw, column)  # the store's own blob format (canonical JSON, maybe zlib-packed)
        change(value)
        con.execute(f"UPDATE boards SET {column} = ?", (encode_json(value),))
        con.commit()
    finally:
        con.close()


def _run_board(invoke: Invoke, tmp_path: Path) -> str:
    path = tmp_path / "guarded.yaml"
    path.write_text(guarded_blueprint([NOTE_LONG]))
    result = invoke("run", str(path), "--json")
    board = str(json.loads(result.stdout)["board_id"])
    records = invoke.json("log", board)["records"]
    assert records[0]["stage"] == "invariants"  # the original contract forbade it
    return board


def _allow_everything(bp: dict[str, Any]) -> None:
    bp["invariants"][0]["rule"] = "true"


def _other_initial_state(state: dict[str, Any]) -> None:
    state["notes"] = ["planted"]


@pytest.mark.parametrize(
    ("column", "change"), [("blueprint", _allow_everything), ("initial_state", _other_initial_state)]
)
@pytest.mark.parametrize("mode", ["--verify", "--revalidate"])
def test_d5_edited_blueprint_or_initial_state_fails_verify_at_record_0(
    invoke: Invoke, tmp_path: Path, column: str, change: Any, mode: str
) -> None:
    board = _run_board(invoke, tmp_path)
    assert invoke("replay", board, "--verify").exit_code == 0
    _tamper(tmp_path / "boards.db", column, change)
    result = invoke("replay", board, "--verify", *([mode] if mode == "--revalidate" else []))
    assert result.exit_code == 3, result.output
    assert "record 0: genesis" in result.stderr
    assert ("blueprint differs" if column == "blueprint" else "initial state differs") in result.stderr


def test_d5_resume_refuses_a_board_whose_blueprint_was_edited(invoke: Invoke, tmp_path: Path) -> None:
    board = _run_board(invoke, tmp_path)
    _tamper(tmp_path / "boards.db", "blueprint", _allow_everything)
    before = invoke.json("log", board)["records"]
    result = invoke("resume", board)
    assert result.exit_code == 1 and "cannot be resumed" in result.stderr
    assert invoke.json("log", board)["records"] == before  # nothing appended


def test_d5_a_legacy_log_without_binding_still_replays_and_says_so() -> None:
    # A log written before the binding: record 1 without meta.genesis, chained from GENESIS.
    bp = compile_blueprint(
        {
            "schema": {"type": "object"},
            "initial_state": {},
            "workers": {"w": {"reads": ["/**"], "writes": ["/**"]}},
        }
    )
    kernel = Kernel(bp)
    decision = kernel.submit(Proposal("w", [{"op": "add", "path": "/a", "value": 1}]))
    assert decision.accepted
    body: dict[str, Any] = decision.record.to_json()
    assert body["meta"]["genesis"] == {"blueprint": bp.digest, "initial_state": Kernel(bp).state_hash}
    del body["meta"]["genesis"]
    legacy = Record.from_json(body).sealed()
    report = replay(bp, {}, [legacy])
    assert report.ok and report.legacy_genesis
    assert not replay(bp, {}, [decision.record]).legacy_genesis
