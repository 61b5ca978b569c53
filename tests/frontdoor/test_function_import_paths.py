"""Issue 28: function workers (``module:callable``) import wherever a board is run: ``submit`` in
one directory and ``resume`` from another find the module beside the blueprint; a module that is
nowhere gives an error naming the module, the path searched and the fix. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLATEBOARD = [sys.executable, "-c", "from slateboard.cli import main; raise SystemExit(main())"]

BLUEPRINT = """\
name: imports
schema: {type: object, properties: {answer: {type: string}}}
initial_state: {}
workers:
  w: {function: "%s:answer", reads: [], writes: ["/answer"]}
rules: [{"on": {op: start}, invoke: w}]
done: "has(state.answer)"
answer: /answer
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    env.pop("SLATEBOARD_STORE", None)
    return subprocess.run([*SLATEBOARD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_submit_then_resume_from_another_directory(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "bp.yaml").write_text(BLUEPRINT % "fh_answers")
    (project / "fh_answers.py").write_text(
        "def answer(view):\n    return [{'op': 'add', 'path': '/answer', 'value': 'ok'}]\n"
    )
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    submitted = cli("submit", str(project / "bp.yaml"), "--store", store, "--json", cwd=elsewhere)
    assert submitted.returncode == 0, submitted.stderr
    board = json.loads(submitted.stdout)["board_id"]
    resumed = cli("resume", board, "--store", store, "--json", cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "ok"


def test_a_module_found_nowhere_names_the_module_the_path_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(BLUEPRINT % "fh_nowhere_module")
    ran = cli("run", "bp.yaml", "--store", f"sqlite:///{tmp_path / 'b.db'}", cwd=tmp_path)
    assert ran.returncode != 0
    err = " ".join(ran.stderr.split())
    assert "cannot import function 'fh_nowhere_module:answer'" in err
    assert "module 'fh_nowhere_module' was searched on" in err and str(tmp_path) in err
    assert "fix: run from the directory that holds fh_nowhere_module.py" in err
