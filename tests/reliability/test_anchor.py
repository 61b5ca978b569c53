"""I1: an external anchor. Anyone with write access to the store could rewrite a log end to
end or roll back its tail and ``replay --verify`` still passed (the chain has no outside
reference). ``slateboard anchor`` signs checkpoints (HMAC-SHA256, key outside the store) into
an anchor file, and ``replay --verify --anchor FILE`` detects both.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from reliability_testkit import Invoke

from slateboard.kernel import Record
from slateboard.stores._common import unpack

NOTE = json.dumps([{"op": "add", "path": "/notes/-", "value": "n"}])


def _board(invoke: Invoke, tmp_path: Path) -> str:
    from reliability_testkit import scripted_blueprint

    path = tmp_path / "notes.yaml"
    path.write_text(scripted_blueprint([NOTE, NOTE, NOTE], max_steps=3))
    result = invoke("run", str(path), "--json")
    return str(json.loads(result.stdout)["board_id"])


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "anchor.key"
    path.write_bytes(b"0123456789abcdef0123456789abcdef\n")
    return path


def _verify(invoke: Invoke, board: str, anchor: Path, key: Path) -> tuple[int, str]:
    result = invoke("replay", board, "--verify", "--anchor", str(anchor), "--key-file", str(key))
    return result.exit_code, result.stderr


def test_i1_rolled_back_log_fails_against_the_anchor(invoke: Invoke, tmp_path: Path, key: Path) -> None:
    board = _board(invoke, tmp_path)
    anchor = tmp_path / "anchors.jsonl"
    assert invoke("anchor", board, "--anchor", str(anchor), "--key-file", str(key)).exit_code == 0
    assert _verify(invoke, board, anchor, key) == (0, "")
    # Roll back the tail consistently (the chain alone still verifies).
    con = sqlite3.connect(tmp_path / "boards.db")
    last = con.execute("SELECT max(seq) FROM records").fetchone()[0]
    con.execute("DELETE FROM records WHERE seq = ?", (last,))
    (prev,) = con.execute("SELECT data FROM records WHERE seq = ?", (last - 1,)).fetchone()
    rec = Record.from_bytes(unpack(prev, "record"))  # the store's blob format
    con.execute("UPDATE boards SET last_seq = ?, last_hash = ?, version = ?", (rec.seq, rec.hash, rec.version))
    con.commit()
    con.close()
    assert invoke("replay", board, "--verify").exit_code == 0  # undetectable without the anchor
    code, err = _verify(invoke, board, anchor, key)
    assert code == 3 and "rolled back" in err


def test_i1_rewritten_log_and_forged_anchor_fail(invoke: Invoke, tmp_path: Path, key: Path) -> None:
    board = _board(invoke, tmp_path)
    anchor = tmp_path / "anchors.jsonl"
    assert invoke("anchor", board, "--anchor", str(anchor), "--key-file", str(key)).exit_code == 0
    # A whole other log for the same board id: run a second board, move its log over.
    other = _board(invoke, tmp_path)
    con = sqlite3.connect(tmp_path / "boards.db")
    con.execute("DELETE FROM records WHERE board_id = ?", (board,))
    con.execute("UPDATE records SET board_id = ? WHERE board_id = ?", (board, other))
    con.commit()
    con.close()
    code, err = _verify(invoke, board, anchor, key)
    assert code == 3 and "rewritten" in err, err
    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(b"another key of sixteen+ bytes")
    code, err = _verify(invoke, board, anchor, wrong)
    assert code == 3 and "not signed by this key" in err


def test_i1_short_keys_and_missing_checkpoints_are_refused(invoke: Invoke, tmp_path: Path, key: Path) -> None:
    board = _board(invoke, tmp_path)
    short = tmp_path / "short.key"
    short.write_bytes(b"abc")
    anchor = tmp_path / "anchors.jsonl"
    assert invoke("anchor", board, "--anchor", str(anchor), "--key-file", str(short)).exit_code == 2
    anchor.write_bytes(b"")
    code, err = _verify(invoke, board, anchor, key)
    assert code == 3 and "no checkpoint" in err
