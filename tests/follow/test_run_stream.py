"""``slateboard run --stream tokens|updates``: the streamed tokens (tagged by worker) or the
committed updates are printed while the run goes, ``--json`` prints one object per event, the
log is the same as without ``--stream``, and an unknown mode is a one-line usage error."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.stores import open_store

BLUEPRINT: dict[str, Any] = {
    "name": "stream",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string", "maxLength": 20}}},
    },
    "initial_state": {"notes": []},
    "workers": {
        "writer": {"reads": ["/notes"], "writes": ["/notes/-"]},
        "checker": {"reads": ["/notes"], "writes": ["/notes/-"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) == 1", "invoke": "checker"},
    ],
}


def note(text: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": text}]})


# The checker's first reply breaks the schema (rejected, retried): a log with a rejection.
REPLIES = [note("a first note"), note("x" * 40), note("checked")]
MODEL = "scripted:" + json.dumps(REPLIES)


def run_cli(tmp_path: Path, db: str, *extra: str) -> tuple[int, str, str]:
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(BLUEPRINT))
    url = f"sqlite:///{tmp_path / db}"
    res = CliRunner().invoke(app, ["run", str(bp), "--model", MODEL, "--store", url, *extra])
    return res.exit_code, res.stdout, res.stderr


def logged(tmp_path: Path, db: str) -> list[tuple[Any, ...]]:
    async def read() -> list[tuple[Any, ...]]:
        store = await open_store(f"sqlite:///{tmp_path / db}")
        try:
            (board,) = await store.list_boards()
            recs = await store.read_records(board.board_id)
        finally:
            await store.close()
        return [
            (
                r.kind,
                r.outcome,
                r.worker,
                r.invocation,
                r.view_hash,
                r.patch,
                r.stage,
                r.version,
                r.state_after,
                (r.usage.tokens_in, r.usage.tokens_out, r.usage.component),  # latency is the clock's
            )
            for r in recs
        ]

    return asyncio.run(read())


def test_tokens_json_are_every_reply_in_chunks_and_the_log_is_unchanged(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, "streamed.db", "--stream", "tokens", "--json")
    assert code == 0, out
    lines = [json.loads(line) for line in out.splitlines()]
    events, result = lines[:-1], lines[-1]
    assert {e["kind"] for e in events} == {"model.tokens"}
    replies: dict[tuple[Any, ...], str] = {}
    for e in events:
        key = (e["worker"], e["invocation"], e["call"], e["attempt"])
        replies[key] = replies.get(key, "") + e["text"]
    assert list(replies.values()) == REPLIES  # every reply, in order, its chunks joined
    # The checker's retry after its rejected reply is its invocation's second model call.
    assert [(k[0], k[1], k[2]) for k in replies] == [
        ("writer", "v0.0", 0),
        ("checker", "v1.0", 0),
        ("checker", "v1.0", 1),
    ]
    assert result["state"] == {"notes": ["a first note", "checked"]} and result["rejected"] == 1

    code, _, _ = run_cli(tmp_path, "plain.db", "--json")
    assert code == 0
    assert logged(tmp_path, "streamed.db") == logged(tmp_path, "plain.db")  # streaming changes no record


def test_tokens_text_tags_each_reply_with_its_worker(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, "b.db", "--stream", "tokens")
    assert code == 0, out
    tagged = [line for line in out.splitlines() if line.startswith("[")]
    assert tagged == [f"[writer] {REPLIES[0]}", f"[checker] {REPLIES[1]}", f"[checker] {REPLIES[2]}"]


def test_updates_print_each_committed_patch(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, "b.db", "--stream", "updates")
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("#")]
    first = json.dumps([{"op": "add", "path": "/notes/-", "value": "a first note"}])
    second = json.dumps([{"op": "add", "path": "/notes/-", "value": "checked"}])
    # The rejected reply is no update: seq 2 is its rejection record.
    assert lines == [f"#1 v1 writer: {first}", f"#3 v2 checker: {second}"]

    code, out, _ = run_cli(tmp_path, "c.db", "--stream", "updates", "--json")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()][:-1]
    assert [(e["kind"], e["seq"], e["version"], e["worker"]) for e in events] == [
        ("state.update", 1, 1, "writer"),
        ("state.update", 3, 2, "checker"),
    ]


@pytest.mark.parametrize("mode", ["values", "token", ""])
def test_an_unknown_mode_is_a_one_line_usage_error_before_any_board(tmp_path: Path, mode: str) -> None:
    code, _, err = run_cli(tmp_path, "b.db", "--stream", mode)
    assert code == 2
    assert err.strip().splitlines() == [f"error: --stream: expected one of tokens, updates, got {mode!r}"]
    assert not (tmp_path / "b.db").exists() or logged_boards(tmp_path) == 0


def logged_boards(tmp_path: Path) -> int:
    async def count() -> int:
        store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
        try:
            return len(await store.list_boards())
        finally:
            await store.close()

    return asyncio.run(count())


def test_resume_streams_updates_too(tmp_path: Path) -> None:
    from slateboard.runtime import create_board

    url = f"sqlite:///{tmp_path / 'r.db'}"

    async def make() -> str:
        store = await open_store(url)
        try:
            return await create_board(store, BLUEPRINT)  # created, never run: resume drives it
        finally:
            await store.close()

    board = asyncio.run(make())
    res = CliRunner().invoke(app, ["resume", board, "--model", MODEL, "--store", url, "--stream", "updates", "--json"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(e["kind"], e["seq"], e["worker"]) for e in lines[:-1]] == [
        ("state.update", 1, "writer"),
        ("state.update", 3, "checker"),
    ]
    assert lines[-1]["board_id"] == board and lines[-1]["state"] == {"notes": ["a first note", "checked"]}
    bad = CliRunner().invoke(app, ["resume", board, "--store", url, "--stream", "nope"])
    assert bad.exit_code == 2 and bad.stderr.strip() == "error: --stream: expected one of tokens, updates, got 'nope'"
