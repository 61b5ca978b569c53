"""benchmarks/peers.py at a tiny N: every system runs the workload and ratios are printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slateboard.cli import app

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "peers.py"
SYSTEMS = "slateboard runner sqlite,slateboard runner sqlite loop,loomflow,langgraph sqlitesaver,langgraph sqlitesaver sync,flock"


def test_peers_benchmark_measures_every_system_and_its_ratio_to_slateboard(tmp_path: Path) -> None:
    cmd = [sys.executable, str(SCRIPT), "--n", "6", "--systems", SYSTEMS, "--json", "--tmpdir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {r["system"]: r for r in data["results"]}
    skipped = " ".join(data["notes"])
    for system in SYSTEMS.split(","):
        if system not in rows:
            assert f"{system} skipped:" in skipped, system  # a peer that cannot run says why
            continue
        row = rows[system]
        assert row["steps"] == 6 and row["ms_per_step"] > 0 and row["last_prompt_chars"] > 0
        assert row["cpu_ms_per_step"] > 0
    assert rows["slateboard runner sqlite"]["bytes_per_step"] > 0
    assert rows["slateboard runner sqlite loop"]["bytes_per_step"] > 0  # the same store, writing on the loop
    if "langgraph sqlitesaver" in rows:
        assert rows["langgraph sqlitesaver"]["bytes_per_step"] > 0
    ratios = {q["system"]: q for q in data["ratios"]}
    assert set(ratios) == set(rows)
    assert ratios["slateboard runner sqlite"]["time_x"] == 1.0
    assert all(q["reference"] == "slateboard runner sqlite" for q in ratios.values())
    if "langgraph sqlitesaver sync" in rows:  # the goal ratio at equal durability, wall and CPU
        goal = next(g for g in data["goals"] if g["ratio"] == "Runner SQLite / LangGraph+SqliteSaver sync")
        sb, lg = rows["slateboard runner sqlite"], rows["langgraph sqlitesaver sync"]
        assert goal["wall_x"] == pytest.approx(sb["ms_per_step"] / lg["ms_per_step"])
        assert goal["cpu_x"] == pytest.approx(sb["cpu_ms_per_step"] / lg["cpu_ms_per_step"])


def test_bench_peers_runs_from_the_cli_and_prints_ratios(capfd: pytest.CaptureFixture[str]) -> None:
    # `slateboard bench` runs the script in a child process writing to the real stdout.
    result = CliRunner().invoke(app, ["bench", "peers", "--n", "2", "--systems", "slateboard runner memory"])
    assert result.exit_code == 0, result.output
    out = capfd.readouterr().out
    assert "row / slateboard runner memory" in out
    assert "flock" not in out  # only the systems asked for
