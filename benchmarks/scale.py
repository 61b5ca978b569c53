"""Scale-out benchmark: boards completed per minute with 1, 2 and 4 runner processes.

Each configuration gets a fresh PostgreSQL schema and P real ``slateboard worker`` processes
(``--concurrency C``). Once every runner has started, N boards are submitted at once and the
clock runs until the last one ends. The boards are the two-writers-then-decider blueprint below;
its LLM workers use a scripted model (``python:scale:bench_model``, this file) that sleeps
``--latency-ms`` (200 ms) per call and answers correctly, so the figures measure the runtime, the
store and the machine, not a model.

Reported per configuration: wall time, boards/min and the ratio to one process, the commits
per second, the runner processes' CPU (from /proc, in % of one core), PostgreSQL's CPU (every
``postgres`` process, % of one core), the machine's busy share (/proc/stat, all cores, every
process: other work on the machine counts too), PostgreSQL's average active sessions (sampled
from pg_stat_activity every 20 ms: database time per second) and the latency bound (the boards
per minute P*C workers could finish if only the model's latency counted). Then where it stops
scaling, and why: CPU (the machine is busy), the database (active sessions near the cores), or
neither (latency-bound: add concurrency). The CPU cost of one commit (runner and PostgreSQL, ms)
gives the CPU bound: the boards per minute the machine's cores could finish if nothing else ran.
Wake-ups and empty claims per commit (from the runners' own counts) show what LISTEN/NOTIFY's
broadcast costs: every commit that makes work wakes every idle runner, and all but one find
nothing to claim.

    python benchmarks/scale.py [--boards 60] [--runners 1,2,4] [--concurrency 8] [--latency-ms 200] [--json]

PostgreSQL: --pg, else $SLATEBOARD_TEST_PG, else postgresql://postgres@127.0.0.1:5432/test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
MODEL = "python:scale:bench_model"
NOTES = 6

BLUEPRINT: dict[str, Any] = {
    "name": "scale-bench",
    "schema": {
        "type": "object",
        "required": ["task", "notes"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "notes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["author", "text"],
                    "additionalProperties": False,
                    "properties": {"author": {"type": "string"}, "text": {"type": "string"}},
                },
            },
            "answer": {"type": "string"},
        },
    },
    "initial_state": {"task": "", "notes": []},
    "workers": {
        "a": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "b": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "decider": {"instruction": "Answer.", "reads": ["/**"], "writes": ["/answer"], "ops": ["add"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "a"},
        {"on": {"op": "start"}, "invoke": "b"},
        {
            "on": {"op": "add", "path": "/notes/-"},
            "when": f"value.author == 'a' && size(state.notes) < {NOTES}",
            "invoke": "a",
        },
        {
            "on": {"op": "add", "path": "/notes/-"},
            "when": f"value.author == 'b' && size(state.notes) < {NOTES}",
            "invoke": "b",
        },
        {"on": {"op": "add", "path": "/notes/-"}, "when": f"size(state.notes) >= {NOTES}", "invoke": "decider"},
    ],
    "done": "has(state.answer)",
    "answer": "/answer",
}


# -- the scripted model the runner processes import (python:scale:bench_model) -------------------
class BenchModel:
    """Sleeps $SLATEBOARD_BENCH_LATENCY_MS (default 200) per call, then answers the blueprint."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    @property
    def name(self) -> str:
        """The model string."""
        return MODEL

    async def generate(self, messages: Sequence[Any], *, json_schema: Mapping[str, Any] | None = None, **_: Any) -> Any:
        """The reply for the worker named in the system message."""
        from slateboard.models import Generation, GenerationUsage

        started = time.perf_counter()
        await asyncio.sleep(self.latency_s)
        system = next((m.content for m in messages if m.role == "system"), "")
        worker = system.split("You are worker '", 1)[-1].split("'", 1)[0]
        if worker == "decider":
            patch = [{"op": "add", "path": "/answer", "value": "done"}]
        else:
            patch = [{"op": "add", "path": "/notes/-", "value": {"author": worker, "text": f"a note by {worker}"}}]
        text = json.dumps({"patch": patch})
        return Generation(text, GenerationUsage.estimate(messages, text), "stop", MODEL, time.perf_counter() - started)


def bench_model() -> BenchModel:
    """The model runner processes build from ``python:scale:bench_model``."""
    return BenchModel(float(os.environ.get("SLATEBOARD_BENCH_LATENCY_MS", "200")) / 1000)


# -- measuring ------------------------------------------------------------------------------------
_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _postgres_cpu() -> float:
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                total += _proc_cpu(int(entry.name))
        except OSError:
            continue
    return total


def _machine() -> tuple[float, float]:
    """(busy, total) jiffies of all cores."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return float(sum(parts) - idle), float(sum(parts))


def _pg_url(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


async def _sample_db(dsn: str, stop: asyncio.Event, out: list[int]) -> None:
    """Active PostgreSQL sessions (not this one) every 20 ms until ``stop``."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()"
                " AND datname = current_database()"
            )
            row = await cur.fetchone()
            out.append(int(row[0]) if row else 0)
            await asyncio.sleep(0.02)


def _start_runner(url: str, concurrency: int, latency_ms: float, log: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", SLATEBOARD_BENCH_LATENCY_MS=str(latency_ms))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env.pop("SLATEBOARD_STORE", None)
    cmd = [sys.executable, "-c", "from slateboard.cli import main; main()", "worker", "--store", url]
    cmd += ["--concurrency", str(concurrency), "--grace", "5"]
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True, env=env)


async def run_config(dsn: str, runners: int, boards: int, concurrency: int, latency_ms: float) -> dict[str, Any]:
    """One configuration: P runner processes, N boards; the measurements."""
    from slateboard.runtime import submit
    from slateboard.stores import open_store

    schema = f"sb_bench_scale_{uuid.uuid4().hex[:10]}"
    url = _pg_url(dsn, schema)
    store = await open_store(url)
    tmp = Path(tempfile.mkdtemp(prefix="slateboard-scale-"))
    procs: list[subprocess.Popen[str]] = []
    try:
        logs = [tmp / f"runner-{i}.log" for i in range(runners)]
        procs = [_start_runner(url, concurrency, latency_ms, log) for log in logs]
        for proc, log in zip(procs, logs, strict=True):
            while "started" not in log.read_text():
                if proc.poll() is not None:
                    raise RuntimeError(f"a runner exited at start: {log.read_text()[-500:]}")
                await asyncio.sleep(0.05)
        samples: list[int] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(_sample_db(dsn, stop, samples))
        cpu0 = [_proc_cpu(p.pid) for p in procs]
        pg0 = _postgres_cpu()
        busy0, total0 = _machine()
        t0 = time.perf_counter()
        ids = [await submit(store, BLUEPRINT, task=f"board {i}", model=MODEL) for i in range(boards)]
        while await store.list_boards(status="running"):
            await asyncio.sleep(0.05)
        wall = time.perf_counter() - t0
        cpu = sum(_proc_cpu(p.pid) for p in procs) - sum(cpu0)
        pg_cpu = _postgres_cpu() - pg0
        busy1, total1 = _machine()
        stop.set()
        await sampler
        records = 0
        for board_id in ids:
            info = await store.board_info(board_id)
            if info.status != "done":
                raise RuntimeError(f"board {board_id} ended {info.status}: {info.reason}")
            records += info.seq
        for proc in procs:
            proc.terminate()  # SIGTERM: a graceful stop, which prints the runner's counts
        wakeups = empty = 0
        for proc, log in zip(procs, logs, strict=True):
            proc.wait(timeout=60)
            found = re.search(r"(\d+) wake-ups, (\d+) empty claims", log.read_text())
            if found:
                wakeups += int(found.group(1))
                empty += int(found.group(2))
        steps_per_board = records / boards
        bound = runners * concurrency / (steps_per_board * latency_ms / 1000) * 60
        cores = os.cpu_count() or 1
        cpu_per_commit = (cpu + pg_cpu) / max(records, 1)
        return {
            "runners": runners,
            "boards": boards,
            "concurrency": concurrency,
            "wall_s": wall,
            "boards_per_min": boards / wall * 60,
            "commits_per_s": records / wall,
            "records_per_board": steps_per_board,
            "runner_cpu_pct": cpu / wall * 100,
            "postgres_cpu_pct": pg_cpu / wall * 100,
            "machine_busy_pct": (busy1 - busy0) / max(total1 - total0, 1.0) * 100,
            "db_active_sessions": sum(samples) / max(len(samples), 1),
            "latency_bound_boards_per_min": bound,
            "runner_cpu_ms_per_commit": cpu / max(records, 1) * 1000,
            "postgres_cpu_ms_per_commit": pg_cpu / max(records, 1) * 1000,
            "cpu_bound_boards_per_min": cores / max(cpu_per_commit, 1e-9) / steps_per_board * 60,
            "wakeups_per_commit": wakeups / max(records, 1),
            "empty_claims_per_commit": empty / max(records, 1),
        }
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        drop = getattr(store, "drop_schema", None)
        if drop is not None:
            await drop()
        await store.close()


def verdict(rows: list[dict[str, Any]], cores: int) -> str:
    """Where scaling stops, and the likely reason."""
    for prev, row in itertools.pairwise(rows):
        gain = row["boards_per_min"] / prev["boards_per_min"]
        wanted = row["runners"] / prev["runners"]
        if gain < 1 + 0.5 * (wanted - 1):
            if row["machine_busy_pct"] >= 85:
                ours = row["runner_cpu_pct"] + row["postgres_cpu_pct"]
                why = (
                    f"CPU: the machine's {cores} cores were {row['machine_busy_pct']:.0f}% busy, of which runners and"
                    f" PostgreSQL took {ours / cores:.0f}% (the rest is other work on the machine)"
                )
            elif row["db_active_sessions"] >= 0.8 * cores:
                why = f"the database: {row['db_active_sessions']:.1f} active sessions on {cores} cores"
            else:
                why = "neither CPU nor the database is saturated (latency-bound: raise --concurrency)"
            return (
                f"scaling stops between {prev['runners']} and {row['runners']} processes"
                f" ({gain:.2f}x for {wanted:.0f}x the processes): {why}"
            )
    return "scales to the largest configuration measured"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Boards per minute with 1, 2, 4 runner processes (PostgreSQL).")
    parser.add_argument("--boards", type=int, default=60, help="boards per configuration (default 60)")
    parser.add_argument("--runners", default="1,2,4", help="runner process counts (default 1,2,4)")
    parser.add_argument("--concurrency", type=int, default=8, help="invocations in flight per process (default 8)")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="scripted model latency (default 200)")
    parser.add_argument("--pg", default=os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG, help="PostgreSQL DSN")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.runners.split(",") if x.strip()]
    if args.boards < 1 or not counts or min(counts) < 1:
        parser.error("--boards and --runners must be positive")
    rows = [asyncio.run(run_config(args.pg, n, args.boards, args.concurrency, args.latency_ms)) for n in counts]
    base = rows[0]["boards_per_min"]
    for row in rows:
        row["ratio_vs_first"] = row["boards_per_min"] / base
    cores = os.cpu_count() or 1
    summary = verdict(rows, cores)
    if args.json:
        print(json.dumps({"latency_ms": args.latency_ms, "cores": cores, "rows": rows, "verdict": summary}, indent=2))
        return 0
    print(
        f"scale-out: {args.boards} boards, model latency {args.latency_ms:g} ms, concurrency {args.concurrency}"
        f" per process, {cores} cores (shared machine: other work counts in 'machine busy')"
    )
    head = ("runners", "wall s", "boards/min", "vs 1", "commits/s", "runner CPU", "postgres CPU", "machine busy",
            "DB active", "CPU ms/commit", "empty claims", "latency bound", "CPU bound")  # fmt: skip
    print(" ".join(f"{h:>13}" for h in head))
    for r in rows:
        cells = (
            str(r["runners"]), f"{r['wall_s']:.1f}", f"{r['boards_per_min']:.0f}", f"{r['ratio_vs_first']:.2f}x",
            f"{r['commits_per_s']:.0f}", f"{r['runner_cpu_pct']:.0f}%", f"{r['postgres_cpu_pct']:.0f}%",
            f"{r['machine_busy_pct']:.0f}%", f"{r['db_active_sessions']:.2f}",
            f"{r['runner_cpu_ms_per_commit']:.1f}+{r['postgres_cpu_ms_per_commit']:.1f}",
            f"{r['empty_claims_per_commit']:.2f}/commit",
            f"{r['latency_bound_boards_per_min']:.0f}/min", f"{r['cpu_bound_boards_per_min']:.0f}/min",
        )  # fmt: skip
        print(" ".join(f"{c:>13}" for c in cells))
    print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
