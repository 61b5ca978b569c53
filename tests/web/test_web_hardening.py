"""Issue 20, dashboard items: D7 (hostile Last-Event-ID), D8 (a lock kept per distinct board id
ever requested), I5 (1-character tokens accepted), I6 (database paths in HTTP 500 bodies)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner
from web_testkit import Boards, ThreadServer, sse_events

from slateboard.cli import app as cli_app
from slateboard.stores import open_store
from slateboard.stores.base import StoreError
from slateboard.web import create_app
from slateboard.web._data import Dashboard


@pytest.mark.parametrize("last", ["²", "9" * 5000])
async def test_d7_hostile_last_event_id_is_ignored_not_a_500(
    live_server: ThreadServer, finished: Boards, last: str
) -> None:
    # Header bytes are read as latin-1: b"\xb2" arrives as "²", which str.isdigit() accepts.
    async with (
        httpx.AsyncClient(base_url=live_server.url, timeout=30) as http,
        http.stream(
            "GET",
            f"/api/boards/{finished.board_id}/events",
            headers={"Last-Event-ID": last.encode("latin-1")},  # type: ignore[arg-type]  # bytes on purpose
        ) as res,
    ):
        assert res.status_code == 200
        kind, data, _ = await asyncio.wait_for(anext(sse_events(res)), 30)
        assert kind == "record" and data["seq"] == 1  # treated as no Last-Event-ID at all


async def test_d8_unknown_board_ids_leave_no_lock_behind(finished: Boards) -> None:
    store = await open_store(finished.url)
    try:
        dashboard = Dashboard(store)
        for i in range(200):
            with pytest.raises(Exception, match="no board"):
                await dashboard.board(f"missing-{i}")
        await dashboard.board(finished.board_id)
        assert len(dashboard._locks) <= 1
    finally:
        await store.close()


def test_i5_short_tokens_are_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        create_app("memory://", token="x")
    result = CliRunner().invoke(cli_app, ["serve", "--token", "x", "--port", "0"], catch_exceptions=False)
    assert result.exit_code == 2 and "use at least 12" in result.stderr


async def test_i6_store_errors_do_not_leak_paths(finished: Boards, monkeypatch: pytest.MonkeyPatch) -> None:
    store = await open_store(finished.url)
    secret = "/very/secret/place/boards.db"

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError(f"disk I/O error on {secret}")

    monkeypatch.setattr(store, "list_boards", broken)
    try:
        app = create_app(store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            res = await c.get("/api/boards")
        assert res.status_code == 500
        assert secret not in res.text and "server log" in res.json()["error"]
    finally:
        await store.close()


async def test_i1_board_json_says_whether_the_log_is_anchored(finished: Boards, tmp_path: Any) -> None:
    from slateboard.kernel.anchor import sign_checkpoint

    key = b"k" * 32
    path = tmp_path / "anchors.jsonl"
    path.write_bytes(b"")
    store = await open_store(finished.url)
    try:
        records = await store.read_records(finished.board_id)

        async def anchor_of(app: Any) -> Any:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
                res = await c.get(f"/api/boards/{finished.board_id}")
            assert res.status_code == 200, res.text
            return res.json()["anchor"]

        assert await anchor_of(create_app(store)) is None
        app = create_app(store, anchor=(key, path))
        assert await anchor_of(app) == {"checkpoints": 0, "seq": None, "ok": False, "problem": None}
        path.write_bytes(sign_checkpoint(key, finished.board_id, records[-1]).to_line())
        got = await anchor_of(create_app(store, anchor=(key, path)))
        assert got["ok"] and got["seq"] == records[-1].seq
        path.write_bytes(sign_checkpoint(b"x" * 32, finished.board_id, records[-1]).to_line())
        got = await anchor_of(create_app(store, anchor=(key, path)))
        assert not got["ok"] and "not signed by this key" in got["problem"]
    finally:
        await store.close()


async def test_i1_dashboard_checks_a_genesis_checkpoint_against_the_stored_blueprint(
    finished: Boards, tmp_path: Any
) -> None:
    """Issue 29 (R1): a record-0 checkpoint binds the stored blueprint and initial state. The
    dashboard ignored it, so a blueprint edited in the store after anchoring showed as ``ok``."""
    import sqlite3

    from slateboard.kernel.anchor import sign_genesis
    from slateboard.kernel.record import board_genesis, board_genesis_hash
    from slateboard.stores._common import decode_json, encode_json

    key = b"k" * 32
    path = tmp_path / "anchors.jsonl"
    store = await open_store(finished.url)
    try:
        loaded = await store.load_board(finished.board_id)
        state_hash = str(board_genesis(loaded.blueprint, loaded.initial_state)["initial_state"])
        genesis = board_genesis_hash(loaded.blueprint, loaded.initial_state)
        path.write_bytes(sign_genesis(key, finished.board_id, genesis, state_hash).to_line())

        async def anchor_of() -> Any:
            app = create_app(store, anchor=(key, path))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
                res = await c.get(f"/api/boards/{finished.board_id}")
            assert res.status_code == 200, res.text
            return res.json()["anchor"]

        assert (await anchor_of())["ok"] is True
        db = finished.url.removeprefix("sqlite:///")
        con = sqlite3.connect(db)
        try:
            (raw,) = con.execute("SELECT blueprint FROM boards").fetchone()
            bp = decode_json(raw, "blueprint")
            bp["description"] = "loosened after the anchor"
            con.execute("UPDATE boards SET blueprint = ?", (encode_json(bp),))
            con.commit()
        finally:
            con.close()
        got = await anchor_of()
        assert got["ok"] is False and "genesis" in got["problem"]
    finally:
        await store.close()
