"""Store benchmark: durable commit latency and persisted bytes per step, against LangGraph.

A 3-worker board (workers append 200-character entries round-robin, each step completing its
invocation and pushing the next worker's, as a runner would) runs N steps on each store:

  - sqlite (synchronous=full: every commit fsynced; the default),
  - sqlite (synchronous=normal: survives a killed process, not a power loss),
  - postgresql (synchronous_commit=on), when a server answers ($SLATEBOARD_TEST_PG or
    postgresql://postgres@127.0.0.1:5432/test),

and the equivalent LangGraph graph (3 nodes appending 200-character entries round-robin to an
``Annotated[list, operator.add]`` channel) with its ``SqliteSaver``, in the same run.

Measured per step: the durable commit latency (``store.append``; for LangGraph the checkpoint
writes of the step: ``put`` + ``put_writes``), p50 and p99; the whole step (kernel + commit);
and the persisted bytes (database growth after a WAL checkpoint, divided by N; for PostgreSQL
the growth of the schema's relations). Goal at N = 1,000: >= 15x less time and >= 100x fewer
bytes per step than LangGraph + SqliteSaver (reference: 4.5 ms and 125 KB per step).
Beside wall time: the CPU time of the process per step, and the claim's own latency (p50), which
must not grow with N (claims walk only live invocations).

Group commit (``--boards 1,4,16``): B boards append concurrently to one store (one SQLite file
with synchronous=full, with the default connection thread and with ``writer=loop``, which
commits on the event loop and so shares no flush; PostgreSQL), each board a loop of claim -> kernel.prepare -> append
(``--fused``: the append leases the board's next invocation in its transaction, when the store
supports it). Printed: commits/s over all boards, flushes per commit (SQLite: the store's own
count of durable commits; PostgreSQL: ``pg_stat_wal.wal_sync``, server-wide), CPU ms per commit
beside wall; goal: 16 boards >= 8x the commits/s of one board on the same store.

    python benchmarks/store.py [--steps 200,1000] [--json] [--no-langgraph] [--no-postgres]
    python benchmarks/store.py --boards 1,4,16 [--board-steps 300] [--fused] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, replay
from slateboard.scheduling.invocation import Invocation
from slateboard.stores import AgendaChanges, Store, open_store

try:  # newer stores lease the next invocation inside the append (older ones: claim separately)
    from slateboard.stores import ClaimRequest
except ImportError:  # pragma: no cover - benchmarking an older checkout
    ClaimRequest = None  # type: ignore[assignment,misc]

WORKERS = ("alpha", "beta", "gamma")
ENTRY_CHARS = 200
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"

BLUEPRINT: dict[str, Any] = {
    "name": "store-bench",
    "schema": {
        "type": "object",
        "required": ["entries"],
        "additionalProperties": False,
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["author", "content"],
                    "additionalProperties": False,
                    "properties": {"author": {"type": "string"}, "content": {"type": "string", "maxLength": 400}},
                },
            }
        },
    },
    "initial_state": {"entries": []},
    "workers": {w: {"reads": ["/entries"], "writes": ["/entries/-"]} for w in WORKERS},
    "limits": {"max_steps": 1_000_000},
}


def entry_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` entries of 200 characters of word-like text (compressible like prose, not like zeros),
    made before the timed loop: they stand for what the workers produce."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words: list[str] = []
        length = 0
        while length < ENTRY_CHARS:
            word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
            words.append(word)
            length += len(word) + 1
        out.append(" ".join(words)[:ENTRY_CHARS])
    return out


def pct(values: list[float], p: float) -> float:
    """Percentile (nearest rank) of a list of values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


# -- slateboard ---------------------------------------------------------------------------------
def _sqlite_bytes(path: Path) -> int:
    """Bytes on disk after folding the WAL back into the database file."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    total = path.stat().st_size
    for suffix in ("-wal", "-shm"):
        extra = Path(str(path) + suffix)
        if extra.exists() and suffix == "-wal":
            total += extra.stat().st_size
    return total


async def _pg_bytes(dsn: str, schema: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def run_slateboard(label: str, url: str, steps: int, size_of: Any) -> dict[str, Any]:
    """Run ``steps`` steps of the 3-worker board on one store; returns the measurements."""
    bp = compile_blueprint(BLUEPRINT)
    texts = entry_texts(steps)
    store: Store = await open_store(url)
    try:
        first = Invocation("start", WORKERS[0], 0, 0, binding=("0",))
        info = await store.create_board(BLUEPRINT, bp.initial_state(), agenda=[first])
        board_id = info.board_id
        await store.close()
        base = await size_of()
        store = await open_store(url)
        kernel = Kernel(bp)
        commit_ms: list[float] = []
        step_ms: list[float] = []
        claim_ms: list[float] = []
        logical = 0
        t_run = time.perf_counter()
        c_run = time.process_time()
        for i in range(steps):
            t0 = time.perf_counter()
            claim = await store.claim(board_id, owner="bench", lease_s=60)
            claim_ms.append((time.perf_counter() - t0) * 1000)
            assert claim is not None
            inv = claim.invocation
            proposal = Proposal(
                inv.worker,
                [{"op": "add", "path": "/entries/-", "value": {"author": inv.worker, "content": texts[i]}}],
                invocation=inv.id,
            )
            decision = kernel.prepare(proposal)
            nxt = Invocation(f"s{i + 1}", WORKERS[(i + 1) % 3], 0, i + 1, binding=(str(i + 1),))
            changes = AgendaChanges(push=[nxt] if i + 1 < steps else [], complete=[inv.id])
            t1 = time.perf_counter()
            try:
                await store.append(board_id, decision.record, agenda=changes, state=kernel.state)
            except BaseException:
                kernel.abort(decision)
                raise
            t2 = time.perf_counter()
            kernel.commit(decision)
            commit_ms.append((t2 - t1) * 1000)
            step_ms.append((time.perf_counter() - t0) * 1000)
            logical += len(decision.record.to_bytes())
        run_s = time.perf_counter() - t_run
        cpu_s = time.process_time() - c_run
        await store.close()
        size = await size_of() - base
        store = await open_store(url)
        loaded = await store.load_board(board_id)
        report = replay(
            bp,
            loaded.start_state,
            loaded.records,
            start_version=loaded.start_version,
            start_seq=loaded.start_seq,
            start_hash=loaded.start_hash,
        )
        assert report.ok and report.version == steps and report.state_hash == kernel.state_hash, str(report)
    finally:
        await store.close()
    return {
        "system": label,
        "steps": steps,
        "commit_p50_ms": statistics.median(commit_ms),
        "commit_p99_ms": pct(commit_ms, 99),
        "step_mean_ms": run_s / steps * 1000,
        "cpu_per_step_ms": cpu_s / steps * 1000,
        "claim_p50_ms": statistics.median(claim_ms),
        "claim_last100_ms": statistics.median(claim_ms[-100:]),
        "bytes_per_step": size / steps,
        "record_bytes_per_step": logical / steps,
    }


async def bench_sqlite(steps: int, synchronous: str, tmp: Path) -> dict[str, Any]:
    path = tmp / f"sb-{synchronous}-{steps}-{uuid.uuid4().hex[:6]}.db"

    async def size_of() -> int:
        return _sqlite_bytes(path) if path.exists() else 0

    return await run_slateboard(
        f"slateboard sqlite ({synchronous})", f"sqlite:///{path}?synchronous={synchronous}", steps, size_of
    )


async def bench_postgres(steps: int, dsn: str) -> dict[str, Any]:
    schema = f"sbbench_{uuid.uuid4().hex[:10]}"

    async def size_of() -> int:
        return await _pg_bytes(dsn, schema)

    sep = "&" if "?" in dsn else "?"
    try:
        return await run_slateboard("slateboard postgresql", f"{dsn}{sep}schema={schema}", steps, size_of)
    finally:
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pg_answers(dsn: str) -> str | None:
    """None when the server answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


# -- LangGraph ----------------------------------------------------------------------------------
def langgraph_missing() -> str | None:
    """None when langgraph and its SqliteSaver import, else why not."""
    try:
        import langgraph.checkpoint.sqlite
        import langgraph.graph  # noqa: F401
    except ImportError as exc:
        return f"{exc} (install slateboard[peers]: langgraph, langgraph-checkpoint-sqlite)"
    return None


def bench_langgraph(steps: int, tmp: Path) -> dict[str, Any]:
    """The equivalent LangGraph graph on SqliteSaver: 3 nodes appending entries round-robin."""
    import operator
    from typing import Annotated, TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    # Functional form: the annotations must be real objects (this module uses postponed annotations).
    State = TypedDict("State", {"entries": Annotated[list[dict[str, str]], operator.add], "step": int})  # noqa: UP013

    texts = entry_texts(steps)

    def node(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            step = state["step"]
            return {"entries": [{"author": name, "content": texts[step]}], "step": step + 1}

        return run

    graph = StateGraph(State)
    for w in WORKERS:
        graph.add_node(w, node(w))
    graph.add_edge(START, WORKERS[0])
    for i, w in enumerate(WORKERS):
        nxt = WORKERS[(i + 1) % 3]
        graph.add_conditional_edges(w, lambda s, nxt=nxt: END if s["step"] >= steps else nxt, [nxt, END])

    path = tmp / f"lg-{steps}-{uuid.uuid4().hex[:6]}.db"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    conn.commit()
    base = _sqlite_bytes(path)
    write_ms: list[float] = []
    current: list[float] = [0.0]
    orig_put, orig_writes = saver.put, saver.put_writes

    def put(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return orig_put(*args, **kwargs)
        finally:
            current[0] += (time.perf_counter() - t0) * 1000
            write_ms.append(current[0])
            current[0] = 0.0

    def put_writes(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return orig_writes(*args, **kwargs)
        finally:
            current[0] += (time.perf_counter() - t0) * 1000

    saver.put = put  # type: ignore[method-assign]
    saver.put_writes = put_writes  # type: ignore[method-assign]
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    t0 = time.perf_counter()
    out = app.invoke({"entries": [], "step": 0}, config)  # type: ignore[call-overload]
    run_s = time.perf_counter() - t0
    assert len(out["entries"]) == steps
    conn.close()
    size = _sqlite_bytes(path) - base
    # One checkpoint per super-step plus the input checkpoint: attribute them to the N steps.
    per_step = write_ms[1:] if len(write_ms) > steps else write_ms
    return {
        "system": "langgraph SqliteSaver",
        "steps": steps,
        "commit_p50_ms": statistics.median(per_step),
        "commit_p99_ms": pct(per_step, 99),
        "step_mean_ms": run_s / steps * 1000,
        "cpu_per_step_ms": None,
        "claim_p50_ms": None,
        "claim_last100_ms": None,
        "bytes_per_step": size / steps,
        "record_bytes_per_step": None,
    }


# -- group commit: many boards, one store ----------------------------------------------------------
async def _wal_syncs(dsn: str) -> int | None:
    """The server's WAL sync count (pg_stat_wal, PostgreSQL 14+), or None."""
    import psycopg

    try:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            cur = await conn.execute("SELECT wal_sync FROM pg_stat_wal")
            row = await cur.fetchone()
            return int(row[0]) if row else None
    except psycopg.Error:
        return None


async def run_boards(label: str, url: str, boards: int, steps: int, *, fused: bool, dsn: str | None) -> dict[str, Any]:
    """``boards`` boards appending ``steps`` records each, concurrently, to one store."""
    bp = compile_blueprint(BLUEPRINT)
    texts = entry_texts(steps)
    store: Store = await open_store(url)
    fused = fused and ClaimRequest is not None
    try:
        ids = []
        for _ in range(boards):
            first = Invocation("start", WORKERS[0], 0, 0, binding=("0",))
            ids.append((await store.create_board(BLUEPRINT, bp.initial_state(), agenda=[first])).board_id)
        kernels = {bid: Kernel(bp) for bid in ids}

        async def drive(board_id: str) -> None:
            kernel = kernels[board_id]
            claim = None
            for i in range(steps):
                if claim is None:
                    claim = await store.claim(board_id, owner="bench", lease_s=60)
                assert claim is not None
                inv = claim.invocation
                proposal = Proposal(
                    inv.worker,
                    [{"op": "add", "path": "/entries/-", "value": {"author": inv.worker, "content": texts[i]}}],
                    invocation=inv.id,
                )
                decision = kernel.prepare(proposal)
                nxt = Invocation(f"s{i + 1}", WORKERS[(i + 1) % 3], 0, i + 1, binding=(str(i + 1),))
                changes = AgendaChanges(push=[nxt] if i + 1 < steps else [], complete=[inv.id])
                extra: dict[str, Any] = {}
                if fused and i + 1 < steps:
                    extra["claim"] = ClaimRequest(owner="bench", lease_s=60)
                try:
                    result = await store.append(board_id, decision.record, agenda=changes, state=kernel.state, **extra)
                except BaseException:
                    kernel.abort(decision)
                    raise
                kernel.commit(decision)
                claim = getattr(result, "claim", None) if fused else None

        stats = getattr(store, "commit_stats", None)
        before = stats() if stats else None
        wal0 = await _wal_syncs(dsn) if dsn else None
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(drive(bid) for bid in ids))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        wal1 = await _wal_syncs(dsn) if dsn else None
        after = stats() if stats else None
        commits = boards * steps
        flushes: float | None = None
        if wal0 is not None and wal1 is not None:
            flushes = (wal1 - wal0) / commits
        elif before is not None and after is not None:
            flushes = (after.flushes - before.flushes) / commits
        for bid in ids:
            info = await store.board_info(bid)
            assert info.seq == steps and info.last_hash == kernels[bid].last_hash
    finally:
        await store.close()
    return {
        "system": label,
        "boards": boards,
        "commits": commits,
        "commits_per_s": commits / wall,
        "flushes_per_commit": flushes,
        "cpu_ms_per_commit": cpu / commits * 1000,
        "wall_ms_per_commit": wall / commits * 1000,
        "fused": fused,
    }


async def bench_boards(args: argparse.Namespace, dsn: str, pg_reason: str | None, tmp: Path) -> list[dict[str, Any]]:
    counts = [int(b) for b in args.boards.split(",") if b.strip()]
    rows: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for boards in counts:  # interleaved: every count once per round
            path = tmp / f"gc-{boards}-{uuid.uuid4().hex[:6]}.db"
            rows.append(
                await run_boards(
                    "sqlite (full)", f"sqlite:///{path}", boards, args.board_steps, fused=args.fused, dsn=None
                )
            )
            # The loop writer (one board per process) gives group commit up: shown for the trade.
            loop_path = tmp / f"gc-loop-{boards}-{uuid.uuid4().hex[:6]}.db"
            rows.append(
                await run_boards(
                    "sqlite (loop)",
                    f"sqlite:///{loop_path}?writer=loop",
                    boards,
                    args.board_steps,
                    fused=args.fused,
                    dsn=None,
                )
            )
            if not pg_reason:
                schema = f"sbbench_{uuid.uuid4().hex[:10]}"
                sep = "&" if "?" in dsn else "?"
                try:
                    rows.append(
                        await run_boards(
                            "postgresql",
                            f"{dsn}{sep}schema={schema}&pool_max={max(8, boards)}",
                            boards,
                            args.board_steps,
                            fused=args.fused,
                            dsn=dsn,
                        )
                    )
                finally:
                    import psycopg

                    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return rows


def summarise_boards(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median over rounds per (system, boards), with the speed-up over one board."""
    out: list[dict[str, Any]] = []
    keys = sorted({(r["system"], r["boards"]) for r in rows})
    for system, boards in keys:
        group = [r for r in rows if r["system"] == system and r["boards"] == boards]
        flushes = [r["flushes_per_commit"] for r in group if r["flushes_per_commit"] is not None]
        out.append(
            {
                "system": system,
                "boards": boards,
                "rounds": len(group),
                "commits_per_s": statistics.median(r["commits_per_s"] for r in group),
                "flushes_per_commit": statistics.median(flushes) if flushes else None,
                "cpu_ms_per_commit": statistics.median(r["cpu_ms_per_commit"] for r in group),
                "wall_ms_per_commit": statistics.median(r["wall_ms_per_commit"] for r in group),
                "fused": group[0]["fused"],
            }
        )
    for row in out:
        one = next((r for r in out if r["system"] == row["system"] and r["boards"] == 1), None)
        row["x_one_board"] = row["commits_per_s"] / one["commits_per_s"] if one else None
    return out


def print_boards(summary: list[dict[str, Any]], notes: list[str]) -> None:
    head = f"{'store':<16} {'boards':>6} {'commits/s':>10} {'x 1 board':>10} {'flushes/commit':>15} {'CPU ms/commit':>14} {'wall ms/commit':>15}"
    print(head)
    print("-" * len(head))
    for r in summary:
        fl = "" if r["flushes_per_commit"] is None else f"{r['flushes_per_commit']:.3f}"
        x = "" if r["x_one_board"] is None else f"{r['x_one_board']:.1f}x"
        print(
            f"{r['system']:<16} {r['boards']:>6} {r['commits_per_s']:>10.0f} {x:>10} {fl:>15}"
            f" {r['cpu_ms_per_commit']:>14.3f} {r['wall_ms_per_commit']:>15.3f}"
        )
    print("goal: 16 boards >= 8x the commits/s of one board on the same store")
    for note in notes:
        print(note)


# -- report -------------------------------------------------------------------------------------
def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each slateboard row, LangGraph's cost divided by ours at the same N."""
    out = []
    for row in rows:
        if row["system"].startswith("langgraph"):
            continue
        peer = next((r for r in rows if r["system"].startswith("langgraph") and r["steps"] == row["steps"]), None)
        if peer is None:
            continue
        out.append(
            {
                "system": row["system"],
                "steps": row["steps"],
                "commit_p50_x": peer["commit_p50_ms"] / row["commit_p50_ms"],
                "commit_p99_x": peer["commit_p99_ms"] / row["commit_p99_ms"],
                "step_x": peer["step_mean_ms"] / row["step_mean_ms"],
                "bytes_x": peer["bytes_per_step"] / max(row["bytes_per_step"], 1e-9),
            }
        )
    return out


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}ms"


def print_table(rows: list[dict[str, Any]], rats: list[dict[str, Any]], notes: list[str]) -> None:
    head = (
        f"{'system':<30} {'N':>6} {'commit p50':>11} {'commit p99':>11} {'step mean':>10} {'CPU/step':>10}"
        f" {'claim p50':>10} {'claim@end':>10} {'bytes/step':>11} {'record B':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        rec = "" if r["record_bytes_per_step"] is None else f"{r['record_bytes_per_step']:.0f}"
        print(
            f"{r['system']:<30} {r['steps']:>6} {r['commit_p50_ms']:>9.3f}ms {r['commit_p99_ms']:>9.3f}ms"
            f" {r['step_mean_ms']:>8.3f}ms {_ms(r['cpu_per_step_ms']):>10} {_ms(r['claim_p50_ms']):>10}"
            f" {_ms(r['claim_last100_ms']):>10} {r['bytes_per_step']:>11,.0f} {rec:>9}"
        )
    if rats:
        print()
        head = f"{'langgraph / slateboard':<30} {'N':>6} {'commit p50':>11} {'commit p99':>11} {'step mean':>10} {'bytes/step':>11}"
        print(head)
        print("-" * len(head))
        for q in rats:
            print(
                f"{q['system']:<30} {q['steps']:>6} {q['commit_p50_x']:>10.1f}x {q['commit_p99_x']:>10.1f}x"
                f" {q['step_x']:>9.1f}x {q['bytes_x']:>10.1f}x"
            )
        print("goal at N = 1,000: >= 15x less time and >= 100x fewer bytes per step")
    for note in notes:
        print(note)


async def main_async(args: argparse.Namespace) -> int:
    steps_list = [int(s) for s in args.steps.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    dsn = os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG
    pg_reason = "disabled (--no-postgres)" if args.no_postgres else pg_answers(dsn)
    if pg_reason:
        notes.append(f"postgresql skipped: {pg_reason}")
    lg_reason = "disabled (--no-langgraph)" if args.no_langgraph else langgraph_missing()
    if lg_reason:
        notes.append(f"langgraph skipped: {lg_reason}")
    if args.boards:
        with tempfile.TemporaryDirectory(prefix="sb-store-bench-", dir=args.tmpdir) as tmpname:
            raw = await bench_boards(args, dsn, pg_reason, Path(tmpname))
        summary = summarise_boards(raw)
        if args.json:
            print(json.dumps({"boards": summary, "runs": raw, "notes": notes}, indent=2))
        else:
            print_boards(summary, [n for n in notes if not n.startswith("langgraph")])
        return 0
    with tempfile.TemporaryDirectory(prefix="sb-store-bench-", dir=args.tmpdir) as tmpname:
        tmp = Path(tmpname)
        for steps in steps_list:
            rows.append(await bench_sqlite(steps, "full", tmp))
            rows.append(await bench_sqlite(steps, "normal", tmp))
            if not pg_reason:
                rows.append(await bench_postgres(steps, dsn))
            if not lg_reason:
                rows.append(await asyncio.to_thread(bench_langgraph, steps, tmp))
    rats = ratios(rows)
    if args.json:
        print(json.dumps({"results": rows, "ratios": rats, "notes": notes}, indent=2))
    else:
        print_table(rows, rats, notes)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="200,1000", help="comma-separated step counts (default 200,1000)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--no-langgraph", action="store_true", help="skip the LangGraph peer")
    ap.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    ap.add_argument("--tmpdir", default=None, help="where the database files go (default: the system temp dir)")
    ap.add_argument("--boards", default="", help="group commit: comma-separated board counts, e.g. 1,4,16")
    ap.add_argument("--board-steps", type=int, default=300, help="records each board appends (default 300)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the board counts (default 3)")
    ap.add_argument("--fused", action="store_true", help="lease the next invocation inside each append")
    return asyncio.run(main_async(ap.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
