"""slateboard-eval plugs ``eval`` and ``faults`` into the core CLI, and the core never loads it.

The subprocesses put both source trees on ``PYTHONPATH`` (no entry-point metadata needed: the
core falls back to importing ``slateboard_eval.cli``), as a source checkout does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import typer

from slateboard_eval.cli import register

REPO = Path(__file__).resolve().parents[3]
PATHS = os.pathsep.join(str(REPO / p) for p in ("src", "eval/src"))


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PATHS, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, check=False, timeout=120)


def test_register_adds_eval_and_faults() -> None:
    holder = typer.Typer()
    register(holder)
    group = typer.main.get_group(holder)
    assert sorted(group.commands) == ["eval", "faults"]
    assert {"textworld", "scienceworld", "twx", "textworld-suite", "report"} <= set(group.commands["eval"].commands)


def test_python_m_slateboard_runs_the_eval_commands() -> None:
    result = _python("-m", "slateboard", "eval", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: slateboard eval" in result.stdout and "textworld-suite" in result.stdout
    faults = _python("-m", "slateboard", "faults", "--help")
    assert faults.returncode == 0 and "--systems" in faults.stdout


def test_importing_the_core_and_its_cli_loads_no_evaluation_module() -> None:
    code = (
        "import sys, slateboard, slateboard.cli\n"
        "from slateboard.cli import app\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'slateboard_eval')\n"
        "assert bad == [], bad\n"
        "import slateboard_eval\n"  # and it is importable here, so the check above is not vacuous
    )
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr


def test_the_entry_point_names_the_register_function() -> None:
    project = tomllib.loads((REPO / "eval" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["slateboard.cli"] == {"eval": "slateboard_eval.cli:register"}
    assert "slateboard" in project["dependencies"]
    core = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    # the core's wheel ships only the core package
    assert core["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/slateboard"]
