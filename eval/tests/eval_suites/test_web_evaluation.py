"""The dashboard's evaluation page serves the reports of an evaluation directory."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the dashboard needs the web extra")

from slateboard.stores import MemoryStore
from slateboard.web import create_app
from slateboard_eval.report import write_report


def _rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for game, tokens in (("g1", 1000), ("g2", 3000)):
        for setting, factor in (("full", 1), ("no-slicing", 2)):
            rows.append(
                {
                    "suite": "twx",
                    "system": "slateboard",
                    "game": game,
                    "seed": 1,
                    "setting": setting,
                    "won": True,
                    "commands": 3,
                    "tokens": tokens * factor,
                    "error": None,
                    "verified": True,
                }
            )
    return rows


async def test_evaluation_page_lists_reports_and_serves_their_figures(tmp_path: Path) -> None:
    write_report(_rows(), tmp_path / "twx", resamples=100, meta={"model": "walkthrough"})
    (tmp_path / "empty").mkdir()
    app = create_app(MemoryStore(), eval_dir=tmp_path)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        page = await c.get("/evaluation")
        assert page.status_code == 200 and "/static/evaluation.js" in page.text
        data = (await c.get("/api/evaluation")).json()
        (report,) = data["reports"]
        assert report["name"] == "twx" and report["episodes"] == 4 and report["meta"]["model"] == "walkthrough"
        assert {s["setting"] for s in report["systems"]} == {"full", "no-slicing"}
        assert report["comparisons"][0]["tokens_per_success_ratio"]["value"] == 2.0
        assert "success.png" in report["figures"]
        fig = await c.get("/api/evaluation/twx/figures/success.png")
        assert (
            fig.status_code == 200 and fig.content.startswith(b"\x89PNG") and fig.headers["content-type"] == "image/png"
        )
        assert (await c.get("/api/evaluation/twx/figures/report.json")).status_code == 404
        assert (await c.get("/api/evaluation/twx/figures/..%2Freport.json")).status_code == 404
        assert (await c.get("/api/evaluation/nope/figures/success.png")).status_code == 404
        js = await c.get("/static/evaluation.js")
        assert js.status_code == 200 and "/api/evaluation" in js.text
