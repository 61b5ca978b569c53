"""``boards``, ``log``, ``show --at`` and ``replay --verify`` against a finished board."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

from cli_testkit import Invoke

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.stores import open_store


def test_boards_lists_the_board(invoke: Invoke, board: dict[str, Any]) -> None:
    listed = invoke.json("boards")
    assert [b["board_id"] for b in listed] == [board["board_id"]]
    assert listed[0]["status"] == "done" and listed[0]["records"] == 7 and listed[0]["version"] == 5
    table = invoke("boards")
    assert table.exit_code == 0 and board["board_id"] in table.stdout and "notes" in table.stdout
    assert invoke.json("boards", "--status", "failed") == []


def test_log_table_and_filters(invoke: Invoke, board: dict[str, Any]) -> None:
    board_id = board["board_id"]

    def shown(*args: str) -> list[dict[str, Any]]:
        # ``log --json`` is the board (lineage, cost) with the records it shows under ``records``
        out = invoke.json("log", board_id, *args)
        assert out["board_id"] == board_id and out["parent"] is None
        records: list[dict[str, Any]] = out["records"]
        return records

    records = shown()
    assert [r["seq"] for r in records] == list(range(1, 8))
    assert shown("--worker", "a") == [r for r in records if r["worker"] == "a"]
    rejected = shown("--outcome", "rejected")
    assert len(rejected) == 1 and rejected[0]["worker"] == "b" and rejected[0]["stage"] == "invariants"
    assert shown("--stage", "invariants") == rejected
    both = shown("-w", "a", "-w", "decider", "-o", "accepted")
    assert {r["worker"] for r in both} == {"a", "decider"}
    table = invoke("log", board_id[:8], "--outcome", "rejected")  # a unique id prefix works
    assert table.exit_code == 0
    assert "7 records, 1 shown" in table.stdout and "notes are not empty" in table.stdout
    patches = invoke("log", board_id, "--worker", "decider", "--patches")
    assert '"path":"/answer"' in patches.stdout
    bad = invoke("log", board_id, "--outcome", "maybe")
    assert bad.exit_code == 2 and "unknown outcome" in bad.stderr


def _replayed_at(url: str, board_id: str, version: int) -> Any:
    async def go() -> Any:
        store = await open_store(url)
        try:
            loaded = await store.load_board(board_id)
            records = [r for r in await store.read_records(board_id) if r.version <= version]
            report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records)
            assert report.ok
            return report.state
        finally:
            await store.close()

    return asyncio.run(go())


def test_show_at_an_earlier_version_is_the_replayed_state(
    invoke: Invoke, board: dict[str, Any], store_url: str
) -> None:
    board_id = board["board_id"]
    latest = invoke.json("show", board_id)
    assert latest["version"] == 5 and latest["state"] == board["state"]
    for version in (0, 2, 3):
        shown = invoke.json("show", board_id, "--at", str(version))
        assert shown["version"] == version
        assert shown["state"] == _replayed_at(store_url, board_id, version)
    assert invoke.json("show", board_id, "--at", "0")["state"] == {"task": "write notes", "notes": []}
    part = invoke.json("show", board_id, "--at", "3", "--path", "/notes/2")
    assert part["state"] == {"author": "a", "text": "note 2"}
    text = invoke("show", board_id, "--at", "2")
    assert text.exit_code == 0 and "version 2" in text.stdout and '"reply"' in text.stdout
    too_far = invoke("show", board_id, "--at", "99")
    assert too_far.exit_code == 1 and "latest version is 5" in too_far.stderr


def test_replay_verify_ok(invoke: Invoke, board: dict[str, Any]) -> None:
    result = invoke("replay", board["board_id"], "--verify")
    assert result.exit_code == 0, result.output
    assert "7 records verified" in result.stdout
    again = invoke("replay", board["board_id"], "--verify", "--revalidate")
    assert again.exit_code == 0 and "7 records revalidated" in again.stdout
    data = invoke.json("replay", board["board_id"])
    assert data["ok"] is True and data["state"] == board["state"]


def test_replay_verify_checks_snapshots(invoke: Invoke, notes_file: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'snap.db'}?snapshot_every=2"
    run = invoke("run", str(notes_file), "--store", url, "--json")
    assert run.exit_code == 0, run.output
    board_id = json.loads(run.stdout)["board_id"]
    assert invoke("replay", board_id, "--verify", "--store", url).exit_code == 0
    assert invoke.json("show", board_id, "--store", url)["state"] == json.loads(run.stdout)["state"]


def _tamper(db_path: Path, store_url: str, board_id: str, seq: int) -> None:
    """Rewrite record ``seq`` with a different reason but its old hash (valid JSON, wrong hash)."""

    async def read() -> Any:
        store = await open_store(store_url)
        try:
            return (await store.read_records(board_id, seq, limit=1))[0]
        finally:
            await store.close()

    rec = asyncio.run(read())
    forged = dataclasses.replace(rec, reason="nothing to see here")
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE records SET data = ? WHERE board_id = ? AND seq = ?", (forged.to_bytes(), board_id, seq))


def test_replay_verify_names_the_first_altered_record(
    invoke: Invoke, board: dict[str, Any], db_path: Path, store_url: str
) -> None:
    board_id = board["board_id"]
    _tamper(db_path, store_url, board_id, 3)
    result = invoke("replay", board_id, "--verify")
    assert result.exit_code == 3
    assert "record 3" in result.stderr and "altered" in result.stderr
    assert "first bad record: seq 3" in result.stderr and "2 records before it verified" in result.stderr
    assert "Traceback" not in result.output
    data = json.loads(invoke("replay", board_id, "--verify", "--json").stdout)
    assert data["ok"] is False and data["bad_seq"] == 3 and data["record"]["reason"] == "nothing to see here"
    # show refuses to present a state from a log that does not verify
    shown = invoke("show", board_id)
    assert shown.exit_code == 1 and "does not verify at record 3" in shown.stderr


def test_replay_verify_fails_on_unreadable_bytes(invoke: Invoke, board: dict[str, Any], db_path: Path) -> None:
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE records SET data = ? WHERE seq = 4", (b"\x01\xde\xad\xbe\xef",))
    result = invoke("replay", board["board_id"], "--verify")
    assert result.exit_code == 3
    assert "cannot be read" in result.stderr and "Traceback" not in result.output
    plain = invoke("log", board["board_id"])
    assert plain.exit_code == 1 and plain.stderr.startswith("error: the store is damaged")
