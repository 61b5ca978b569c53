"""The dashboard's JSON API against real SQLite boards run by the real runner: boards, records,
states at every version (time travel), rebuilt views, token usage, bad inputs, and the event
streams over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from web_boards import NOTES, make_board, make_team_board, new_board, note, run_board
from web_testkit import Boards, ThreadServer, sse_events

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import state_hash
from slateboard.kernel.pointer import Pattern, parse_pointer, region_contains
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.views import build_view
from slateboard.views._build import visible_pointers
from slateboard.web import create_app


@pytest.fixture
async def store(finished: Boards) -> AsyncIterator[Store]:
    s = await open_store(finished.url)
    yield s
    await s.close()


@pytest.fixture
async def client(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        yield c


async def test_boards_lists_every_board_with_its_header(client: httpx.AsyncClient, store: Store) -> None:
    second = await new_board(store, "another task")
    res = await client.get("/api/boards")
    assert res.status_code == 200
    rows = {b["board_id"]: b for b in res.json()["boards"]}
    assert set(rows) == {b.board_id for b in await store.list_boards()}
    for info in await store.list_boards():
        row = rows[info.board_id]
        assert (row["name"], row["status"], row["reason"], row["version"], row["records"]) == (
            info.name,
            info.status,
            info.reason,
            info.version,
            info.seq,
        )
    assert rows[second]["status"] == "running" and rows[second]["records"] == 0


async def test_board_counts_outcomes_and_tokens_per_worker_and_component(
    client: httpx.AsyncClient, store: Store, finished: Boards
) -> None:
    records = await store.read_records(finished.board_id)
    res = await client.get(f"/api/boards/{finished.board_id}")
    assert res.status_code == 200
    data = res.json()
    assert data["blueprint"]["name"] == NOTES["name"]
    assert set(data["blueprint"]["workers"]) == set(NOTES["workers"])
    assert data["outcomes"] == {o: sum(r.outcome == o for r in records) for o in {r.outcome for r in records}}
    assert data["outcomes"]["rejected"] == 1
    for worker in ("a", "b", "decider"):
        mine = [r for r in records if r.worker == worker and r.kind == "proposal"]
        got = data["usage"]["by_worker"][worker]
        assert got["tokens_in"] == sum(r.usage.tokens_in for r in mine) > 0
        assert got["tokens_out"] == sum(r.usage.tokens_out for r in mine) > 0
        assert got["calls"] == len(mine)
    components = data["usage"]["by_component"]
    assert sum(c["tokens_in"] + c["tokens_out"] for c in components.values()) == data["tokens"]
    assert data["tokens"] == sum(r.usage.tokens_in + r.usage.tokens_out for r in records)


async def test_records_match_the_log_and_page(client: httpx.AsyncClient, store: Store, finished: Boards) -> None:
    records = await store.read_records(finished.board_id)
    res = await client.get(f"/api/boards/{finished.board_id}/records")
    assert res.status_code == 200
    body = res.json()
    assert body["total"] == len(records) and body["next_after"] is None
    for got, rec in zip(body["records"], records, strict=True):
        assert {k: got[k] for k in rec.to_json()} == rec.to_json()
        assert got["tokens"] == rec.usage.tokens_in + rec.usage.tokens_out
    rejected = [r for r in body["records"] if r["outcome"] == "rejected"]
    assert [(r["worker"], r["stage"]) for r in rejected] == [("b", "invariants")]
    assert "notes are not empty" in rejected[0]["reason"]
    page = (await client.get(f"/api/boards/{finished.board_id}/records", params={"after": 2, "limit": 3})).json()
    assert [r["seq"] for r in page["records"]] == [3, 4, 5] and page["next_after"] == 5
    rest = (await client.get(f"/api/boards/{finished.board_id}/records", params={"after": 5})).json()
    assert [r["seq"] for r in rest["records"]] == list(range(6, len(records) + 1)) and rest["next_after"] is None


async def test_state_at_every_version_is_the_logged_one(
    client: httpx.AsyncClient, store: Store, finished: Boards
) -> None:
    records = await store.read_records(finished.board_id)
    loaded = await store.load_board(finished.board_id)
    accepted = [r for r in records if r.accepted]
    latest = accepted[-1].version
    # Ask out of order so the replay starts both from cached states and from scratch.
    for version in [latest, 0, 3, 1, 2, *range(latest + 1)]:
        res = await client.get(f"/api/boards/{finished.board_id}/state", params={"version": version})
        assert res.status_code == 200, res.text
        data = res.json()
        assert data["version"] == version and data["latest_version"] == latest
        assert state_hash(data["state"]) == data["state_hash"]
        if version == 0:
            assert data["state"] == loaded.initial_state and data["record"] is None
        else:
            made_by = accepted[version - 1]
            assert data["state_hash"] == made_by.state_after
            assert data["record"]["seq"] == made_by.seq
            assert data["changed"], "an accepted patch changes something"
        assert len(data["state"]["notes"]) == min(version, 4)
        assert ("answer" in data["state"]) == (version == latest)
    default = (await client.get(f"/api/boards/{finished.board_id}/state")).json()
    assert default["version"] == latest and default["state_hash"] == records[-1].state_after


async def test_every_logged_view_is_rebuilt_with_a_matching_hash(
    client: httpx.AsyncClient, store: Store, finished: Boards
) -> None:
    records = await store.read_records(finished.board_id)
    loaded = await store.load_board(finished.board_id)
    seen = [r for r in records if r.view_hash]
    assert len(seen) == 6
    for rec in seen:
        res = await client.get(f"/api/boards/{finished.board_id}/views/{rec.view_hash}", params={"seq": rec.seq})
        assert res.status_code == 200, res.text
        data = res.json()
        assert data["matches"] is True and data["rebuilt_hash"] == rec.view_hash
        assert data["worker"] == rec.worker and data["version"] == rec.meta["viewed_version"]
        reads = [Pattern.parse(p) for p in loaded.blueprint["workers"][rec.worker]["reads"]]
        for pointer in visible_pointers(data["view"]["data"]):
            assert any(region_contains(p, parse_pointer(pointer)) for p in reads), pointer
    # b's retry saw its own rejection
    retry = next(r for r in seen if r.worker == "b" and r.accepted and r.seq > 2)
    data = (await client.get(f"/api/boards/{finished.board_id}/views/{retry.view_hash}")).json()
    rejected = next(r for r in records if r.outcome == "rejected")
    assert data["inputs"]["rejections"] == [rejected.seq]
    assert data["view"]["rejections"][0]["stage"] == "invariants"


async def test_a_view_the_log_does_not_reproduce_is_flagged(client: httpx.AsyncClient, store: Store) -> None:
    # A proposal from an external agent that built its own view: the kernel logs whatever view
    # hash it names, and the dashboard says the rebuilt view differs instead of claiming a match.
    from slateboard.blueprint import compile_blueprint
    from slateboard.kernel import Proposal
    from slateboard.runtime.runner import kernel_from

    board = await new_board(store)
    loaded = await store.load_board(board)
    kernel = kernel_from(compile_blueprint(loaded.blueprint), loaded)
    claimed = "ab" * 32
    patch = [{"op": "add", "path": "/notes/-", "value": {"author": "a", "text": "from outside"}}]
    decision = kernel.prepare(Proposal("a", patch, 0, None, None, claimed))
    await store.append(board, decision.record)
    kernel.commit(decision)
    res = await client.get(f"/api/boards/{board}/views/{claimed}")
    assert res.status_code == 200
    data = res.json()
    assert data["matches"] is False and data["rebuilt_hash"] != claimed
    assert data["records"] == [1] and data["worker"] == "a" and data["version"] == 0
    assert "differs" in data["problem"]


@pytest.mark.parametrize(
    ("path", "status", "needle"),
    [
        ("/api/boards/nope", 404, "no board 'nope'"),
        ("/api/boards/nope/records", 404, "no board 'nope'"),
        ("/api/boards/nope/state", 404, "no board 'nope'"),
        ("/api/boards/{id}/state?version=x", 400, "whole number"),
        ("/api/boards/{id}/state?version=-1", 400, "0 or more"),
        ("/api/boards/{id}/state?version=99", 400, "no version 99 (its latest version is 5)"),
        ("/api/boards/{id}/records?after=-2", 400, "after must be 0 or more"),
        ("/api/boards/{id}/records?limit=0", 400, "limit must be 1 or more"),
        ("/api/boards/{id}/records?limit=many", 400, "limit"),
        ("/api/boards/{id}/views/xyz", 400, "64 lowercase hex"),
        ("/api/boards/{id}/views/" + "ab" * 32, 404, "has view hash abababababab"),
        ("/api/boards/{id}/events?after=-1", 400, "after must be 0 or more"),
        ("/api/nothing", 404, "no such page or endpoint: /api/nothing"),
    ],
)
async def test_bad_requests_get_json_errors(
    client: httpx.AsyncClient, finished: Boards, path: str, status: int, needle: str
) -> None:
    res = await client.get(path.replace("{id}", finished.board_id))
    assert res.status_code == status, res.text
    body = res.json()
    assert body["status"] == status and needle in body["error"]
    assert "\n" not in body["error"]


async def test_the_dashboard_is_read_only(client: httpx.AsyncClient, finished: Boards, store: Store) -> None:
    before = await store.board_info(finished.board_id)
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        res = await client.request(method, f"/api/boards/{finished.board_id}")
        assert res.status_code == 405 and "read-only" in res.json()["error"]
    assert await store.board_info(finished.board_id) == before


async def test_the_page_and_its_assets_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for asset in ("/static/app.js", "/static/style.css"):
        assert asset in page.text
        res = await client.get(asset)
        assert res.status_code == 200 and len(res.text) > 1000
    assert "https://" not in (await client.get("/static/app.js")).text  # nothing from elsewhere


async def test_a_postgres_password_is_not_shown() -> None:
    from slateboard.web import redact_url

    assert (
        redact_url("postgresql://app:hunter2@db.local:5432/x?schema=s")
        == "postgresql://app:***@db.local:5432/x?schema=s"
    )
    assert redact_url("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db"


# -- live updates over real HTTP ---------------------------------------------------------------
async def _collect(stream: AsyncIterator[tuple[str, Any, str | None]], until: Any) -> list[tuple[str, Any, str | None]]:
    got: list[tuple[str, Any, str | None]] = []
    async for event in stream:
        got.append(event)
        if until(got):
            break
    return got


async def test_board_events_push_records_as_a_run_appends_them(live_server: ThreadServer, store_url: str) -> None:
    store = await open_store(store_url)
    try:
        board = await new_board(store)
        async with (
            httpx.AsyncClient(base_url=live_server.url, timeout=30) as http,
            http.stream("GET", f"/api/boards/{board}/events") as res,
        ):
            assert res.status_code == 200 and res.headers["content-type"].startswith("text/event-stream")
            events = sse_events(res)
            first = await asyncio.wait_for(anext(events), 30)
            assert first[0] == "board" and first[1]["records"] == 0 and first[1]["status"] == "running"
            await run_board(store, board, "live")  # appended while the stream is open
            got = await asyncio.wait_for(
                _collect(events, lambda g: any(k == "board" and d["status"] == "done" for k, d, _ in g)), 30
            )
        records = await store.read_records(board)
        pushed = [d for k, d, _ in got if k == "record"]
        assert [d["seq"] for d in pushed] == [r.seq for r in records]
        assert [d["hash"] for d in pushed] == [r.hash for r in records]
        assert [i for k, _, i in got if k == "record"] == [str(r.seq) for r in records]
    finally:
        await store.close()


async def test_board_events_resume_after_last_event_id(live_server: ThreadServer, store_url: str) -> None:
    store = await open_store(store_url)
    try:
        board = await new_board(store)
        await run_board(store, board, "again")
        total = len(await store.read_records(board))
    finally:
        await store.close()
    async with (
        httpx.AsyncClient(base_url=live_server.url, timeout=30) as http,
        http.stream("GET", f"/api/boards/{board}/events?after=2", headers={"Last-Event-ID": "5"}) as res,
    ):
        got = await asyncio.wait_for(_collect(sse_events(res), lambda g: g[-1][0] == "board"), 30)
    assert [d["seq"] for k, d, _ in got if k == "record"] == list(range(6, total + 1))


async def test_board_list_events_announce_a_new_board(live_server: ThreadServer, store_url: str) -> None:
    store = await open_store(store_url)
    try:
        async with (
            httpx.AsyncClient(base_url=live_server.url, timeout=30) as http,
            http.stream("GET", "/api/events") as res,
        ):
            events = sse_events(res)
            kind, first, _ = await asyncio.wait_for(anext(events), 30)
            assert kind == "boards" and first["boards"] == []
            board = await new_board(store)
            kind, second, _ = await asyncio.wait_for(anext(events), 30)
            assert kind == "boards" and [b["board_id"] for b in second["boards"]] == [board]
        missing = await http_get(live_server.url, "/api/boards/nope/events")
        assert missing.status_code == 404
    finally:
        await store.close()


async def http_get(base: str, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        return await http.get(path)


async def test_a_team_board_shows_tokens_per_component_and_its_views(client: httpx.AsyncClient, store: Store) -> None:
    result = await make_team_board(store)
    data = (await client.get(f"/api/boards/{result.board_id}")).json()
    assert data["status"] == "done" and data["reason"] == result.end_reason
    components = data["usage"]["by_component"]
    assert set(components) == set(result.usage) == {"coordinator", "worker", "decider"}
    for name, usage in result.usage.items():
        assert components[name] == {**usage.to_json(), "cost_usd": result.cost_by_component[name]}
    records = (await client.get(f"/api/boards/{result.board_id}/records")).json()["records"]
    seen = [r for r in records if r["view_hash"]]
    assert {r["worker"] for r in seen} >= {"hypothesis", "critic"}
    for rec in seen:
        view = (await client.get(f"/api/boards/{result.board_id}/views/{rec['view_hash']}")).json()
        assert view["matches"] is True, view
    final = (await client.get(f"/api/boards/{result.board_id}/state")).json()
    assert final["state"] == result.state


async def test_the_dashboard_reads_a_postgresql_store() -> None:
    import os
    import uuid

    dsn = os.environ.get("SLATEBOARD_TEST_PG") or "postgresql://postgres@127.0.0.1:5432/test"
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        pytest.skip(f"PostgreSQL at {dsn} does not answer ({type(exc).__name__}: {exc})")
    schema = f"sbweb_{uuid.uuid4().hex[:12]}"
    url = f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
    store = await open_store(url)
    try:
        board = await make_board(store, "pg")
        records = await store.read_records(board)
        app = create_app(store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            listed = (await c.get("/api/boards")).json()["boards"]
            assert [b["board_id"] for b in listed] == [board]
            for version in (0, 2, records[-1].version):
                got = (await c.get(f"/api/boards/{board}/state", params={"version": version})).json()
                made_by = [r for r in records if r.accepted][version - 1] if version else None
                assert got["state_hash"] == (made_by.state_after if made_by else records[0].state_before)
            rec = next(r for r in records if r.view_hash)
            assert (await c.get(f"/api/boards/{board}/views/{rec.view_hash}")).json()["matches"] is True
    finally:
        await store.close()
        with psycopg.connect(dsn) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_view_under_a_tightened_budget_is_rebuilt_with_that_budget(
    client: httpx.AsyncClient, store: Store
) -> None:
    # Two empty notes in a row trip the circuit policy, which halves the worker's view budget;
    # the worker's next view was built under that budget and must be rebuilt under it too.
    blueprint = {
        **NOTES,
        "workers": {**NOTES["workers"], "a": {**NOTES["workers"]["a"], "view_budget": 1000}},
        "circuit": {"max_consecutive_invalid": 2, "on_invalid": "tighten", "retries": 2},
        "rules": [{"on": {"op": "start"}, "invoke": "b"}, *NOTES["rules"]],
    }
    board = await create_board(store, blueprint, inputs={"task": "t"})
    answer = json.dumps({"patch": [{"op": "add", "path": "/answer", "value": "done"}]})
    script = [note("b", "b1"), note("a", ""), note("a", ""), note("b", "b2"), note("a", "a1"), note("b", "b3"), answer]
    await Runner(store, board, model=ScriptedModel(script)).run()
    records = await store.read_records(board)
    tighten = next(r for r in records if r.kind == "circuit" and r.meta.get("action") == "tighten_budget")
    budget = tighten.meta["details"]["view_budget"]
    later = next(r for r in records if r.seq > tighten.seq and r.worker == tighten.worker and r.view_hash)
    data = (await client.get(f"/api/boards/{board}/views/{later.view_hash}")).json()
    assert data["matches"] is True
    assert data["inputs"]["budget"] == budget and data["view"]["budget"] == budget
    assert len(data["inputs"]["rejections"]) == 2
    # the budget mattered: under the worker's own budget the view would have been another one
    state = (await client.get(f"/api/boards/{board}/state", params={"version": data["version"]})).json()["state"]
    rejected = [r for r in records if r.seq in data["inputs"]["rejections"]]
    compiled = compile_blueprint((await store.load_board(board)).blueprint)
    assert later.worker is not None
    plain = build_view(compiled, later.worker, state, data["version"], event=later.event, rejections=rejected)
    assert plain.hash != later.view_hash
