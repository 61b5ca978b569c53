"""The dashboard end to end in headless Chromium (Debian's, driven by Playwright): the real
``slateboard serve`` with a token, real boards in SQLite, time travel with the slider, the
rejected proposal in the timeline, the token chart, a rebuilt view, and a live run appearing."""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from web_boards import make_board, new_board, run_board
from web_testkit import browser_page, playwright_or_skip, serve_cli

from slateboard.stores import open_store

sync_api, CHROMIUM = playwright_or_skip()

expect = sync_api.expect
TOKEN = "browser-test-token"


async def _boards(url: str) -> tuple[str, str]:
    store = await open_store(url)
    try:
        return await make_board(store, "one"), await new_board(store, "a second task")
    finally:
        await store.close()


async def _run(url: str, board_id: str) -> dict[str, int]:
    store = await open_store(url)
    try:
        await run_board(store, board_id, "two")
        records = await store.read_records(board_id)
        return {"records": len(records), "version": records[-1].version}
    finally:
        await store.close()


async def _tokens(url: str, board_id: str) -> dict[str, int]:
    store = await open_store(url)
    try:
        out: dict[str, int] = {}
        for r in await store.read_records(board_id):
            if r.kind == "proposal" and r.worker:
                out[r.worker] = out.get(r.worker, 0) + r.usage.tokens_in + r.usage.tokens_out
        return out
    finally:
        await store.close()


def test_dashboard_in_a_browser(store_url: str, tmp_path: Path) -> None:
    done, waiting = asyncio.run(_boards(store_url))
    tokens = asyncio.run(_tokens(store_url, done))
    expect.set_options(timeout=20_000)
    with (
        serve_cli("--store", store_url, "--token", TOKEN, "--poll", "0.2") as served,
        sync_api.sync_playwright() as pw,
        browser_page(pw, CHROMIUM) as (page, problems),
    ):
        page.goto(f"{served.url}/?token={TOKEN}")

        # the board list, then one board
        boards = page.locator("#boards tbody tr")
        expect(boards).to_have_count(2)
        page.locator(f"#boards tr[data-board='{done}']").click()
        rows = page.locator("#timeline tbody tr")
        expect(rows).to_have_count(7)
        tree = page.get_by_test_id("state-tree")
        expect(tree).to_have_attribute("data-version", "5")
        expect(tree).to_contain_text("one: four notes")

        # time travel: the slider to the start, then one version on
        slider = page.get_by_test_id("slider")
        slider.focus()
        page.keyboard.press("Home")
        expect(tree).to_have_attribute("data-version", "0")
        expect(tree).not_to_contain_text("one: first note by a")
        page.keyboard.press("ArrowRight")
        expect(tree).to_have_attribute("data-version", "1")
        expect(page.get_by_test_id("version-label")).to_have_text("version 1 of 5")
        expect(tree).to_contain_text("one: first note by a")
        expect(tree).not_to_contain_text("one: b replies")
        expect(tree).not_to_contain_text("four notes")
        expect(page.locator("#state-tree details[data-pointer='/notes'] > summary")).to_contain_text("[1]")

        # the rejected proposal with its stage and reason
        rejected = page.locator("#timeline tr[data-outcome='rejected']")
        expect(rejected).to_have_count(1)
        expect(rejected.locator("td.stage")).to_have_text("invariants")
        expect(rejected.locator("td.reason")).to_contain_text("notes are not empty")

        # the token chart: one bar pair per worker, lengths in proportion to the tokens
        chart = page.get_by_test_id("tokens-svg")
        widths: dict[str, float] = {}
        for worker, total in tokens.items():
            bar_in = chart.locator(f"rect.bar-in[data-name='{worker}']").first
            bar_out = chart.locator(f"rect.bar-out[data-name='{worker}']").first
            widths[worker] = float(bar_in.get_attribute("width") or 0) + float(bar_out.get_attribute("width") or 0)
            assert widths[worker] > 0
            expect(chart).to_contain_text(f"{total} (")
        biggest = max(tokens, key=lambda w: tokens[w])
        smallest = min(tokens, key=lambda w: tokens[w])
        assert widths[biggest] > widths[smallest]

        # the view worker b saw when it retried: rebuilt, and its hash matches the log
        page.locator("#timeline tr[data-seq='3'] [data-testid='view-button']").click()
        expect(page.get_by_test_id("view-match")).to_contain_text("hash matches the log")
        expect(page.get_by_test_id("view-panel")).to_contain_text("notes are not empty")

        # live: open the waiting board, run it from here, watch the records arrive
        page.locator(f"#boards tr[data-board='{waiting}']").click()
        expect(page.get_by_test_id("board-status")).to_have_text("running")
        expect(rows).to_have_count(0)
        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
            ran = pool.submit(asyncio.run, _run(store_url, waiting)).result(timeout=60)
        expect(rows).to_have_count(ran["records"])
        # the badge tells solved (done condition met) from exhausted (slateboard.status)
        expect(page.get_by_test_id("board-status")).to_have_text("solved")
        expect(tree).to_have_attribute("data-version", str(ran["version"]))
        expect(tree).to_contain_text("two: four notes")
        expect(page.locator(f"#boards tr[data-board='{waiting}']")).to_contain_text("solved")
        page.locator("#timeline tr[data-outcome='rejected'] [data-testid='view-button']").click()
        expect(page.get_by_test_id("view-match")).to_contain_text("hash matches the log")

        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"dashboard screenshot: {shot}")
        wanted = os.environ.get("SLATEBOARD_SCREENSHOTS")
        if wanted:
            Path(wanted).mkdir(parents=True, exist_ok=True)
            copy = Path(wanted) / "dashboard.png"
            shutil.copyfile(shot, copy)
            print(f"dashboard screenshot copied to: {copy}")
        assert problems == []
