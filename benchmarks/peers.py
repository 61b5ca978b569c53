"""Peers benchmark: overhead and context size of one workload on slateboard and its peers.

The workload: 3 specialists (alpha, beta, gamma) contribute in round-robin order, each
contribution a fixed 200-character text from a model with zero latency, for N steps (default
200 and 1,000). Systems, each run in a fresh child process:

  - slateboard via the Runner (memory and SQLite stores): a 3-worker blueprint whose rules wake
    the next worker on each committed entry; each worker is an LLM worker whose model returns
    the patch appending its entry, and sees a budgeted view of the board (4,000 characters);
    on SQLite with the default writer (``writer=loop``: database calls on the event loop's
    thread, group commit per turn of the loop) and with ``?writer=thread`` (the connection
    thread: a thread hand-off per call, same durability);
  - slateboard via ``Team.blackboard`` (memory store; round-robin, no coordinator; the seed's
    default view budget of 100,000 characters), for N <= --team-max-n (default 1000);
  - loomflow's ``Team.blackboard`` (the plain blackboard of seed 001; round-robin, in memory);
  - LangGraph without a checkpointer and with ``SqliteSaver`` at its default durability
    ("async": step i+1 may run before step i is durable) and at ``durability="sync"`` (each
    step durable before the next, as the Runner's): 3 nodes appending entries to an
    ``Annotated[list, operator.add]`` channel, each node prompting the model with the board
    rendered from the state;
  - Flock (flock-core), when importable (it is not installable here: see the printed reason).

Measured per system and N: ms per step (wall time of the run / N), CPU ms per step (process
CPU time over the run, every thread, / N), bytes persisted per step
(database growth after a WAL checkpoint / N; 0 for in-memory runs), peak memory (the peak RSS of
the run, VmHWM after a reset, in a process that already did a 3-step warm-up run, and its growth
over the RSS before the run), and the size in
characters of the prompt the last specialist received. Ratios are to slateboard (Runner, SQLite)
at the same N; a second table gives the ratios issue 14 sets goals on (wall and CPU), and each
system's step cost at the largest N over the smallest. Reference figures (reference machine): loomflow 107 ms per step and a
3.0 M-character prompt at N = 1,000; LangGraph + SqliteSaver 4.5 ms and 125 KB per step with a
219 K-character board.

    python benchmarks/peers.py [--n 200,1000] [--systems ...] [--team-max-n 1000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store as store_bench  # benchmarks/store.py: entry texts, SQLite sizes

WORKERS = store_bench.WORKERS
ENTRY_CHARS = store_bench.ENTRY_CHARS
TASK = "Discuss the task in turns."
REFERENCE = "slateboard runner sqlite"

SYSTEMS = (
    "slateboard runner memory",
    "slateboard runner sqlite",
    "slateboard runner sqlite loop",
    "slateboard runner sqlite thread",
    "slateboard team memory",
    "loomflow",
    "langgraph",
    "langgraph sqlitesaver",
    "langgraph sqlitesaver sync",
    "flock",
)

FLOCK_REASON = (
    "flock-core is not installable here: pip reports ResolutionImpossible for flock-core 0.5.7 "
    "(opentelemetry-exporter-jaeger-proto-grpc needs protobuf<5, opentelemetry-exporter-otlp-proto-grpc "
    "needs protobuf>=5) and backtracking over all 101 releases finds no installable set; its footprint "
    "(dspy, litellm, duckdb, fastapi, opentelemetry) is also far beyond a benchmark dependency"
)


def missing(system: str) -> str | None:
    """None when ``system`` can run here, else why not."""
    if system.startswith("langgraph"):
        return store_bench.langgraph_missing()
    if system == "loomflow" and importlib.util.find_spec("loomflow") is None:
        return "loomflow is not installed (pip install 'slateboard[peers]')"
    if system == "flock":
        return FLOCK_REASON if importlib.util.find_spec("flock") is None else "no Flock adapter is written"
    return None


# -- slateboard -----------------------------------------------------------------------------------
def runner_blueprint(steps: int) -> dict[str, Any]:
    """The 3-specialist board: entries appended round-robin, ``steps`` proposals in all."""
    nxt = {w: WORKERS[(i + 1) % 3] for i, w in enumerate(WORKERS)}
    return {
        "name": "peers-bench",
        "schema": {
            "type": "object",
            "required": ["task", "entries"],
            "additionalProperties": False,
            "properties": {
                "task": {"type": "string"},
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["author", "content"],
                        "additionalProperties": False,
                        "properties": {
                            "author": {"type": "string"},
                            "content": {"type": "string", "minLength": 1, "maxLength": 400},
                        },
                    },
                },
            },
        },
        "initial_state": {"task": TASK, "entries": []},
        "workers": {
            w: {
                "instruction": f"You are {w}. Add one contribution.",
                "reads": ["/task", "/entries"],
                "writes": ["/entries/-"],
                "ops": ["add"],
            }
            for w in WORKERS
        },
        "rules": [
            {"on": {"op": "start"}, "invoke": WORKERS[0]},
            *(
                {"on": {"op": "add", "path": "/entries/-"}, "when": f"value.author == '{w}'", "invoke": nxt[w]}
                for w in WORKERS
            ),
        ],
        "invariants": [{"at": "/entries/*", "rule": "self.author in ['alpha', 'beta', 'gamma']"}],
        "limits": {"max_steps": steps},
    }


_WORKER = re.compile(r"You are worker '([^']+)'")


class BenchModel:
    """The zero-latency model of the Runner runs: it answers at once and reports usage the way a
    provider does (characters / 4), as cheap as the LangGraph stub, which does no work either.
    (``ScriptedModel`` yields to the event loop once per call and counts words for its usage
    estimate: model-side work, 30-60 us per call here, that the LangGraph stub does not do.)"""

    name = "bench"

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    async def generate(self, messages: Any, **_: Any) -> Any:
        from slateboard.models import Generation, GenerationUsage

        text = self.reply(messages)
        chars = sum(len(m.content) for m in messages)
        return Generation(text, GenerationUsage(chars // 4, len(text) // 4), "stop", self.name, 0.0)


async def run_slateboard_runner(steps: int, url: str, db: Path | None) -> dict[str, Any]:
    from slateboard.runtime import Runner, create_board
    from slateboard.stores import open_store

    texts = store_bench.entry_texts(steps)
    prompts: list[int] = []

    def reply(messages: Any) -> str:
        prompts.append(sum(len(m.content) for m in messages))
        found = _WORKER.search(messages[0].content, 0, 200)  # the role line opens the system prompt
        author = found.group(1) if found else "?"
        entry = {"author": author, "content": texts[(len(prompts) - 1) % len(texts)]}
        return json.dumps({"patch": [{"op": "add", "path": "/entries/-", "value": entry}]})

    store = await open_store(url)
    board = await create_board(store, runner_blueprint(steps))
    if db is not None:
        await store.close()
        base = store_bench._sqlite_bytes(db)
        store = await open_store(url)
    t0 = time.perf_counter()
    result = await Runner(store, board, model=BenchModel(reply)).run()
    run_s = time.perf_counter() - t0
    await store.close()
    entries = len(result.state["entries"]) if isinstance(result.state, dict) else 0
    size = store_bench._sqlite_bytes(db) - base if db is not None else 0
    return {"steps": entries, "run_s": run_s, "bytes": size, "prompt_chars": prompts[-1], "end": result.end_reason}


async def run_slateboard_team(steps: int) -> dict[str, Any]:
    from slateboard.models.protocol import Generation, GenerationUsage
    from slateboard.team import Agent, Team

    texts = store_bench.entry_texts(steps)
    prompts: list[int] = []

    class Stub:
        """``ScriptedModel([reply], cycle=True)`` without its call log: a zero-latency model
        returning the next 200-character contribution, with the same checkpoint and the same
        estimated usage. ScriptedModel keeps every call's messages for test assertions, here a
        ~66,000-character prompt per round (about 74 KB a round, 370 MB over 5,000 rounds),
        which is the harness's memory, not the team's (loomflow's Stub keeps nothing either)."""

        name = "scripted"

        async def generate(self, messages: Any, **_: Any) -> Generation:
            await asyncio.sleep(0)
            prompts.append(sum(len(m.content) for m in messages))
            text = texts[(len(prompts) - 1) % len(texts)]
            usage = GenerationUsage.estimate(messages, text)
            return Generation(text=text, usage=usage, finish_reason="stop", model="scripted", latency_s=0.0)

    model = Stub()
    team = Team.blackboard(agents={w: Agent(f"You are {w}.") for w in WORKERS}, model=model, max_rounds=steps)
    t0 = time.perf_counter()
    result = await team.run(TASK)
    run_s = time.perf_counter() - t0
    entries = sum(1 for e in result.public if e.get("kind") == "contribution")
    return {"steps": entries, "run_s": run_s, "bytes": 0, "prompt_chars": prompts[-1], "end": result.end_reason}


# -- loomflow -------------------------------------------------------------------------------------
async def run_loomflow(steps: int) -> dict[str, Any]:
    from loomflow import Agent
    from loomflow.core.types import ModelChunk
    from loomflow.core.types import Usage as LoomUsage
    from loomflow.team import Team

    texts = store_bench.entry_texts(steps)
    prompts: list[int] = []

    class Stub:
        """A loomflow Model with zero latency returning the next 200-character contribution."""

        name = "stub"

        async def complete(self, messages: list[Any], **_: Any) -> tuple[str, list[Any], Any, str]:
            prompts.append(sum(len(str(m.content or "")) for m in messages))
            return texts[(len(prompts) - 1) % len(texts)], [], LoomUsage(), "stop"

        async def stream(self, messages: list[Any], **kw: Any) -> Any:
            text, _, usage, reason = await self.complete(messages, **kw)
            yield ModelChunk(kind="text", text=text)
            yield ModelChunk(kind="finish", finish_reason=reason, usage=usage)

    model = Stub()
    agents = {w: Agent(instructions=f"You are {w}.", model=model) for w in WORKERS}
    team = Team.blackboard(agents, model=model, max_rounds=steps)
    t0 = time.perf_counter()
    await team.run(TASK)
    run_s = time.perf_counter() - t0
    return {"steps": len(prompts), "run_s": run_s, "bytes": 0, "prompt_chars": prompts[-1], "end": "max_rounds"}


# -- LangGraph ------------------------------------------------------------------------------------
def run_langgraph(steps: int, db: Path | None, durability: str | None = None) -> dict[str, Any]:
    import operator
    import sqlite3
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    State = TypedDict("State", {"entries": Annotated[list[dict[str, str]], operator.add], "step": int})  # noqa: UP013
    texts = store_bench.entry_texts(steps)
    prompts: list[int] = []

    def model(prompt: str) -> str:
        prompts.append(len(prompt))
        return texts[(len(prompts) - 1) % len(texts)]

    def node(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            board = "\n".join(f"[contribution] {e['author']}: {e['content']}" for e in state["entries"])
            prompt = f"You are {name}.\n\nBoard:\n{board}\n\nAdd one contribution."
            return {"entries": [{"author": name, "content": model(prompt)}], "step": state["step"] + 1}

        return run

    graph = StateGraph(State)
    for w in WORKERS:
        graph.add_node(w, node(w))
    graph.add_edge(START, WORKERS[0])
    for i, w in enumerate(WORKERS):
        nxt = WORKERS[(i + 1) % 3]
        graph.add_conditional_edges(w, lambda s, nxt=nxt: END if s["step"] >= steps else nxt, [nxt, END])
    conn = None
    base = 0
    if db is not None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(str(db), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        conn.commit()
        base = store_bench._sqlite_bytes(db)
        app = graph.compile(checkpointer=saver)
    else:
        app = graph.compile()
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    t0 = time.perf_counter()
    # durability="sync": each step's checkpoint is written before the next step runs (the
    # Runner's guarantee); the default ("async") lets step i+1 run before step i is durable.
    kwargs: dict[str, Any] = {} if durability is None else {"durability": durability}
    out = app.invoke({"entries": [], "step": 0}, config, **kwargs)
    run_s = time.perf_counter() - t0
    size = 0
    if conn is not None and db is not None:
        conn.close()
        size = store_bench._sqlite_bytes(db) - base
    return {"steps": len(out["entries"]), "run_s": run_s, "bytes": size, "prompt_chars": prompts[-1], "end": "done"}


# -- one system in a child process ----------------------------------------------------------------
def _status(field: str) -> int | None:
    """A ``/proc/self/status`` memory field in bytes (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0); False if it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _run(system: str, steps: int, tmp: Path) -> dict[str, Any]:
    db = tmp / f"{system.replace(' ', '-')}-{steps}-{uuid.uuid4().hex[:6]}.db"
    if system == "slateboard runner memory":
        return asyncio.run(run_slateboard_runner(steps, "memory://", None))
    if system == "slateboard runner sqlite":
        return asyncio.run(run_slateboard_runner(steps, f"sqlite:///{db}", db))
    if system == "slateboard runner sqlite loop":
        return asyncio.run(run_slateboard_runner(steps, f"sqlite:///{db}?writer=loop", db))
    if system == "slateboard runner sqlite thread":
        return asyncio.run(run_slateboard_runner(steps, f"sqlite:///{db}?writer=thread", db))
    if system == "slateboard team memory":
        return asyncio.run(run_slateboard_team(steps))
    if system == "loomflow":
        return asyncio.run(run_loomflow(steps))
    if system == "langgraph":
        return run_langgraph(steps, None)
    if system == "langgraph sqlitesaver":
        return run_langgraph(steps, db)
    if system == "langgraph sqlitesaver sync":
        return run_langgraph(steps, db, "sync")
    raise SystemExit(f"unknown system {system!r}")


WARMUP_STEPS = 3


def child(system: str, steps: int, tmp: Path) -> dict[str, Any]:
    """Run ``system`` for ``steps`` steps in this process and return its measurements.

    A 3-step run first loads what the system imports and compiles lazily; then the peak RSS is
    reset to the current RSS (``/proc/self/clear_refs``), so the peak read after the run is the
    run's own and its growth over the RSS before it is the workload's. Where the reset is not
    possible, the lifetime peak (``ru_maxrss``) is reported and ``peak_scope`` says so."""
    _run(system, WARMUP_STEPS, tmp)
    store_bench.entry_texts(steps)
    scoped = _reset_peak()
    rss0 = _status("VmRSS")
    cpu0 = time.process_time()  # all threads of the process (the store's writer thread too)
    out = _run(system, steps, tmp)
    cpu_s = time.process_time() - cpu0
    peak = _status("VmHWM") if scoped else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if out["steps"] != steps:
        raise RuntimeError(f"{system}: {out['steps']} contributions instead of {steps}")
    return {
        "system": system,
        "n": steps,
        "steps": out["steps"],
        "ms_per_step": out["run_s"] / steps * 1000,
        "cpu_ms_per_step": cpu_s / steps * 1000,
        "bytes_per_step": out["bytes"] / steps,
        "peak_rss_mb": peak / 2**20,
        "rss_growth_mb": max(0, peak - (rss0 or peak)) / 2**20,
        "peak_scope": "run" if scoped and rss0 is not None else "process",
        "last_prompt_chars": out["prompt_chars"],
        "end": out["end"],
    }


def native_note() -> str:
    """Whether the slateboard runs used the compiled hot paths (children inherit this environment)."""
    from slateboard import _native

    return f"slateboard hot paths: {_native.native_mode()} (a compiled wheel, or the Python sources)"


def run_child(system: str, steps: int, tmp: Path) -> dict[str, Any]:
    """``child`` in a fresh Python process, so peak memory belongs to this system alone."""
    cmd = [sys.executable, __file__, "--child", system, "--n", str(steps), "--tmpdir", str(tmp)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{system} at N={steps} failed: {tail}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- report ---------------------------------------------------------------------------------------
def reference(rows: list[dict[str, Any]], n: int) -> dict[str, Any] | None:
    """The row the ratios divide by at ``n``: slateboard (Runner, SQLite), else the first
    slateboard row run at that N, else None."""
    at_n = [r for r in rows if r["n"] == n]
    return next((r for r in at_n if r["system"] == REFERENCE), None) or next(
        (r for r in at_n if r["system"].startswith("slateboard")), None
    )


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row divided by the reference slateboard row at the same N (None where a figure is 0)."""

    def div(a: float, b: float) -> float | None:
        return a / b if b else None

    out = []
    for row in rows:
        ref = reference(rows, row["n"])
        if ref is None:
            continue
        out.append(
            {
                "reference": ref["system"],
                "system": row["system"],
                "n": row["n"],
                "time_x": div(row["ms_per_step"], ref["ms_per_step"]),
                "bytes_x": div(row["bytes_per_step"], ref["bytes_per_step"]) if row["bytes_per_step"] else None,
                "rss_growth_x": div(row["rss_growth_mb"], ref["rss_growth_mb"]),
                "prompt_x": div(row["last_prompt_chars"], ref["last_prompt_chars"]),
            }
        )
    return out


GOALS = (
    # (name, system, reference system, same N or the other N)
    ("Runner SQLite / LangGraph+SqliteSaver sync", "slateboard runner sqlite", "langgraph sqlitesaver sync"),
    ("Runner SQLite / LangGraph+SqliteSaver default", "slateboard runner sqlite", "langgraph sqlitesaver"),
    (
        "Runner SQLite writer=loop / LangGraph+SqliteSaver sync",
        "slateboard runner sqlite loop",
        "langgraph sqlitesaver sync",
    ),
    (
        "Runner SQLite writer=thread / LangGraph+SqliteSaver sync",
        "slateboard runner sqlite thread",
        "langgraph sqlitesaver sync",
    ),
    ("Runner memory / LangGraph no checkpointer", "slateboard runner memory", "langgraph"),
    ("Team.blackboard / loomflow", "slateboard team memory", "loomflow"),
)


def goal_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ratios issue 14 sets goals on, CPU and wall, from the same run: slateboard against its
    peers at each N, and each system's step cost at its largest N against its smallest."""
    by = {(r["system"], r["n"]): r for r in rows}
    out: list[dict[str, Any]] = []
    for n in sorted({r["n"] for r in rows}):
        for name, system, ref in GOALS:
            a, b = by.get((system, n)), by.get((ref, n))
            if a is not None and b is not None and b["ms_per_step"] and b["cpu_ms_per_step"]:
                out.append(
                    {
                        "ratio": name,
                        "n": n,
                        "wall_x": a["ms_per_step"] / b["ms_per_step"],
                        "cpu_x": a["cpu_ms_per_step"] / b["cpu_ms_per_step"],
                    }
                )
    ns = sorted({r["n"] for r in rows})
    if len(ns) > 1:
        for system in dict.fromkeys(r["system"] for r in rows):
            lo, hi = by.get((system, ns[0])), by.get((system, ns[-1]))
            if lo is not None and hi is not None and lo["ms_per_step"] and lo["cpu_ms_per_step"]:
                out.append(
                    {
                        "ratio": f"{system}: N={ns[-1]} / N={ns[0]}",
                        "n": ns[-1],
                        "wall_x": hi["ms_per_step"] / lo["ms_per_step"],
                        "cpu_x": hi["cpu_ms_per_step"] / lo["cpu_ms_per_step"],
                    }
                )
    return out


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}x" if v < 100 else f"{v:,.0f}x"


def print_table(
    rows: list[dict[str, Any]], rats: list[dict[str, Any]], notes: list[str], goals: list[dict[str, Any]] | None = None
) -> None:
    head = (
        f"{'system':<26} {'N':>5} {'ms/step':>9} {'CPU ms':>8} {'bytes/step':>11} {'peak RSS':>9} {'RSS growth':>10}"
        f" {'last prompt':>12}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['system']:<26} {r['n']:>5} {r['ms_per_step']:>9.2f} {r['cpu_ms_per_step']:>8.2f}"
            f" {r['bytes_per_step']:>11,.0f}"
            f" {r['peak_rss_mb']:>7.0f}MB {r['rss_growth_mb']:>8.1f}MB {r['last_prompt_chars']:>12,}"
        )
    if rats:
        print()
        head = (
            f"{'row / ' + rats[0]['reference']:<34} {'N':>5} {'time':>9} {'bytes':>9} {'RSS growth':>10} {'prompt':>9}"
        )
        print(head)
        print("-" * len(head))
        for q in rats:
            print(
                f"{q['system']:<34} {q['n']:>5} {_x(q['time_x']):>9} {_x(q['bytes_x']):>9}"
                f" {_x(q['rss_growth_x']):>10} {_x(q['prompt_x']):>9}"
            )
    if goals:
        print()
        head = f"{'ratio (issue 14 goals)':<60} {'N':>5} {'wall':>7} {'CPU':>7}"
        print(head)
        print("-" * len(head))
        for g in goals:
            print(f"{g['ratio']:<60} {g['n']:>5} {g['wall_x']:>6.2f}x {g['cpu_x']:>6.2f}x")
    for note in notes:
        print(note)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", default="200,1000", help="comma-separated step counts (default 200,1000)")
    ap.add_argument("--systems", default=None, help=f"comma-separated, from: {', '.join(SYSTEMS)} (default all)")
    ap.add_argument(
        "--team-max-n",
        type=int,
        default=1000,
        help="largest N for slateboard's Team.blackboard and loomflow (1000; their step grows with N)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--tmpdir", default=None, help="where database files go (default: the system temp dir)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        steps_list = [int(s) for s in args.n.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--n must be comma-separated integers, got {args.n!r}")
    if not steps_list or min(steps_list) < 1:
        ap.error("--n needs step counts of at least 1")
    if args.child:
        print(json.dumps(child(args.child, steps_list[0], Path(args.tmpdir or tempfile.gettempdir()))))
        return 0
    chosen = list(SYSTEMS) if not args.systems else [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown system(s): {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    notes: list[str] = []
    runnable = []
    for system in chosen:
        why = missing(system)
        if why:
            notes.append(f"{system} skipped: {why}")
        else:
            runnable.append(system)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sb-peers-bench-", dir=args.tmpdir) as tmpname:
        for steps in steps_list:
            for system in runnable:
                if system in ("slateboard team memory", "loomflow") and steps > args.team_max_n:
                    notes.append(f"{system} at N={steps} skipped: above --team-max-n={args.team_max_n}")
                    continue
                if not args.json:
                    print(f"running {system} at N={steps} ...", file=sys.stderr, flush=True)
                rows.append(run_child(system, steps, Path(tmpname)))
    rats = ratios(rows)
    goals = goal_ratios(rows)
    notes.append(native_note())
    notes.append(
        "peak RSS: VmHWM of the run (reset before it) in a fresh process per system that first did a 3-step"
        " warm-up run; growth: over the RSS just before the run"
    )
    if args.json:
        print(json.dumps({"results": rows, "ratios": rats, "goals": goals, "notes": notes}, indent=2))
    else:
        print_table(rows, rats, notes, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
