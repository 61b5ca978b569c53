"""The scale benchmark's report: where each path stops scaling, the ratios temporal/runners, and
the text tables (``scale.py`` measures; this module only reads its figures)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["print_report", "ratios", "verdict"]


# -- the report -----------------------------------------------------------------------------------
def verdict(rows: list[dict[str, Any]], cores: int) -> str:
    """Where scaling stops on one path, and the likely reason."""
    for prev, row in itertools.pairwise(rows):
        gain = row["boards_per_min"] / prev["boards_per_min"]
        wanted = row["workers"] / prev["workers"]
        if gain < 1 + 0.5 * (wanted - 1):
            if row["machine_busy_pct"] >= 85:
                ours = row["worker_cpu_pct"] + (row["postgres_cpu_pct"] or 0) + (row["temporal_cpu_pct"] or 0)
                why = (
                    f"CPU: the machine's {cores} cores were {row['machine_busy_pct']:.0f}% busy, of which workers and"
                    f" servers took {ours / cores:.0f}% (the rest is other work on the machine)"
                )
            elif (row["db_active_sessions"] or 0) >= 0.8 * cores:
                why = f"the database: {row['db_active_sessions']:.1f} active sessions on {cores} cores"
            elif row["temporal_cpu_pct"] is not None:
                why = (
                    f"neither the CPU nor PostgreSQL is saturated; the Temporal dev server took"
                    f" {row['temporal_cpu_pct']:.0f}% of one core, and every step is several round trips through it"
                    " (compare --temporal-db memory: no history writes to disk)"
                )
            else:
                why = "neither CPU nor the database is saturated (latency-bound: raise --concurrency)"
            return (
                f"scaling stops between {prev['workers']} and {row['workers']} processes"
                f" ({gain:.2f}x for {wanted:.0f}x the processes): {why}"
            )
    return "scales to the largest configuration measured"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def ratios(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """temporal / runners for each worker count measured on both paths."""
    by = {(r["engine"], r["workers"]): r for r in rows}
    out: list[dict[str, Any]] = []
    for (engine, n), t in by.items():
        r = by.get(("runners", n))
        if engine != "temporal" or r is None:
            continue
        ts, rs = t["steps"], r["steps"]
        out.append({
            "workers": n,
            "wall_x": _ratio(t["wall_s"], r["wall_s"]),
            "boards_per_min_x": _ratio(t["boards_per_min"], r["boards_per_min"]),
            "worker_cpu_per_board_x": _ratio(t["worker_cpu_ms_per_board"], r["worker_cpu_ms_per_board"]),
            "cpu_per_board_x": _ratio(t["cpu_ms_per_board"], r["cpu_ms_per_board"]),
            "engine_per_step_p50_x": _ratio(ts["engine_ms"]["p50"], rs["engine_ms"]["p50"]),
            "engine_per_step_p99_x": _ratio(ts["engine_ms"]["p99"], rs["engine_ms"]["p99"]),
            "post_call_p50_x": _ratio(ts["post_ms"]["p50"], rs["post_ms"]["p50"]),
            "post_call_p99_x": _ratio(ts["post_ms"]["p99"], rs["post_ms"]["p99"]),
        })  # fmt: skip
    return out


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


def _table(head: Sequence[str], lines: Sequence[Sequence[str]], width: int = 11) -> None:
    print(" ".join(f"{h:>{width}}" for h in head))
    for cells in lines:
        print(" ".join(f"{c:>{width}}" for c in cells))


def print_report(report: Mapping[str, Any]) -> None:
    """The figures as text tables: per path, then the ratios, then any failed boards."""
    print(
        f"scale-out: {report['boards']} boards, model latency {report['latency_ms']:g} ms, concurrency"
        f" {report['concurrency']} per process, {report['cores']} cores (shared machine: other work counts in"
        " 'busy'). CPU: worker processes (seconds / % of one core), CPU ms/board: workers and servers."
        " Step times (ms, p50/p99): engine = the time the engine adds around one model call, post = model call"
        " end to commit in the store, sched = scheduled to committed minus the model call (queueing included)"
    )
    for engine, path in report["paths"].items():
        print(f"\n{engine}: {path['verdict']}")
        head = ("workers", "wall s", "boards/min", "bound/min", "vs bound", "failed", "worker CPU", "CPU ms/brd",
                "pg CPU", "temporal", "busy", "engine", "post", "sched")  # fmt: skip
        lines = []
        for r in path["rows"]:
            s = r["steps"]
            lines.append((
                str(r["workers"]), f"{r['wall_s']:.1f}", f"{r['boards_per_min']:.0f}",
                f"{r['latency_bound_boards_per_min']:.0f}", f"{r['ratio_to_latency_bound']:.2f}", str(r["failed"]),
                f"{r['worker_cpu_s']:.1f}s/{r['worker_cpu_pct']:.0f}%", f"{r['cpu_ms_per_board']:.0f}",
                _pct(r["postgres_cpu_pct"]), _pct(r["temporal_cpu_pct"]), _pct(r["machine_busy_pct"]),
                *(f"{_ms(s[k]['p50'])}/{_ms(s[k]['p99'])}" for k in ("engine_ms", "post_ms", "scheduled_ms")),
            ))  # fmt: skip
        _table(head, lines)
        light = path.get("light")
        if light is not None:
            s = light["steps"]
            print(
                f"  with {light['boards']} boards on 1 process (no step waits for a slot): engine"
                f" {_ms(s['engine_ms']['p50'])}/{_ms(s['engine_ms']['p99'])} ms, post"
                f" {_ms(s['post_ms']['p50'])}/{_ms(s['post_ms']['p99'])} ms, sched"
                f" {_ms(s['scheduled_ms']['p50'])}/{_ms(s['scheduled_ms']['p99'])} ms (p50/p99),"
                f" {light['failed']} failed"
            )
    if report["ratios"]:
        print("\ntemporal / runners")
        ratio_head = ("workers", "wall", "boards/min", "wkr CPU/brd", "CPU/board", "engine p50", "engine p99", "post p50",
                "post p99")  # fmt: skip
        keys = ("wall_x", "boards_per_min_x", "worker_cpu_per_board_x", "cpu_per_board_x", "engine_per_step_p50_x",
                "engine_per_step_p99_x", "post_call_p50_x", "post_call_p99_x")  # fmt: skip
        lines = [(str(q["workers"]), *(_x(q[k]) for k in keys)) for q in report["ratios"]]
        lines += [(f"{q['workers']} light", *(_x(q[k]) for k in keys)) for q in report.get("light_ratios", [])]
        _table(ratio_head, lines)
    every = [r for p in report["paths"].values() for r in [*p["rows"], p.get("light")] if r is not None]
    failed = [(r, f) for r in every for f in r["failed_boards"]]
    print(f"\nfailed boards: {len(failed)}")
    for r, f in failed:
        print(
            f"  {r['engine']} x{r['workers']}: board {f['board']} (task {f['task']}) ended {f['status']}: {f['reason']}"
        )
