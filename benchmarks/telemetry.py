"""Telemetry benchmark: what OpenTelemetry tracing costs per step of the peers workload.

The workload is ``benchmarks/peers.py``'s slateboard Runner (3 LLM workers on a scripted
zero-latency model, memory and SQLite stores, N steps). Modes, each in its own child process:

  - ``off``: tracing off (the default; every hook is a shared no-op);
  - ``on``: tracing on with the SDK (SimpleSpanProcessor into an in-memory exporter);
  - ``base``: tracing off, importing slateboard from ``--base-src DIR`` (e.g. a checkout from
    before the hooks existed: ``git archive REV src | tar -x -C /tmp/base``), to show that the
    hooks cost nothing measurable when off.

Modes run side by side in rounds (one child per mode at once, so a busy machine loads them
alike); per round and store the figure is the best of ``--reps`` runs, in CPU ms and wall ms per
step; the summary gives the median over rounds and the median of per-round ratios to ``off``.

    python benchmarks/telemetry.py [--n 200] [--rounds 5] [--reps 3] [--modes off,on] [--base-src DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


async def _one(url: str, db: Path | None, steps: int) -> tuple[float, float]:
    sys.path.insert(0, str(HERE))
    import peers

    c0 = time.process_time()
    result = await peers.run_slateboard_runner(steps, url, db)
    return (time.process_time() - c0) / steps * 1e3, result["run_s"] / steps * 1e3


async def child(mode: str, steps: int, reps: int) -> dict[str, Any]:
    """Run the workload ``reps`` times per store in this process; best CPU and wall ms per step."""
    if mode == "on":
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from slateboard import telemetry

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        telemetry.enable(provider)
    await _one("memory://", None, 3)  # warm-up: imports, caches
    out: dict[str, Any] = {}
    for store in ("memory", "sqlite"):
        cpu: list[float] = []
        wall: list[float] = []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as d:
                db = Path(d) / "b.db"
                c, w = await _one(
                    "memory://" if store == "memory" else f"sqlite:///{db}", None if store == "memory" else db, steps
                )
            cpu.append(c)
            wall.append(w)
        out[store] = {"cpu_ms": min(cpu), "wall_ms": min(wall)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the summary (a table, or JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="steps per run (default 200)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="runs per store in each child; the best counts")
    ap.add_argument("--modes", default="off,on", help="comma-separated from off, on, base (default off,on)")
    ap.add_argument("--base-src", default=None, help="the src directory the base mode imports")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.n, args.reps))))
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if "base" in modes and not args.base_src:
        ap.error("mode base needs --base-src")
    if "off" not in modes:
        modes.insert(0, "off")
    rounds: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        procs = {}
        for mode in modes:
            env = dict(os.environ)
            src = args.base_src if mode == "base" else str(SRC)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "off" if mode == "base" else mode,
                "--n",
                str(args.n),
                "--reps",
                str(args.reps),
            ]
            procs[mode] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        rounds.append({mode: json.loads(p.communicate()[0]) for mode, p in procs.items()})
    summary = []
    for store in ("memory", "sqlite"):
        for mode in modes:
            cpu = [r[mode][store]["cpu_ms"] for r in rounds]
            wall = [r[mode][store]["wall_ms"] for r in rounds]
            ratios = [r[mode][store]["cpu_ms"] / r["off"][store]["cpu_ms"] for r in rounds]
            summary.append(
                {
                    "store": store,
                    "mode": mode,
                    "cpu_ms_per_step": statistics.median(cpu),
                    "wall_ms_per_step": statistics.median(wall),
                    "cpu_x_off": statistics.median(ratios),
                    "cpu_x_off_range": [min(ratios), max(ratios)],
                }
            )
    if args.json:
        print(json.dumps({"n": args.n, "rounds": args.rounds, "summary": summary}, indent=2))
    else:
        print(f"{'store':8} {'mode':5} {'CPU ms/step':>12} {'wall ms/step':>13} {'CPU x off':>10}  range")
        for s in summary:
            lo, hi = s["cpu_x_off_range"]
            print(
                f"{s['store']:8} {s['mode']:5} {s['cpu_ms_per_step']:12.2f} {s['wall_ms_per_step']:13.2f} "
                f"{s['cpu_x_off']:10.3f}  {lo:.3f}-{hi:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
