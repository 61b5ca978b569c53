"""A board's lineage on the dashboard (``slateboard fork``): the API names a fork's parent and a
parent's forks; in the browser, the lineage links open the other board, and a running fork's
records arrive live as another process appends them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from web_boards import make_board, note
from web_testkit import Boards, browser_page, playwright_or_skip, serve_cli

from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner
from slateboard.runtime.fork import fork_board
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.web import create_app


def fork_replies(tag: str) -> list[str]:
    """The rest of a notes board forked at version 2 (a's note, b's reply, then the answer)."""
    return [
        note("a", f"{tag}: a goes on"),
        note("b", f"{tag}: b closes"),
        json.dumps({"patch": [{"op": "add", "path": "/answer", "value": f"{tag}: answered"}]}),
    ]


@pytest.fixture
async def store(finished: Boards) -> AsyncIterator[Store]:
    s = await open_store(finished.url)
    yield s
    await s.close()


async def test_the_api_shows_a_fork_and_its_parent(store: Store, finished: Boards) -> None:
    first = await fork_board(store, finished.board_id, 2)
    second = await fork_board(store, finished.board_id, 4)
    grandchild = await fork_board(store, first, 0)
    app = create_app(store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        parent = (await client.get(f"/api/boards/{finished.board_id}")).json()["lineage"]
        child = (await client.get(f"/api/boards/{first}")).json()["lineage"]
        other = (await client.get(f"/api/boards/{second}")).json()["lineage"]
    assert parent["parent"] is None
    assert [(c["board_id"], c["version_forked"]) for c in parent["children"]] == [(first, 2), (second, 4)]
    parent_info = await store.board_info(finished.board_id)
    assert child["parent"] == {
        "board_id": finished.board_id,
        "version": 2,
        "seq": child["parent"]["seq"],
        "name": parent_info.name,
        "exists": True,
    }
    records = await store.read_records(finished.board_id)
    assert next(r.seq for r in records if r.version == 2) == child["parent"]["seq"]
    assert [(c["board_id"], c["version_forked"], c["status"]) for c in child["children"]] == [
        (grandchild, 0, "running")
    ]
    assert other["children"] == [] and other["parent"]["version"] == 4


TOKEN = "lineage-test-token"


async def _fork(url: str) -> tuple[str, str]:
    store = await open_store(url)
    try:
        parent = await make_board(store, "one")
        return parent, await fork_board(store, parent, 2)
    finally:
        await store.close()


async def _run(url: str, board_id: str) -> int:
    store = await open_store(url)
    try:
        await Runner(store, board_id, model=ScriptedModel(fork_replies("fork"))).run()
        return len(await store.read_records(board_id))
    finally:
        await store.close()


def test_lineage_and_a_live_fork_in_a_browser(store_url: str) -> None:
    sync_api, chromium = playwright_or_skip()  # here, so the API test runs without a browser
    expect = sync_api.expect
    parent, child = asyncio.run(_fork(store_url))
    expect.set_options(timeout=20_000)
    with (
        serve_cli("--store", store_url, "--token", TOKEN, "--poll", "0.2") as served,
        sync_api.sync_playwright() as pw,
        browser_page(pw, chromium) as (page, problems),
    ):
        page.goto(f"{served.url}/?token={TOKEN}#board={child}")
        lineage = page.get_by_test_id("board-lineage")
        expect(lineage).to_contain_text("forked from")
        expect(lineage).to_contain_text("at version 2")
        expect(page.get_by_test_id("board-status")).to_have_text("running")
        rows = page.locator("#timeline tbody tr")
        expect(rows).to_have_count(0)

        # live: the fork runs in another thread's loop (another store connection); its records
        # arrive on the open page through the board's event stream
        with ThreadPoolExecutor(1) as pool:
            records = pool.submit(asyncio.run, _run(store_url, child)).result(timeout=60)
        expect(rows).to_have_count(records)
        expect(page.get_by_test_id("board-status")).to_have_text("solved")
        expect(page.get_by_test_id("state-tree")).to_contain_text("fork: answered")

        # the parent's page, reached through the lineage link, lists the fork
        page.get_by_test_id("lineage-parent").click()
        expect(page.get_by_test_id("summary-records")).to_contain_text("7")
        child_link = page.get_by_test_id("lineage-child")
        expect(child_link).to_have_count(1)
        expect(child_link).to_have_attribute("data-board", child)
        expect(child_link).to_contain_text("@2")
        child_link.click()
        expect(page.get_by_test_id("lineage-parent")).to_have_attribute("data-board", parent)
        assert problems == []
