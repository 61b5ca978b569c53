"""D15: a stored record that cannot be decoded is named, and the intact ones stay readable.

Before: ``replay --verify`` said "the stored log cannot be read" and "0 records before it
verified" without naming the record, and ``log`` refused to show the intact records.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from reliability_testkit import Invoke, scripted_blueprint

NOTE = json.dumps([{"op": "add", "path": "/notes/-", "value": "n"}])


def _damaged_board(invoke: Invoke, tmp_path: Path) -> tuple[str, int]:
    path = tmp_path / "notes.yaml"
    path.write_text(scripted_blueprint([NOTE, NOTE, NOTE], max_steps=3))
    board = str(json.loads(invoke("run", str(path), "--json").stdout)["board_id"])
    total = len(invoke.json("log", board)["records"])
    con = sqlite3.connect(tmp_path / "boards.db")
    con.execute("UPDATE records SET data = ? WHERE seq = 3", (b"\x78garbage",))
    con.commit()
    con.close()
    return board, total


def test_d15_verify_names_the_undecodable_record(invoke: Invoke, tmp_path: Path) -> None:
    board, _ = _damaged_board(invoke, tmp_path)
    result = invoke("replay", board, "--verify")
    assert result.exit_code == 3
    assert "record 3: cannot be read" in result.stderr
    assert "2 records before it" in result.stderr


def test_d15_log_shows_the_intact_records(invoke: Invoke, tmp_path: Path) -> None:
    board, total = _damaged_board(invoke, tmp_path)
    result = invoke("log", board, "--json")
    assert result.exit_code == 1, result.output  # the store is damaged, and says where
    assert [r["seq"] for r in json.loads(result.stdout)["records"]] == [1, 2]
    assert "record 3 cannot be read" in result.stderr and total > 3
