"""Issue 29, R12: the dashboard's evaluation figures never leave the evaluation folder.

Fails on ec36c64: a figure a report names that is a symlink to a file elsewhere was served (its
bytes in the response), and ``..`` or a named figure that does not exist gave HTTP 500.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from slateboard.stores import open_store
from slateboard.web import create_app

SECRET = b"outside the evaluation folder: do not serve"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


async def test_figures_stay_inside_the_evaluation_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(SECRET)
    (outside / "report.json").write_text(json.dumps({"figures": ["secret.png"]}), encoding="utf-8")
    root = tmp_path / "eval"
    report = root / "run1"
    report.mkdir(parents=True)
    (report / "ok.png").write_bytes(PNG)
    (report / "leak.png").symlink_to(outside / "secret.png")
    (report / "sub").mkdir()
    names = ["ok.png", "leak.png", "..", ".", "missing.png", "sub", "bad\x00.png"]
    (report / "report.json").write_text(json.dumps({"figures": names}), encoding="utf-8")
    (root / "linked").symlink_to(outside, target_is_directory=True)  # a report folder out of the root

    store = await open_store("memory://")
    try:
        app = create_app(store, eval_dir=root)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            ok = await http.get("/api/evaluation/run1/figures/ok.png")
            assert ok.status_code == 200 and ok.content == PNG
            for figure in ("leak.png", "..", ".", "missing.png", "sub", "bad%00.png", "%2E%2E"):
                r = await http.get(f"/api/evaluation/run1/figures/{figure}")
                assert r.status_code == 404, (figure, r.status_code, r.text)
                assert SECRET not in r.content
            r = await http.get("/api/evaluation/linked/figures/secret.png")
            assert r.status_code == 404 and SECRET not in r.content
            listed = (await http.get("/api/evaluation")).json()
            assert [rep["name"] for rep in listed["reports"]] == ["run1"]
    finally:
        await store.close()
