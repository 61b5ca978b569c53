"""The dashboard's evaluation page: the reports ``slateboard eval scienceworld|twx|report``
wrote (``report.json`` and its PNG figures), read-only.

Reports are found in the immediate subdirectories of the evaluation directory (and in the
directory itself): ``create_app(..., eval_dir=...)``, else ``$SLATEBOARD_EVAL_DIR``, else
``./eval-results``. Only files named in a report's ``figures`` are served, by name, and only
when the file they resolve to (symlinks followed) is a regular file inside the evaluation
directory: a symlink out of it, ``..``, a name the filesystem refuses or a missing figure is a
404, never a file from elsewhere or a 500 (issue 29, R12). A report folder that is a symlink out
of the directory is not listed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

__all__ = ["add_evaluation_routes", "evaluation_dir", "figure_path", "find_reports"]

REPORT_FILE = "report.json"


def evaluation_dir(given: Path | str | None = None) -> Path:
    """The evaluation directory: ``given``, else ``$SLATEBOARD_EVAL_DIR``, else ``./eval-results``."""
    if given is not None:
        return Path(given)
    return Path(os.environ.get("SLATEBOARD_EVAL_DIR") or "eval-results")


def _inside(path: Path, root: Path) -> Path | None:
    """``path`` resolved (symlinks followed), when that lies inside resolved ``root``; else None."""
    try:
        resolved = path.resolve(strict=True)
        base = root.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):  # missing, a symlink loop, a NUL in the name
        return None
    return resolved if resolved == base or resolved.is_relative_to(base) else None


def find_reports(root: Path) -> dict[str, Path]:
    """Report name -> its directory, for ``root`` itself (name ``.``) and its subdirectories
    (not those that are symlinks out of ``root``)."""
    found: dict[str, Path] = {}
    if (root / REPORT_FILE).is_file():
        found["."] = root
    if root.is_dir():
        for child in sorted(root.iterdir()):
            if child.is_dir() and (child / REPORT_FILE).is_file() and _inside(child, root) is not None:
                found[child.name] = child
    return found


def figure_path(root: Path, directory: Path, figure: str, named: list[Any]) -> Path | None:
    """The file to serve for ``figure`` of the report in ``directory``: one the report names
    (``named``), a plain file name, resolving to a regular file inside ``root``; else None."""
    if figure not in named or figure in ("", ".", "..") or "/" in figure or "\\" in figure or "\x00" in figure:
        return None
    found = _inside(directory / figure, root)
    return found if found is not None and found.is_file() else None


def _load(directory: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / REPORT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def add_evaluation_routes(app: FastAPI, eval_dir: Path | str | None, page: str, headers: dict[str, str]) -> None:
    """Add ``/evaluation`` (the page), ``/api/evaluation`` (every report without its rows) and
    ``/api/evaluation/{name}/figures/{file}`` (a figure a report names) to ``app``."""
    root = evaluation_dir(eval_dir)

    @app.get("/evaluation", response_class=HTMLResponse, include_in_schema=False)
    async def evaluation_page(request: Request) -> HTMLResponse:
        given = request.query_params.get("token")
        from urllib.parse import quote

        suffix = f"?token={quote(given, safe='')}" if given else ""
        return HTMLResponse(page.replace("{{asset_query}}", suffix), headers=headers)

    @app.get("/api/evaluation")
    async def evaluation_reports() -> dict[str, Any]:
        reports = []
        for name, directory in find_reports(root).items():
            data = _load(directory)
            if data is None:
                continue
            reports.append(
                {
                    "name": name,
                    "meta": data.get("meta", {}),
                    "systems": data.get("systems", []),
                    "comparisons": data.get("comparisons", []),
                    "figures": [f for f in data.get("figures", []) if isinstance(f, str)],
                    "episodes": len(data.get("rows", [])),
                }
            )
        return {"directory": str(root), "reports": reports}

    @app.get("/api/evaluation/{name}/figures/{figure}", response_model=None)
    async def evaluation_figure(name: str, figure: str) -> FileResponse | JSONResponse:
        directory = find_reports(root).get(name)
        data = _load(directory) if directory is not None else None
        named = data.get("figures", []) if data is not None else []
        path = figure_path(root, directory, figure, named if isinstance(named, list) else []) if directory else None
        if path is None:
            return JSONResponse({"error": f"no figure {figure!r} in report {name!r}"}, status_code=404)
        return FileResponse(path, media_type="image/png", headers={"Cache-Control": "no-store"})
