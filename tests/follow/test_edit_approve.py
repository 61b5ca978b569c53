"""Edit-then-approve: a held proposal approved with a person's edited patch, checked by every
kernel stage now, committed by the next run without calling the worker again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import follow_fns
import pytest

from slateboard.runtime import Runner, create_board
from slateboard.runtime.approval import ApprovalError, approve_edited, held_proposals
from slateboard.stores import open_store

BLUEPRINT: dict[str, Any] = {
    "name": "edit",
    "schema": {
        "type": "object",
        "required": ["task"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "answer": {
                "type": "object",
                "required": ["text", "score"],
                "additionalProperties": False,
                "properties": {"text": {"type": "string"}, "score": {"type": "integer"}},
            },
        },
    },
    "initial_state": {"task": ""},
    "answer": "/answer",
    "approval": ["/answer"],
    "workers": {"writer": {"function": "follow_fns:write", "reads": ["/task"], "writes": ["/answer"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "writer"}],
}


async def held_board(url: str) -> tuple[Any, str, int]:
    store = await open_store(url)
    board = await create_board(store, BLUEPRINT, task="t")
    result = await Runner(store, board).run()
    assert result.end_reason.startswith("paused: awaiting approval")
    (held,) = await held_proposals(store, board)
    return store, board, held.seq


def test_edited_patch_is_committed_without_calling_the_worker_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def go() -> None:
        store, board, seq = await held_board(url)
        try:
            calls = follow_fns.CALLS.get("write", 0)
            edit = json.dumps([{"op": "add", "path": "/answer", "value": {"text": "edited", "score": 5}}])
            rec = await approve_edited(store, board, seq, edit, by="carol")
            assert rec.meta["by"] == "carol" and rec.meta["edited"] is True and rec.meta["record"] == seq
            result = await Runner(store, board).run()
            assert not result.end_reason.startswith("paused")
            assert result.answer == {"text": "edited", "score": 5}
            assert follow_fns.CALLS["write"] == calls  # zero extra worker calls
            records = await store.read_records(board)
            committed = [r for r in records if r.outcome == "accepted"]
            assert json.loads(committed[-1].patch or "")[0]["value"]["text"] == "edited"
        finally:
            await store.close()

    asyncio.run(go())


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ('[{"op": "add", "path": "/answer", "value": {"text": 3, "score": 1}}]', "fails stage schema"),
        ("not json", "is not JSON"),
        ('{"op": "add"}', "not a JSON array of operations"),
        ('[{"op": "add", "path": "/task", "value": "x"}]', "touches '/task', outside the approval paths"),
    ],
)
def test_bad_edits_write_nothing_and_the_board_stays_paused(tmp_path: Path, edit: str, needle: str) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def go() -> None:
        store, board, seq = await held_board(url)
        try:
            before = await store.read_records(board)
            with pytest.raises(ApprovalError, match=needle):
                await approve_edited(store, board, seq, edit)
            assert await store.read_records(board) == before
            assert (await store.board_info(board)).status == "paused"
        finally:
            await store.close()

    asyncio.run(go())


def test_cli_approve_with_a_patch_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slateboard.cli import app

    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def make() -> str:
        store, board, _ = await held_board(url)
        await store.close()
        return board

    board = asyncio.run(make())
    bad = tmp_path / "bad.json"
    bad.write_text('[{"op": "add", "path": "/answer", "value": {"text": "x"}}]', encoding="utf-8")
    result = CliRunner().invoke(app, ["approve", board, "--patch", str(bad), "--store", url])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "fails stage schema" in line
    good = tmp_path / "good.json"
    good.write_text('[{"op": "add", "path": "/answer", "value": {"text": "ok", "score": 2}}]', encoding="utf-8")
    result = CliRunner().invoke(app, ["approve", board, "--patch", str(good), "--by", "dan", "--store", url])
    assert result.exit_code == 0, result.output
    assert "dan approved record" in result.stdout and "edited patch" in result.stdout
    result = CliRunner().invoke(app, ["approve", board, "--patch", str(tmp_path / "missing.json"), "--store", url])
    assert result.exit_code == 2 and "missing.json" in result.stderr
