"""The installed ``slateboard`` entry point in real processes, the Architect, and ``bench``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_testkit import HERE, NOTES_YAML, Invoke

EXE = Path(sys.executable).with_name("slateboard")


def cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env={**os.environ, **env}, cwd=cwd, timeout=120
    )


@pytest.fixture
def proc_env(tmp_path: Path) -> dict[str, str]:
    return {
        "SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'procs.db'}",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "COLUMNS": "200",
    }


@pytest.mark.skipif(not EXE.exists(), reason="the slateboard script is not installed next to this python")
def test_entry_point_help(proc_env: dict[str, str]) -> None:
    done = cli("--help", env=proc_env)
    assert done.returncode == 0
    for command in ("run", "boards", "log", "show", "replay", "architect", "bench", "templates"):
        assert command in done.stdout
    version = cli("--version", env=proc_env)
    assert version.returncode == 0 and version.stdout.startswith("slateboard ")


@pytest.mark.skipif(not EXE.exists(), reason="the slateboard script is not installed next to this python")
def test_run_then_log_in_separate_processes(proc_env: dict[str, str], tmp_path: Path) -> None:
    blueprint = tmp_path / "notes.yaml"
    blueprint.write_text(NOTES_YAML, encoding="utf-8")
    run = cli("run", str(blueprint), "--task", "across processes", "--json", env=proc_env)
    assert run.returncode == 0, run.stderr
    board_id = json.loads(run.stdout)["board_id"]
    log = cli("log", board_id, "--outcome", "rejected", env=proc_env)
    assert log.returncode == 0 and "notes are not empty" in log.stdout
    verify = cli("replay", board_id, "--verify", env=proc_env)
    assert verify.returncode == 0 and "verified" in verify.stdout
    missing = cli("run", str(tmp_path / "absent.yaml"), env=proc_env)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


@pytest.mark.skipif(not EXE.exists(), reason="the slateboard script is not installed next to this python")
def test_bench_runs_the_script_and_passes_arguments(proc_env: dict[str, str], tmp_path: Path) -> None:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "kernel.py").write_text(
        "import json, sys\nprint(json.dumps(sys.argv[1:]))\nsys.exit(3 if '--fail' in sys.argv else 0)\n"
    )
    env = {**proc_env, "SLATEBOARD_BENCHMARKS": str(bench)}
    done = cli("bench", "kernel", "--proposals", "10", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["--proposals", "10", "--json"]
    assert cli("bench", "kernel", "--fail", env=env).returncode == 3


def test_architect_prints_yaml(invoke: Invoke, tmp_path: Path) -> None:
    pytest.importorskip("slateboard.architect")
    reply = json.dumps(yaml.safe_load(NOTES_YAML))
    model = "scripted:" + json.dumps([reply])
    result = invoke("architect", "notes that a and b write, then a count", "--model", model)
    assert result.exit_code == 0, result.output
    data: Any = yaml.safe_load(result.stdout)
    assert data["name"] == "notes" and set(data["workers"]) == {"a", "b", "decider"}
    out = tmp_path / "designed.yaml"
    written = invoke("architect", "the same", "--model", model, "--output", str(out))
    assert written.exit_code == 0 and yaml.safe_load(out.read_text())["answer"] == "/answer"


def test_architect_failure_is_one_line_with_issues(invoke: Invoke) -> None:
    pytest.importorskip("slateboard.architect")
    model = "scripted:" + json.dumps(["no blueprint here"] * 3)
    result = invoke("architect", "anything", "--model", model, "--repairs", "1")
    assert result.exit_code == 1 and "Traceback" not in result.output
    head = result.stderr.splitlines()[0]
    assert head.startswith("error: the Architect produced no accepted blueprint")
