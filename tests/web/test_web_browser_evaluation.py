"""The dashboard's evaluation page in headless Chromium (Debian's, driven by Playwright): the real
``slateboard serve`` with a token and an evaluation directory holding one small report; the
systems and comparison tables are filled from /api/evaluation and every figure the report names
is loaded and decoded by the browser."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from web_testkit import browser_page, playwright_or_skip, serve_cli

from slateboard.stores import open_store

sync_api, CHROMIUM = playwright_or_skip()
# the report is written by the evaluation distribution (slateboard-eval); the page is the core's
write_report = pytest.importorskip("slateboard_eval.report", reason="needs slateboard-eval").write_report

expect = sync_api.expect
TOKEN = "evaluation-browser-token"
SETTINGS = {"full": 1.0, "no-slicing": 1.6, "generated": 2.2, "budget=500": 0.5}


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for game, tokens, won in (
        ("coin-l3-s1", 1000, True),
        ("cooking-l1i1-s1", 4000, True),
        ("twc-l1p2-s1", 2500, False),
    ):
        for system, settings in (("slateboard", SETTINGS), ("langgraph", {"full": 0.6})):
            for setting, factor in settings.items():
                rows.append(
                    {
                        "suite": "twx",
                        "system": system,
                        "game": game,
                        "seed": 1,
                        "setting": setting,
                        "won": won,
                        "outcome": "won" if won else "budget",
                        "commands": 4,
                        "tokens": int(tokens * factor),
                        "design_tokens": 900 if setting == "generated" else 0,
                        "error": None,
                        "verified": True if system == "slateboard" else None,
                    }
                )
    return rows


async def _empty_store(url: str) -> None:
    store = await open_store(url)
    await store.close()


def test_evaluation_page_in_a_browser(store_url: str, tmp_path: Path) -> None:
    asyncio.run(_empty_store(store_url))
    evals = tmp_path / "eval-results"
    report = write_report(_rows(), evals / "twx-small", resamples=200, meta={"model": "walkthrough", "steps": 30})
    figures = report["figures"]
    assert set(figures) == {
        "success.png",
        "tokens_per_success.png",
        "ablations.png",
        "budget.png",
        "blueprint_source.png",
    }
    expect.set_options(timeout=20_000)
    with (
        serve_cli("--store", store_url, "--token", TOKEN, env={"SLATEBOARD_EVAL_DIR": str(evals)}) as served,
        sync_api.sync_playwright() as pw,
        browser_page(pw, CHROMIUM) as (page, problems),
    ):
        page.goto(f"{served.url}/evaluation?token={TOKEN}")

        section = page.get_by_test_id("report")
        expect(section).to_have_count(1)
        expect(page.get_by_test_id("eval-dir")).to_have_text(str(evals))
        expect(section.locator("h2")).to_contain_text("twx-small (15 episodes")
        expect(section.locator("h2")).to_contain_text("model walkthrough")
        tables = section.locator("table")
        expect(tables).to_have_count(2)
        # one row per (system, setting), as summarise ordered them, with the Wilson interval
        systems = tables.nth(0).locator("tbody tr")
        expect(systems).to_have_count(len(report["systems"]))
        first = report["systems"][0]
        cells = systems.nth(0).locator("td")
        expect(cells.nth(1)).to_have_text(first["system"])
        expect(cells.nth(2)).to_have_text(first["setting"])
        expect(cells.nth(3)).to_have_text(f"{first['wins']}/{first['games']}")
        expect(cells.nth(4)).to_have_text("0.67 [0.21, 0.94]")
        generated = tables.nth(0).locator("tbody tr", has_text="generated")
        expect(generated).to_have_count(1)
        expect(generated.locator("td").nth(3)).to_have_text("2/3")
        # the paired comparisons: every (system, setting) but the reference
        comparisons = tables.nth(1).locator("tbody tr")
        expect(comparisons).to_have_count(len(report["comparisons"]))
        ratio = tables.nth(1).locator("tbody tr", has_text="generated").locator("td").nth(6)
        expect(ratio).to_contain_text("2.20")

        # every figure is fetched with the token and decoded (a broken image has no width)
        images = section.get_by_test_id("figure")
        expect(images).to_have_count(len(figures))
        page.wait_for_function(
            "() => [...document.querySelectorAll('img.eval-figure')].every(i => i.complete && i.naturalWidth > 0)"
        )
        sizes = images.evaluate_all("(imgs) => imgs.map(i => [i.alt, i.naturalWidth, i.naturalHeight])")
        assert [s[0] for s in sizes] == figures
        assert all(w > 300 and h > 200 for _, w, h in sizes), sizes
        assert problems == []

        # without the token the API refuses, and the page says it could not load
        page.goto(f"{served.url}/evaluation")
        expect(page.get_by_test_id("report")).to_have_count(0)
