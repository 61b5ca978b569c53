"""benchmarks/service.py at a tiny K: every system runs K boards, through the CLI, with ratios."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from slateboard.cli import app


@pytest.mark.slow
def test_bench_service_runs_every_system_on_both_models_and_prints_ratios(
    capfd: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    # `slateboard bench service` runs the script in a child process writing to the real stdout.
    systems = "slateboard sqlite,slateboard team,langgraph sqlite,langgraph postgres"
    args = ["bench", "service", "--k", "2", "--steps", "3", "--latency-ms", "20", "--systems", systems, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(capfd.readouterr().out)
    rows = {(r["system"], r["model"]): r for r in data["results"]}
    notes = " ".join(data["notes"])
    for system in systems.split(","):
        for model in ("sleep", "http"):
            if (system, model) not in rows:
                assert f"{system} skipped:" in notes, (system, model)  # a peer that cannot run says why
                continue
            row = rows[system, model]
            assert row["steps"] == 6 and row["k"] == 2
            assert row["wall_over_ideal"] >= 1.0  # no board finishes before its model calls could
            assert row["cpu_ms_per_step"] > 0 and row["gap_p99_ms"] >= row["gap_p50_ms"] > 0
            for key in ("rss_start_kb_per_board", "rss_kb_per_board_step"):  # None: no sample came in time
                assert row[key] is None or row[key] >= 0
    if ("langgraph sqlite", "sleep") in rows:
        assert rows["langgraph sqlite", "sleep"]["wall_x"] == 1.0
        sb, lg = rows["slateboard sqlite", "http"], rows["langgraph sqlite", "http"]
        assert sb["wall_x"] == pytest.approx(sb["wall_s"] / lg["wall_s"])


@pytest.mark.slow
def test_gc_freeze_freezes_every_system_after_its_warm_up(capfd: pytest.CaptureFixture[str]) -> None:
    """--gc-freeze applies to every system alike (each cell's process froze its objects before the
    measured run), and the output says so; without it nothing is frozen."""
    systems = "slateboard sqlite,langgraph sqlite"
    base = ["bench", "service", "--k", "2", "--steps", "3", "--latency-ms", "10", "--models", "sleep"]
    for flag in (["--gc-freeze"], []):
        result = CliRunner().invoke(app, [*base, "--systems", systems, *flag, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(capfd.readouterr().out)
        frozen = {r["system"]: r["gc_frozen"] for r in data["results"]}
        notes = " ".join(data["notes"])
        if flag:
            assert "slateboard sqlite" in frozen and all(n > 1000 for n in frozen.values()), frozen
            assert "--gc-freeze: every system" in notes
        else:
            assert set(frozen.values()) == {0} and "--gc-freeze" not in notes


def test_the_jittered_latency_keeps_its_mean_and_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """--jitter J draws each call's latency uniformly within +-J of it (so the ideal wall, steps x
    latency, holds on average); without it the latency is fixed."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "service_latency.py"
    spec = importlib.util.spec_from_file_location("service_latency", path)
    assert spec is not None and spec.loader is not None
    latency = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(latency)
    monkeypatch.delenv(latency.JITTER_ENV, raising=False)
    assert {latency.draw(0.1) for _ in range(10)} == {0.1}
    monkeypatch.setenv(latency.JITTER_ENV, "0.5")
    draws = [latency.draw(0.1) for _ in range(4000)]
    assert min(draws) >= 0.05 and max(draws) <= 0.15 and max(draws) - min(draws) > 0.09
    assert sum(draws) / len(draws) == pytest.approx(0.1, rel=0.02)


def test_the_rss_trace_splits_a_board_s_memory_into_arrival_and_growth_per_step() -> None:
    """From RSS samples tagged with the model calls made so far: the RSS once every board made
    its first call is what a board holds on arrival; the peak over it, per board and later
    step, is its growth per step. No sample after the first calls: both unknown (None)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "service.py"
    spec = importlib.util.spec_from_file_location("service_bench_module", path)
    assert spec is not None and spec.loader is not None
    service = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(service)
    trace = service.RssTrace()
    kb = 1024
    rss0 = 100_000 * kb
    trace.samples = [(rss0 + 10 * kb, 3), (rss0 + 40 * kb, 10), (rss0 + 60 * kb, 25)]
    start, growth = trace.split(10, 3, rss0, rss0 + 80 * kb)  # 10 boards, 3 steps, peak +80 KB
    assert start == pytest.approx(4.0)  # +40 KB over 10 boards when the 10th first call was made
    assert growth == pytest.approx(40 / (10 * 2))  # +40 KB more over 10 boards x 2 later steps
    assert service.RssTrace().split(10, 3, rss0, rss0) == (None, None)
    import time

    with service.RssTrace() as live:  # the thread samples until the block ends
        for _ in range(400):  # however slow the machine: wait for the first sample
            if live.samples:
                break
            time.sleep(0.05)
    assert live.samples and all(rss > 0 for rss, _ in live.samples)
