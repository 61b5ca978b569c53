"""Service benchmark: K boards at once in one process, each waiting on a latency-bound model.

The deployment users run is many boards at once, not one board at full speed. Each board is the
3-specialist round-robin board of ``benchmarks/peers.py`` (imported from there), ``--steps``
model calls long (12); K boards (``--k``, default 1,10,100) start together in one event loop and
the clock runs until the last one ends. The model answers after ``--latency-ms`` (100), served

  - ``sleep``: in process (``asyncio.sleep``), or
  - ``http``: by a fake OpenAI-compatible server on loopback (a separate process, so its CPU is
    not counted), reached through the real provider path (``openai:bench@http://127.0.0.1:PORT/v1``
    resolved per board as the Runner resolves a model string: ``models/openai_compat.py`` over
    ``models/_http.py``); LangGraph's nodes POST to the same server with one shared
    ``httpx.AsyncClient``.

Systems, interleaved (for each K and each model, every system in turn, each in a fresh child
process so that peak memory is its own):

  - ``slateboard sqlite``: the Runner, every board on one SQLite file (default writer:
    ``writer=loop``, database calls on the event loop's thread, one group commit per turn);
  - ``slateboard sqlite loop``: the same with ``?writer=loop`` spelled out;
  - ``slateboard sqlite thread``: the same with ``?writer=thread`` (the connection thread, group
    commit there; same durability);
  - ``slateboard postgres``: the Runner, every board in one PostgreSQL schema (--pg);
  - ``slateboard team``: ``Team.blackboard`` (round-robin, no coordinator) on one SQLite file;
  - ``langgraph sqlite``: LangGraph ``ainvoke`` with ``AsyncSqliteSaver`` on one file,
    ``durability="sync"`` (each step durable before the next, the Runner's guarantee), one thread
    per board;
  - ``langgraph postgres``: the same with ``AsyncPostgresSaver``, when it imports.

Per cell: wall time and its ratio to the ideal (steps x latency: every board's calls back to back),
steps per second, CPU per step (process CPU, every thread, over the run), peak RSS (VmHWM after a
reset, in a process that already ran a small warm-up) and RSS growth per board, split (from an RSS
trace sampled every 50 ms) into what a board holds once every board waits on its first call and
what it adds per later step, and p50/p99 of the
gap the framework adds per step: from a model's reply to the same board's next model call (the
step's view, kernel decision, durable commit and scheduling; an upper bound of reply-to-commit).
Ratios are to ``langgraph sqlite`` for the same K and model.

    python benchmarks/service.py [--k 1,10,100] [--models sleep,http] [--steps 12] [--latency-ms 100]
                                 [--jitter 0.5] [--gc-freeze] [--systems ...] [--json] [--profile DIR]

``--profile DIR`` writes a cProfile of each slateboard cell (``DIR/SYSTEM-MODEL-K.prof``).
PostgreSQL: --pg, else $SLATEBOARD_TEST_PG, else postgresql://postgres@127.0.0.1:5432/test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import cProfile
import gc
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # benchmarks/peers.py: the 3-specialist board, its entries, RSS helpers
import service_latency  # the model's latency, fixed or jittered (--jitter)

WORKERS = peers.WORKERS
TASK = peers.TASK
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
REFERENCE = "langgraph sqlite"
GC_FREEZE_ENV = "SB_BENCH_GC_FREEZE"
SYSTEMS = (
    "slateboard sqlite",
    "slateboard sqlite loop",
    "slateboard sqlite thread",
    "slateboard postgres",
    "slateboard team",
    "langgraph sqlite",
    "langgraph postgres",
)
MODELS = ("sleep", "http")
TEXT = peers.store_bench.entry_texts(1)[0]
_WORKER = re.compile(rb"You are worker '([^']+)'")


# -- the per-board gap between a reply and the next call -----------------------------------------
class Gaps:
    """One board's timing: when its last reply came, and each reply-to-next-call gap (seconds)."""

    __slots__ = ("gaps", "last")

    def __init__(self) -> None:
        self.last: float | None = None
        self.gaps: list[float] = []

    def call(self) -> None:
        if self.last is not None:
            self.gaps.append(time.perf_counter() - self.last)

    def reply(self) -> None:
        self.last = time.perf_counter()


BOARD: contextvars.ContextVar[Gaps] = contextvars.ContextVar("board")
CALLS = [0]  # model calls made in this process (the RSS trace reads it)


async def timed(call: Callable[[], Awaitable[Any]]) -> Any:
    """Run one model call under the current board's timing (tasks inherit ``BOARD``)."""
    gaps = BOARD.get()
    gaps.call()
    CALLS[0] += 1
    out = await call()
    gaps.reply()
    return out


class TimedModel:
    """A slateboard ``Model`` that times the calls of another (name and extras forwarded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    async def generate(self, messages: Any, **kw: Any) -> Any:
        return await timed(lambda: self.inner.generate(messages, **kw))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


class SleepModel:
    """The in-process model: answers after ``latency_s``: the patch appending the asking worker's
    entry (Runner) or the plain contribution (Team), with usage as a provider reports it."""

    name = "bench"

    def __init__(self, latency_s: float, patch: bool) -> None:
        self.latency_s = latency_s
        self.patch = patch

    async def generate(self, messages: Any, **_: Any) -> Any:
        from slateboard.models import Generation, GenerationUsage

        await asyncio.sleep(service_latency.draw(self.latency_s))
        text = reply_text(messages[0].content.encode()[:300]) if self.patch else TEXT
        chars = sum(len(m.content) for m in messages)
        return Generation(text, GenerationUsage(chars // 4, len(text) // 4), "stop", self.name, self.latency_s)


def reply_text(prompt: bytes) -> str:
    """The model's answer: a patch for the Runner's workers (named in their system prompt), the
    plain contribution otherwise."""
    found = _WORKER.search(prompt)
    if found is None:
        return TEXT
    entry = {"author": found.group(1).decode(), "content": TEXT}
    return json.dumps({"patch": [{"op": "add", "path": "/entries/-", "value": entry}]})


# -- the fake OpenAI-compatible server ------------------------------------------------------------
async def serve(port: int, latency_s: float) -> None:
    """An HTTP/1.1 keep-alive server answering every POST like ``/chat/completions`` after
    ``latency_s``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                await asyncio.sleep(service_latency.draw(latency_s))
                text = reply_text(body[:2000])
                out = json.dumps(
                    {
                        "id": "bench",
                        "object": "chat.completion",
                        "model": "bench",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": len(text) // 4},
                    }
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(out), out)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096, limit=2**22)
    async with server:
        await server.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(latency_s: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency-ms", str(latency_s * 1000)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/v1"


# -- the systems ----------------------------------------------------------------------------------
def slateboard_model(kind: str, url: str, latency_s: float, patch: bool) -> Any:
    """One board's model, as the Runner would resolve it: a fresh provider per board."""
    if kind == "sleep":
        return TimedModel(SleepModel(latency_s, patch))
    from slateboard.models import resolve_model

    return TimedModel(resolve_model(f"openai:bench@{url}"))


async def run_boards(k: int, one: Callable[[int], Awaitable[int]]) -> list[int]:
    async def board(i: int) -> int:
        BOARD.set(Gaps())
        return await one(i)

    return list(await asyncio.gather(*(board(i) for i in range(k))))


async def slateboard_runner(k: int, steps: int, store_url: str, kind: str, url: str, latency_s: float) -> Any:
    from slateboard.runtime import Runner, create_board
    from slateboard.stores import open_store

    store = await open_store(store_url)
    blueprint = peers.runner_blueprint(steps)
    boards = [await create_board(store, blueprint) for _ in range(k)]

    async def one(i: int) -> int:
        result = await Runner(store, boards[i], model=slateboard_model(kind, url, latency_s, True)).run()
        return len(result.state["entries"])

    async def run() -> list[int]:
        try:
            return await run_boards(k, one)
        finally:
            await store.close()

    return run


async def slateboard_team(k: int, steps: int, store_url: str, kind: str, url: str, latency_s: float) -> Any:
    from slateboard.stores import open_store
    from slateboard.team import Agent, Team

    store = await open_store(store_url)

    async def one(i: int) -> int:
        model = slateboard_model(kind, url, latency_s, False)
        agents = {w: Agent(f"You are {w}.") for w in WORKERS}
        team = Team.blackboard(agents=agents, model=model, max_rounds=steps, store=store)
        result = await team.run(TASK)
        return sum(1 for e in result.public if e.get("kind") == "contribution")

    async def run() -> list[int]:
        try:
            return await run_boards(k, one)
        finally:
            await store.close()

    return run


async def langgraph(k: int, steps: int, saver_kind: str, target: str, kind: str, url: str, latency_s: float) -> Any:
    import operator
    from typing import Annotated, TypedDict

    import httpx
    from langgraph.graph import END, START, StateGraph

    State = TypedDict("State", {"entries": Annotated[list[dict[str, str]], operator.add], "step": int})  # noqa: UP013
    client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None))

    async def model(prompt: str) -> str:
        if kind == "sleep":
            await asyncio.sleep(service_latency.draw(latency_s))
            return TEXT
        body = {"model": "bench", "messages": [{"role": "user", "content": prompt}]}
        reply = await client.post(url + "/chat/completions", json=body)
        return str(reply.json()["choices"][0]["message"]["content"])

    def node(name: str) -> Any:
        async def run(state: Any) -> dict[str, Any]:
            board = "\n".join(f"[contribution] {e['author']}: {e['content']}" for e in state["entries"])
            prompt = f"You are {name}.\n\nBoard:\n{board}\n\nAdd one contribution."
            text = await timed(lambda: model(prompt))
            return {"entries": [{"author": name, "content": text}], "step": state["step"] + 1}

        return run

    graph = StateGraph(State)
    for w in WORKERS:
        graph.add_node(w, node(w))
    graph.add_edge(START, WORKERS[0])
    for i, w in enumerate(WORKERS):
        nxt = WORKERS[(i + 1) % 3]
        graph.add_conditional_edges(w, lambda s, nxt=nxt: END if s["step"] >= steps else nxt, [nxt, END])

    async def run() -> list[int]:
        if saver_kind == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            manager: Any = AsyncSqliteSaver.from_conn_string(target)
        else:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

            manager = AsyncPostgresSaver.from_conn_string(target)
        async with manager as saver:
            await saver.setup()
            app = graph.compile(checkpointer=saver)

            async def one(i: int) -> int:
                config = {"configurable": {"thread_id": f"b{i}-{uuid.uuid4().hex[:6]}"}, "recursion_limit": steps + 10}
                out = await app.ainvoke({"entries": [], "step": 0}, config, durability="sync")
                return len(out["entries"])

            try:
                return await run_boards(k, one)
            finally:
                await client.aclose()

    return run


def _pg_url(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


async def prepare(system: str, k: int, steps: int, kind: str, url: str, latency_s: float, tmp: Path, pg: str) -> Any:
    db = tmp / f"{system.replace(' ', '-')}-{kind}-{k}-{uuid.uuid4().hex[:6]}.db"
    schema = f"svc_{uuid.uuid4().hex[:10]}"
    if system == "slateboard sqlite":
        return await slateboard_runner(k, steps, f"sqlite:///{db}", kind, url, latency_s)
    if system == "slateboard sqlite loop":
        return await slateboard_runner(k, steps, f"sqlite:///{db}?writer=loop", kind, url, latency_s)
    if system == "slateboard sqlite thread":
        return await slateboard_runner(k, steps, f"sqlite:///{db}?writer=thread", kind, url, latency_s)
    if system == "slateboard postgres":
        return await slateboard_runner(k, steps, _pg_url(pg, schema), kind, url, latency_s)
    if system == "slateboard team":
        return await slateboard_team(k, steps, f"sqlite:///{db}", kind, url, latency_s)
    if system == "langgraph sqlite":
        return await langgraph(k, steps, "sqlite", str(db), kind, url, latency_s)
    if system == "langgraph postgres":
        return await langgraph(k, steps, "postgres", pg, kind, url, latency_s)
    raise SystemExit(f"unknown system {system!r}")


def missing(system: str) -> str | None:
    """None when ``system`` can run here, else why not."""
    if system.startswith("langgraph"):
        try:
            import langgraph.checkpoint.sqlite.aio
            import langgraph.graph
        except ImportError as exc:
            return f"{exc} (install slateboard[peers])"
        if system == "langgraph postgres":
            try:
                import langgraph.checkpoint.postgres.aio  # noqa: F401
            except ImportError as exc:
                return f"{exc} (langgraph-checkpoint-postgres is not installed)"
    return None


# -- RSS over a run -------------------------------------------------------------------------------
class RssTrace:
    """Samples the process's RSS and the model calls made so far every ``period`` seconds, in
    a thread, while a cell runs: where the memory per board goes, on arrival (every board
    waiting on its first call) or as the boards run (growth per board-step)."""

    def __init__(self, period: float = 0.05) -> None:
        self.period = period
        self.samples: list[tuple[int, int]] = []  # (RSS bytes, model calls so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.samples.append((peers._status("VmRSS") or 0, CALLS[0]))

    def __enter__(self) -> RssTrace:
        CALLS[0] = 0
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def split(self, k: int, steps: int, rss0: int, peak: int) -> tuple[float | None, float | None]:
        """(KB per board once every board made its first call, KB per board-step after that)."""
        start = next((rss for rss, calls in self.samples if calls >= k), None)
        if start is None:
            return None, None
        per_board = max(0, start - rss0) / 1024 / k
        growth = max(0, peak - start) / 1024 / (k * max(1, steps - 1))
        return per_board, growth


# -- one cell in a child process ------------------------------------------------------------------
def child(system: str, k: int, steps: int, kind: str, url: str, latency_s: float, tmp: Path, pg: str, prof: str) -> Any:
    async def cell(kk: int, st: int, profile: bool = False) -> dict[str, Any]:
        run = await prepare(system, kk, st, kind, url, latency_s, tmp, pg)
        profiler = cProfile.Profile() if profile else None
        peers._reset_peak()
        rss0 = peers._status("VmRSS") or 0
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        with RssTrace() as trace:
            done = await run()
        if profiler:
            profiler.disable()
            profiler.dump_stats(prof)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        peak = peers._status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        start, growth = trace.split(kk, st, rss0, peak)
        return {
            "steps": sum(done), "done": done, "wall": wall, "cpu": cpu, "peak": peak, "rss0": rss0,
            "start": start, "growth": growth,
        }  # fmt: skip

    asyncio.run(cell(2, 3))  # warm-up: imports, lazy compiles, the server's first connections
    if os.environ.get(GC_FREEZE_ENV):
        # --gc-freeze, every system alike: what a long-running service does after its start-up
        # (the modules' objects leave the collector's generations, so a full collection scans
        # what the boards hold, not the ~90,000 objects of the imports)
        gc.collect()
        gc.freeze()
    gaps: list[float] = []
    holder: list[Gaps] = []
    original = Gaps.__init__

    def keep(self: Gaps) -> None:
        original(self)
        holder.append(self)

    Gaps.__init__ = keep  # type: ignore[method-assign]
    out = asyncio.run(cell(k, steps, bool(prof)))
    for g in holder:
        gaps.extend(g.gaps)
    if out["steps"] != k * steps:
        raise RuntimeError(f"{system}: {out['steps']} steps instead of {k * steps}")
    ideal = steps * latency_s
    gaps.sort()

    def pct(q: float) -> float:
        return gaps[min(len(gaps) - 1, int(q * len(gaps)))] * 1000 if gaps else 0.0

    return {
        "system": system,
        "model": kind,
        "k": k,
        "steps": out["steps"],
        "wall_s": out["wall"],
        "wall_over_ideal": out["wall"] / ideal,
        "steps_per_s": out["steps"] / out["wall"],
        "cpu_ms_per_step": out["cpu"] / out["steps"] * 1000,
        "peak_rss_mb": out["peak"] / 2**20,
        "rss_per_board_mb": max(0, out["peak"] - out["rss0"]) / 2**20 / k,
        "rss_start_kb_per_board": out["start"],  # every board waiting on its first call
        "rss_kb_per_board_step": out["growth"],  # peak over that, per board and later step
        "gap_p50_ms": pct(0.5),
        "gap_p99_ms": pct(0.99),
        "gap_mean_ms": statistics.fmean(gaps) * 1000 if gaps else 0.0,
        "gc_frozen": gc.get_freeze_count(),  # objects --gc-freeze moved out of the collector's reach
    }


def run_child(args: argparse.Namespace, system: str, k: int, kind: str, url: str, tmp: Path) -> dict[str, Any] | str:
    prof = ""
    if args.profile and system.startswith("slateboard"):
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        prof = str(Path(args.profile) / f"{system.replace(' ', '-')}-{kind}-{k}.prof")
    cmd = [
        sys.executable,
        __file__,
        "--child",
        system,
        "--k",
        str(k),
        "--steps",
        str(args.steps),
        "--models",
        kind,
        "--url",
        url,
        "--latency-ms",
        str(args.latency_ms),
        "--tmpdir",
        str(tmp),
        "--pg",
        args.pg,
        "--prof",
        prof,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=args.cell_timeout)
    except subprocess.TimeoutExpired:
        return f"{system} ({kind}) at K={k}: over --cell-timeout={args.cell_timeout}s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{system} ({kind}) at K={k} failed: {tail}"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- report ---------------------------------------------------------------------------------------
def with_ratios(rows: list[dict[str, Any]]) -> None:
    """Each row's wall, CPU per step, peak RSS and RSS per board over ``langgraph sqlite``'s at the
    same K and model."""
    ref = {(r["k"], r["model"]): r for r in rows if r["system"] == REFERENCE}
    for r in rows:
        base = ref.get((r["k"], r["model"]))
        pairs = (
            ("wall_s", "wall_x"),
            ("cpu_ms_per_step", "cpu_x"),
            ("peak_rss_mb", "peak_x"),
            ("rss_per_board_mb", "rss_x"),
        )
        for key, name in pairs:
            r[name] = r[key] / base[key] if base and base[key] else None


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _kb(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def print_table(rows: list[dict[str, Any]], notes: list[str]) -> None:
    head = (
        f"{'system':<20} {'model':<5} {'K':>5} {'wall s':>7} {'/ideal':>6} {'steps/s':>8} {'CPU ms':>7}"
        f" {'peak RSS':>8} {'MB/board':>8} {'gap p50':>8} {'gap p99':>8} {'wall/LG':>8} {'CPU/LG':>7} {'peak/LG':>7}"
        f" {'RSS/LG':>7} {'start KB':>8} {'KB/step':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['system']:<20} {r['model']:<5} {r['k']:>5} {r['wall_s']:>7.2f} {r['wall_over_ideal']:>6.2f}"
            f" {r['steps_per_s']:>8.0f} {r['cpu_ms_per_step']:>7.2f} {r['peak_rss_mb']:>6.0f}MB"
            f" {r['rss_per_board_mb']:>8.3f} {r['gap_p50_ms']:>6.2f}ms {r['gap_p99_ms']:>6.2f}ms"
            f" {_x(r['wall_x']):>8} {_x(r['cpu_x']):>7} {_x(r['peak_x']):>7} {_x(r['rss_x']):>7}"
            f" {_kb(r.get('rss_start_kb_per_board')):>8} {_kb(r.get('rss_kb_per_board_step')):>7}"
        )
    for note in notes:
        print(note)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--k", default="1,10,100", help="comma-separated board counts (default 1,10,100; up to 1000)")
    ap.add_argument("--models", default="sleep,http", help="comma-separated: sleep, http (default both)")
    ap.add_argument("--steps", type=int, default=12, help="model calls per board (default 12)")
    ap.add_argument("--latency-ms", type=float, default=100.0, help="the model's latency (default 100 ms)")
    ap.add_argument("--jitter", type=float, default=0.0, help="spread the latency: uniform +-J of it (0 to 1)")
    ap.add_argument(
        "--gc-freeze", action="store_true", help="every system: gc.collect() and gc.freeze() after the warm-up"
    )
    ap.add_argument("--systems", default=None, help=f"comma-separated, from: {', '.join(SYSTEMS)} (default all)")
    ap.add_argument("--pg", default=os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG, help="PostgreSQL DSN")
    ap.add_argument("--cell-timeout", type=float, default=300.0, help="seconds one cell may take (default 300)")
    ap.add_argument("--profile", default=None, help="write a cProfile of each slateboard cell into this directory")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--tmpdir", default=None, help="where database files go (default: the system temp dir)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--url", default="", help=argparse.SUPPRESS)
    ap.add_argument("--prof", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    latency_s = args.latency_ms / 1000
    if args.gc_freeze:  # the children read it
        os.environ[GC_FREEZE_ENV] = "1"
    if args.jitter:  # children and the fake server read it (benchmarks/service_latency.py)
        os.environ[service_latency.JITTER_ENV] = str(min(max(args.jitter, 0.0), 1.0))
    if args.serve is not None:
        asyncio.run(serve(args.serve, latency_s))
        return 0
    try:
        ks = [int(s) for s in args.k.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--k must be comma-separated integers, got {args.k!r}")
    if not ks or min(ks) < 1 or args.steps < 1:
        ap.error("--k and --steps need counts of at least 1")
    kinds = [m.strip() for m in args.models.split(",") if m.strip()]
    if not kinds or any(m not in MODELS for m in kinds):
        ap.error(f"--models: comma-separated from {', '.join(MODELS)}, got {args.models!r}")
    if args.child:
        tmp = Path(args.tmpdir or tempfile.gettempdir())
        print(json.dumps(child(args.child, ks[0], args.steps, kinds[0], args.url, latency_s, tmp, args.pg, args.prof)))
        return 0
    chosen = list(SYSTEMS) if not args.systems else [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown system(s): {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    notes = [f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}"]
    runnable = []
    for system in chosen:
        why = missing(system)
        if why:
            notes.append(f"{system} skipped: {why}")
        else:
            runnable.append(system)
    rows: list[dict[str, Any]] = []
    server, url = start_server(latency_s) if "http" in kinds else (None, "")
    try:
        with tempfile.TemporaryDirectory(prefix="sb-service-bench-", dir=args.tmpdir) as tmpname:
            for k in ks:
                for kind in kinds:
                    for system in runnable:
                        if not args.json:
                            print(f"running {system} ({kind}) at K={k} ...", file=sys.stderr, flush=True)
                        got = run_child(args, system, k, kind, url, Path(tmpname))
                        if isinstance(got, str):
                            notes.append(got)
                        else:
                            rows.append(got)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    with_ratios(rows)
    la = os.getloadavg()
    notes.append(f"load average after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}; {os.cpu_count()} CPUs")
    notes.append(peers.native_note())
    notes.append(
        f"{args.steps} steps per board, model latency {args.latency_ms:g} ms; ideal = steps x latency;"
        " gap = a model's reply to the same board's next call; ratios to langgraph sqlite (same K, model);"
        " start KB = RSS per board once every board waits on its first call, KB/step = the peak over that"
        " per board and later step (sampled every 50 ms)"
    )
    if args.gc_freeze:
        notes.append("--gc-freeze: every system's process ran gc.collect() and gc.freeze() after its warm-up")
    if args.json:
        print(json.dumps({"results": rows, "notes": notes}, indent=2))
    else:
        print_table(rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
