"""Issue 28 conventions: tables are never cut when piped, ``bench NAME --help`` reaches the
benchmark script, and ``--model`` advertises only model strings that ``run`` accepts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.runtime import create_board
from slateboard.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
SLATEBOARD = [sys.executable, "-c", "from slateboard.cli import main; raise SystemExit(main())"]
LONG = "a-board-name-that-is-much-longer-than-eighty-columns-would-ever-allow-in-one-table-cell-" * 2

BP = {
    "name": "x",
    "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    "initial_state": {},
    "workers": {"w": {"reads": ["/a"], "writes": ["/a"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "w"}],
}


def piped(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "SLATEBOARD_STORE")}
    env.update(PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")
    return subprocess.run([*SLATEBOARD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_tables_are_not_cut_when_piped(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'b.db'}"

    async def make() -> None:
        st = await open_store(store)
        await create_board(st, BP, name=LONG)
        await st.close()

    asyncio.run(make())
    listed = piped("boards", "--store", store, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert LONG in listed.stdout and "…" not in listed.stdout


def test_panels_fit_their_content_when_piped(tmp_path: Path) -> None:
    """Piped, the console is as wide as a table needs (PIPED_WIDTH); a panel drawn at that width
    wrote a 100,000-character border line around the run's answer and audit."""
    path = tmp_path / "bp.json"
    reply = json.dumps({"patch": [{"op": "add", "path": "/a", "value": "done"}]})
    path.write_text(json.dumps({**BP, "done": "has(state.a)", "answer": "/a"}))
    ran = piped(
        "run",
        str(path),
        "--model",
        "scripted:" + json.dumps([reply]),
        "--store",
        f"sqlite:///{tmp_path / 'b.db'}",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    assert "Audit" in ran.stdout
    assert max(len(line) for line in ran.stdout.splitlines()) < 300, max(ran.stdout.splitlines(), key=len)[:200]


def test_bench_name_help_reaches_the_script(tmp_path: Path) -> None:
    shown = piped("bench", "kernel", "--help", cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert "--proposals" in shown.stdout  # the script's own argparse help
    assert "Run a benchmark script" in piped("bench", "--help", cwd=tmp_path).stdout
    unknown = CliRunner().invoke(app, ["bench", "nosuch"])
    assert unknown.exit_code == 2 and "unknown benchmark 'nosuch'" in unknown.output


def test_run_help_advertises_no_model_form_run_refuses() -> None:
    shown = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "python:MODULE" not in shown.output
    assert "openai:gpt-4o-mini" in shown.output
