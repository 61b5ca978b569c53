"""``slateboard run``: create a board from a blueprint or template and drive it to its end.

The live display is fed by the runner's events (never by polling the store); the summary after
the run is read back from the store, so it is the audit trail, not the display's own counts.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.pretty import Pretty
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from ..models.pricing import format_cost
from ..progress import follow
from ._common import (
    ApiKeyEnvOption,
    BlueprintArgument,
    ControlOption,
    InputsOption,
    JsonOption,
    MaxStepsOption,
    ModelOption,
    NameOption,
    ParallelOption,
    StoreOption,
    TaskOption,
    add_import_paths,
    cell,
    console,
    load_blueprint_or_template,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    store_hint,
)
from ._errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..blueprint.compile import CompiledBlueprint
    from ..kernel.record import Record
    from ..models.protocol import Model
    from ..runtime import RunEvent, RunResult
    from ..stores.base import BoardInfo

_RECENT = 6

StreamOption = Annotated[
    str | None,
    typer.Option(
        "--stream",
        metavar="MODE",
        help="Print as the run goes: 'tokens' (each model reply as it is generated, tagged by worker) or 'updates' (each committed patch). With --json: one JSON object per line, per event, then the result.",
    ),
]


class RunDisplay:
    """What the live display shows, updated from run events (thread-safe: rich refreshes it
    from its own thread)."""

    def __init__(self, board_id: str, name: str, max_steps: int, parallel: int | str) -> None:
        self.board_id = board_id
        self.name = name
        self.max_steps = max_steps
        self.parallel = parallel
        self.started = time.monotonic()
        self.finished: float | None = None
        self.steps = 0
        self.version = 0
        self.accepted = 0
        self.noops = 0
        self.rejected: Counter[str] = Counter()
        self.tokens = 0
        self.running: dict[str, str] = {}
        self.recent: deque[tuple[int, str, str, str, str]] = deque(maxlen=_RECENT)
        self.circuit: deque[str] = deque(maxlen=3)
        self.end_reason: str | None = None
        self._lock = threading.Lock()
        self._spinner = Spinner("dots")

    def feed(self, event: RunEvent) -> None:
        """Take one run event into account."""
        d = event.data
        with self._lock:
            if event.kind == "run.started":
                self.version = _int(d.get("version"))
            elif event.kind == "invocation.started":
                self.running[str(d.get("invocation"))] = str(d.get("worker"))
            elif event.kind == "proposal.decided":
                self.running.pop(str(d.get("invocation")), None)
                self.steps += 1
                outcome = str(d.get("outcome"))
                stage = str(d.get("stage") or "")
                if outcome == "accepted":
                    self.accepted += 1
                elif outcome == "rejected":
                    self.rejected[stage or "-"] += 1
                elif outcome == "noop":
                    self.noops += 1
                self.version = _int(d.get("version"))
                self.tokens = _int(d.get("tokens"))
                reason = str(d.get("reason") or "")
                self.recent.append((_int(d.get("seq")), str(d.get("worker")), outcome, stage, reason))
            elif event.kind == "circuit.action":
                who = f" {d.get('worker')}" if d.get("worker") else ""
                self.circuit.append(f"{d.get('action')}{who}: {d.get('reason') or ''}")
            elif event.kind == "run.ended":
                self.end_reason = str(d.get("reason"))
                self.version = _int(d.get("version"), self.version)
                self.finished = time.monotonic()
                self.running.clear()

    def __rich__(self) -> RenderableType:
        with self._lock:
            return self._render()

    def _render(self) -> RenderableType:
        elapsed = (self.finished or time.monotonic()) - self.started
        head = Table.grid(padding=(0, 2))
        for _ in range(5):
            head.add_column()
        rejected = sum(self.rejected.values())
        by_stage = ", ".join(f"{s} {n}" for s, n in sorted(self.rejected.items()))
        head.add_row(
            f"step [bold]{self.steps}[/]/{self.max_steps}",
            f"version [bold]{self.version}[/]",
            f"accepted [green]{self.accepted}[/]",
            f"rejected [red]{rejected}[/]" + (f" ({by_stage})" if by_stage else ""),
            f"tokens {self.tokens:,}  {elapsed:.1f}s",
        )
        parts: list[RenderableType] = [head]
        if self.end_reason is None:
            workers = ", ".join(sorted(self.running.values())) or "choosing the next invocation"
            status = Table.grid(padding=(0, 1))
            status.add_row(self._spinner, Text(f"running: {workers}"))
            parts.append(status)
        if self.recent:
            table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
            table.add_column("seq", justify="right", style="dim", no_wrap=True)
            table.add_column("worker", no_wrap=True)
            table.add_column("outcome", no_wrap=True)
            table.add_column("stage", no_wrap=True)
            table.add_column("reason")
            for seq, worker, outcome, stage, reason in self.recent:
                style = {"accepted": "green", "rejected": "red"}.get(outcome, "yellow")
                table.add_row(str(seq), worker, Text(outcome, style=style), stage or "-", cell(reason))
            parts.append(table)
        for line in self.circuit:
            parts.append(cell(f"circuit: {line}", style="yellow"))
        if self.end_reason is not None:
            from ..status import end_status

            ended = end_status(None, self.end_reason)
            style = {"failed": "red", "exhausted": "yellow", "paused": "yellow"}.get(ended, "bold")
            parts.append(cell(f"ended: {self.end_reason}", style=style))
        # expand=False: piped, the console is PIPED_WIDTH wide and a panel would fill all of it
        return Panel(
            Group(*parts),
            title=f"slateboard run · {self.name} · board {self.board_id}",
            title_align="left",
            expand=False,
        )


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _inputs(compiled: CompiledBlueprint, task: str | None, pairs: list[str], label: str) -> dict[str, Any] | None:
    """The top-level values to merge into the initial state: ``--task`` (at the blueprint's task
    pointer, ``/task`` unless the blueprint says otherwise) and every ``--input NAME=VALUE``
    (VALUE read as JSON when it parses)."""
    from ..kernel.jsonvalue import nesting_depth

    schema = compiled.spec.state_schema
    props = schema.get("properties") if isinstance(schema, dict) else None
    known = sorted(props) if isinstance(props, dict) else []
    listing = ", ".join(known) or "none"
    out: dict[str, Any] = {}
    if task is not None:
        task_key = compiled.spec.task.lstrip("/").replace("~1", "/").replace("~0", "~")
        if task_key not in known:
            raise CliError(
                f"--task given, but blueprint {label} has no {task_key!r} property in its state schema"
                f" (its properties: {listing}); set one with --input NAME=VALUE"
            )
        out[task_key] = task
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--input {pair!r}: expected NAME=VALUE", code=EXIT_USAGE)
        if key not in known:
            raise CliError(f"--input {key}: blueprint {label} has no property {key!r} (its properties: {listing})")
        # Checked before decoding (issue 29, R13): json recurses and fails past ~1000 levels.
        depth, limit = nesting_depth(raw), compiled.spec.limits.max_depth
        if depth > limit:
            raise CliError(
                f"--input {key}: the value nests {depth} levels deep, over the blueprint's limit of {limit}"
                " (limits.max_depth)",
                code=EXIT_USAGE,
            )
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out or None


def run_command(
    blueprint: BlueprintArgument,
    task: TaskOption = None,
    model: ModelOption = None,
    inputs: InputsOption = None,
    api_key_env: ApiKeyEnvOption = None,
    store: StoreOption = None,
    parallel: ParallelOption = "auto",
    control: ControlOption = "agenda",
    max_steps: MaxStepsOption = None,
    name: NameOption = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp",
            metavar="WORKER=SERVER",
            help="Give LLM worker WORKER the tools of an MCP server (a stdio command line or an http(s) URL); repeatable. Needs the mcp extra.",
        ),
    ] = None,
    as_json: JsonOption = False,
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            metavar="USD",
            help="Hard spend cap in dollars: each LLM call's worst case is reserved first; a call that does not fit is not made and the run ends budget:board.",
        ),
    ] = None,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            metavar="NAME",
            help="Also reserve every LLM call against this named ledger of the store (slateboard ledger set NAME USD; shared by boards and processes).",
        ),
    ] = None,
    stream: StreamOption = None,
) -> None:
    """Create a board from a blueprint file or template and run it to its end.

    Shows live progress, then the answer and an audit summary (--json: the run result as JSON).
    With --stream, prints the streamed tokens or committed updates instead of the live display
    (what is logged is the same).

    Function workers (module:callable) are imported from installed packages, the working directory or the blueprint's.

    Exit code 1 when the circuit policy halted the run (the board is marked failed).
    """
    _parallel(parallel)  # a bad --parallel fails before a board is created
    mode = _stream_mode(stream)
    cap = _max_cost(max_cost)
    compiled, path = load_blueprint_or_template(blueprint)
    add_import_paths(Path.cwd(), path.parent if path is not None else None)
    initial = _inputs(compiled, task, inputs or [], blueprint)
    _scope_key(model, api_key_env)
    resolved = _resolve(compiled, model)
    steps_limit = max_steps or compiled.spec.limits.max_steps
    servers = _mcp_servers(compiled, mcp or [])

    created: list[str] = []

    async def go() -> tuple[RunResult, list[Record], BoardInfo]:
        from ..runtime import create_board

        async with opened_store(store) as st:
            spend = {"max_cost": cap, "ledgers": await _ledgers(st, store, ledger)}
            # Where the blueprint's function workers are imported from, so `resume` finds them too.
            meta = {"blueprint_dir": str(path.parent.resolve())} if path is not None else None
            board_id = await create_board(st, compiled, inputs=initial, name=name, meta=meta)
            created.append(board_id)
            label = name or compiled.spec.name
            if not servers:
                return await _drive(
                    st,
                    board_id,
                    label,
                    resolved,
                    parallel,
                    max_steps,
                    steps_limit,
                    as_json,
                    control=control,
                    spend=spend,
                    stream=mode,
                )
            from contextlib import AsyncExitStack

            from ..mcp import mcp_tools

            async with AsyncExitStack() as stack:
                tools = {w: await stack.enter_async_context(mcp_tools(*specs)) for w, specs in servers.items()}
                return await _drive(
                    st,
                    board_id,
                    label,
                    resolved,
                    parallel,
                    max_steps,
                    steps_limit,
                    as_json,
                    tools=tools,
                    control=control,
                    spend=spend,
                    stream=mode,
                )

    _finish_run(go, created, compiled, store, as_json, lines=mode is not None)


_STREAM_MODES = ("tokens", "updates")
"""What ``slateboard run --stream`` can print as the run goes."""


def _stream_mode(value: str | None) -> str | None:
    """``--stream``'s value, checked before any board is created (exit 2 on a bad one)."""
    if value is None or value in _STREAM_MODES:
        return value
    raise CliError(f"--stream: expected one of {', '.join(_STREAM_MODES)}, got {value!r}", code=EXIT_USAGE)


class _StreamPrinter:
    """Prints ``slateboard run --stream`` events to stdout as they come. Text: a token chunk is
    written as it arrives, after a ``[worker]`` tag whenever another model call (or attempt)
    starts; an update is one line ``#seq v<version> worker: <patch>``. JSON: each event's
    ``RunEvent.to_json()`` on one line."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._call: tuple[Any, ...] | None = None

    def __call__(self, event: RunEvent) -> None:
        import sys

        out = sys.stdout
        if self.as_json:
            out.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
        elif event.kind == "model.tokens":
            data = event.data
            call = (data.get("worker"), data.get("invocation"), data.get("call"), data.get("attempt"))
            if call != self._call:
                attempt = _int(data.get("attempt"), 1)
                retry = f" (attempt {attempt})" if attempt > 1 else ""
                out.write(("\n" if self._call is not None else "") + f"[{data.get('worker')}]{retry} ")
                self._call = call
            out.write(str(data.get("text", "")))
        else:
            data = event.data
            patch = json.dumps(data.get("patch"), ensure_ascii=False)
            out.write(f"#{data.get('seq')} v{data.get('version')} {data.get('worker')}: {patch}\n")
        out.flush()

    def close(self) -> None:
        """End the last token line (text mode)."""
        if self._call is not None and not self.as_json:
            import sys

            sys.stdout.write("\n")
            sys.stdout.flush()
            self._call = None


async def _run_streaming(runner: Any, mode: str, as_json: bool) -> RunResult:
    """Run ``runner`` to its end, printing its ``mode`` stream (subscribed before the run, so
    nothing is missed) as it goes."""
    import asyncio

    events = runner.events([mode])
    printer = _StreamPrinter(as_json)

    async def consume() -> None:
        async for event in events:
            printer(event)

    consumer = asyncio.create_task(consume())
    try:
        result: RunResult = await runner.run()
    except BaseException:
        consumer.cancel()
        raise
    await consumer
    printer.close()
    return result


def _max_cost(value: str | None) -> float | None:
    """``--max-cost``: a finite number of dollars > 0 (a one-line usage error otherwise)."""
    if value is None:
        return None
    try:
        cap = float(value)
    except ValueError:
        cap = float("nan")
    if not (cap > 0 and cap != float("inf")):
        raise CliError(f"--max-cost: expected a number of dollars > 0, got {value!r}", code=EXIT_USAGE)
    return cap


async def _ledgers(st: Any, store: str | None, name: str | None) -> list[Any]:
    """``--ledger NAME``: the named ledger of the store (SQLite or PostgreSQL), which must exist
    (``slateboard ledger set NAME USD`` creates it); a one-line usage error otherwise."""
    if name is None:
        return []
    from ..errors import InvalidInput, UnknownName
    from ..runtime.ledger import ledger_for

    try:
        shared = ledger_for(st)
        await shared.state(name)
    except (InvalidInput, UnknownName) as exc:
        raise CliError(f"--ledger: {exc}", code=EXIT_USAGE) from None
    return [(shared, name)]


def _mcp_servers(compiled: CompiledBlueprint, pairs: list[str]) -> dict[str, list[str]]:
    """``WORKER=SERVER`` options by worker (issue 17: MCP tools for LLM workers)."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        worker, sep, server = pair.partition("=")
        if not sep or not worker.strip() or not server.strip():
            raise CliError(f"--mcp {pair!r}: expected WORKER=SERVER (a command line or a URL)", code=EXIT_USAGE)
        if worker.strip() not in compiled.workers:
            known = ", ".join(sorted(compiled.workers))
            raise CliError(f"--mcp {pair!r}: no worker {worker.strip()!r} (workers: {known})", code=EXIT_USAGE)
        out.setdefault(worker.strip(), []).append(server.strip())
    if out:
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            raise CliError("--mcp needs the mcp extra: pip install 'slateboard[mcp]'", code=EXIT_USAGE)
    return out


def resume_command(
    board: Annotated[str, typer.Argument(metavar="BOARD", help="A board id (or a unique prefix).", show_default=False)],
    model: ModelOption = None,
    api_key_env: ApiKeyEnvOption = None,
    store: StoreOption = None,
    parallel: ParallelOption = "auto",
    control: ControlOption = "agenda",
    as_json: JsonOption = False,
    stream: StreamOption = None,
) -> None:
    """Resume a board from its store (after an interruption, or after approve/refuse) and run it
    to its end. Committed records are never redone; approved patches are committed first.
    --stream prints the streamed tokens or committed updates as the run goes (see run)."""
    from ..blueprint import compile_blueprint
    from ..status import INTERRUPTED

    _parallel(parallel)
    mode = _stream_mode(stream)
    _scope_key(model, api_key_env)

    created: list[str] = []
    holder: list[CompiledBlueprint] = []
    ended: list[BoardInfo] = []

    async def go() -> tuple[RunResult, list[Record], BoardInfo] | None:
        async with opened_store(store) as st:
            info = await resolve_board(st, board, store)
            created.append(info.board_id)
            loaded = await st.load_board(info.board_id)
            where = info.meta.get("blueprint_dir")
            # As `run` does: function workers import from the working directory and the
            # blueprint's own directory (recorded at run time; used only if it still exists).
            add_import_paths(Path.cwd(), Path(where) if isinstance(where, str) and Path(where).is_dir() else None)
            compiled = compile_blueprint(loaded.blueprint)
            holder.append(compiled)
            await _check_genesis(st, info.board_id, compiled, loaded.initial_state, store, loaded.blueprint, info.meta)
            if info.status != "running":
                # Only a running board hands out claims: driving a done/failed/paused one would
                # retry its pending invocations forever (D4) or append one more run-end record
                # per resume (D16). Say where it stands instead.
                ended.append(info)
                return None
            resolved = _resolve(compiled, model)
            steps = compiled.spec.limits.max_steps
            if info.reason == INTERRUPTED:
                await st.set_status(info.board_id, "running", None)  # running again, no longer stopped
            return await _drive(
                st, info.board_id, info.name, resolved, parallel, None, steps, as_json, control=control, stream=mode
            )

    _finish_run(go, created, holder, store, as_json, ended, lines=mode is not None)


async def _check_genesis(
    st: Any,
    board_id: str,
    compiled: CompiledBlueprint,
    initial: Any,
    store: str | None,
    stored_blueprint: Any = None,
    meta: dict[str, Any] | None = None,
) -> None:
    """Refuse to resume a board whose stored blueprint or initial state no longer matches the
    one it was created with (the binding its store wrote at creation, issue 29 R1) or the one its
    log began with (record 1's genesis binding): the run would commit under rules the log never
    agreed to."""
    from ..kernel.record import board_genesis_problem, genesis_problem
    from ..kernel.statehash import state_hash

    problem = board_genesis_problem(meta or {}, stored_blueprint, initial) if stored_blueprint is not None else None
    if problem is None:
        first = await st.read_records(board_id, 1, limit=1)
        problem = genesis_problem(first[0], compiled.digest, state_hash(initial)) if first else None
    if problem is not None:
        raise CliError(
            f"board {board_id} cannot be resumed: {problem}"
            f" (see: slateboard replay {board_id} --verify{store_hint(store)})"
        )


def _parallel(value: str) -> int | Literal["auto"]:
    """``--parallel``: ``auto`` or a whole number of at least 1 (a usage error otherwise)."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise CliError(f"--parallel: expected a whole number of at least 1 or 'auto', got {value!r}", code=EXIT_USAGE)
    return n


async def _drive(
    st: Any,
    board_id: str,
    label: str,
    model: Any,
    parallel: str,
    max_steps: int | None,
    steps_limit: int,
    as_json: bool,
    tools: Any = None,
    control: str = "agenda",
    spend: dict[str, Any] | None = None,
    stream: str | None = None,
) -> tuple[RunResult, list[Record], BoardInfo]:
    from ..runtime import Runner
    from ..scheduling.units import CONTROL_UNITS

    if control not in CONTROL_UNITS:
        raise CliError(f"--control: expected one of {', '.join(CONTROL_UNITS)}, got {control!r}", code=EXIT_USAGE)
    runner = Runner(
        st,
        board_id,
        model=model,
        parallel=_parallel(parallel),
        max_steps=max_steps,
        tools=tools,
        control=control,
        **(spend or {}),
    )
    if stream is not None:
        result = await _run_streaming(runner, stream, as_json)
    elif as_json:
        result = await runner.run()
    else:
        result = await _run_with_display(runner, RunDisplay(board_id, label, steps_limit, parallel))
    return result, await st.read_records(board_id), await st.board_info(board_id)


def _mark_interrupted(board_id: str, store: str | None) -> None:
    """Record that ``board_id``'s run was stopped: it stays ``running`` in the store (so
    ``resume`` takes it up) with the end reason ``interrupted`` that ``boards``, ``log`` and the
    dashboard show. Best effort: a second Ctrl-C or a store error leaves the board as it was."""
    from ..status import INTERRUPTED

    async def mark() -> None:
        async with opened_store(store, create=False) as st:
            info = await st.board_info(board_id)
            if info.status == "running":
                await st.set_status(board_id, "running", INTERRUPTED)

    with contextlib.suppress(Exception, KeyboardInterrupt):
        run_async(mark)


def _finish_run(
    go: Any,
    created: list[str],
    compiled: Any,
    store: str | None,
    as_json: bool,
    ended: Sequence[BoardInfo] = (),
    *,
    lines: bool = False,
) -> None:
    try:
        outcome = run_async(go)
    except KeyboardInterrupt:
        if not created:
            raise
        _mark_interrupted(created[0], store)
        raise CliError(
            f"interrupted: board {created[0]} stopped mid-run; its log is intact."
            f" Go on with: slateboard resume {created[0]}{store_hint(store)}",
            code=EXIT_INTERRUPTED,
        ) from None
    if outcome is None:
        _not_resumed(ended[0], store, as_json)
        return
    result, records, info = outcome
    if isinstance(compiled, list):
        compiled = compiled[0]
    if as_json and lines:
        # After streamed events, one object per line: the result is the last line.
        import sys

        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    elif as_json:
        print_json(result.to_json())
    else:
        _summary(result, records, info, store, has_answer=compiled.spec.answer is not None)
    if info.status == "failed":
        import sys

        sys.stderr.write(f"board {info.board_id} failed: {result.end_reason}\n")
        raise typer.Exit(EXIT_ERROR)


def _scope_key(model: str | None, variable: str | None) -> None:
    """``--api-key-env NAME``: the key in NAME goes to --model's endpoint only."""
    if variable is None:
        return
    if not model:
        raise CliError("--api-key-env needs --model (the endpoint the key is for)", code=EXIT_USAGE)
    from ..models.registry import scope_api_key_env

    scope_api_key_env(model, variable)


def _not_resumed(info: BoardInfo, store: str | None, as_json: bool) -> None:
    """Report a board that ``resume`` left alone because it is not running (exit 1 unless done)."""
    if info.status == "paused":
        raise CliError(
            f"board {info.board_id} is paused ({info.reason or 'awaiting approval'}): approve or refuse"
            f" its held patch first (see: slateboard approve --help)"
        )
    if as_json:
        print_json({"board_id": info.board_id, "status": info.status, "end_reason": info.reason, "resumed": False})
    else:
        console().print(
            f"board {info.board_id} has already ended ({info.status}: {info.reason or '-'}); nothing to resume"
            f" (see: slateboard log {info.board_id}{store_hint(store)})"
        )
    if info.status == "failed":
        raise typer.Exit(EXIT_ERROR)


def _resolve(compiled: CompiledBlueprint, model: str | None) -> Model | None:
    """Resolve the model string and build every worker once before a board exists, so a bad
    model string or function reference fails without leaving a half-made board behind."""
    from ..models import resolve_model
    from ..workers.factory import make_workers

    resolved = resolve_model(model) if model else None
    make_workers(compiled, model=resolved)
    return resolved


async def _run_with_display(runner: Any, display: RunDisplay) -> RunResult:
    out = console()
    with Live(display, console=out, refresh_per_second=8, transient=False, redirect_stderr=False):
        return await follow(runner, display.feed)


def _summary(result: RunResult, records: list[Record], info: BoardInfo, store: str | None, *, has_answer: bool) -> None:
    out = console()
    out.print()
    if not has_answer:
        out.print("[bold]Answer:[/] none (the blueprint names no answer path)")
    elif result.answer is None:
        out.print("[bold]Answer:[/] none on the board")
    elif isinstance(result.answer, str):
        out.print("[bold]Answer:[/]", Text(result.answer))
    else:
        out.print("[bold]Answer:[/]")
        out.print(Pretty(result.answer))
    outcomes = Counter(r.outcome for r in records)
    stages = Counter(r.stage or "-" for r in records if r.outcome == "rejected")
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("board", f"{info.board_id} ({info.name}), {result.end_status}: {result.end_reason}")
    grid.add_row("version", str(result.version))
    counts = ", ".join(f"{outcomes[k]} {k}" for k in ("accepted", "rejected", "noop", "action") if outcomes[k])
    grid.add_row("records", f"{len(records)}" + (f": {counts}" if counts else ""))
    accepted = Counter(r.worker for r in records if r.outcome == "accepted")
    if accepted:
        grid.add_row("accepted", ", ".join(f"{w} {n}" for w, n in accepted.items()))
    if stages:
        grid.add_row("rejected by stage", ", ".join(f"{s} {n}" for s, n in sorted(stages.items())))
        # What the kernel refused and why: each distinct reason once, with how often.
        reasons = Counter(f"[{r.worker}] {r.stage}: {r.reason}" for r in records if r.outcome == "rejected")
        shown = [Text(f"{n}x {why}" if n > 1 else why) for why, n in reasons.most_common(5)]
        more = len(reasons) - len(shown)
        grid.add_row("rejections", Group(*shown, *([Text(f"... and {more} more reason(s)")] if more > 0 else [])))
    grid.add_row("tokens", f"{result.total_tokens:,}")
    grid.add_row("cost", format_cost(result.cost_usd))
    out.print(Panel(grid, title="Audit", title_align="left", expand=False))
    for title, usage, costs in (
        ("component", result.usage, result.cost_by_component),
        ("worker", result.usage_by_worker, result.cost_by_worker),
    ):
        if not usage:
            continue
        table = Table(title=f"tokens by {title}", title_justify="left", box=None, pad_edge=False)
        table.add_column(title)
        table.add_column("in", justify="right")
        table.add_column("out", justify="right")
        table.add_column("calls", justify="right")
        table.add_column("cost", justify="right")
        for key, u in sorted(usage.items()):
            table.add_row(key, f"{u.tokens_in:,}", f"{u.tokens_out:,}", str(u.calls), format_cost(costs.get(key, 0.0)))
        out.print(table)
    if store is not None and store.lower().startswith("memory:"):
        out.print(Text("the board lived in a memory:// store: it is gone now that this process ends", style="dim"))
        return
    hint = store_hint(store)
    out.print("inspect with:", style="dim")
    for cmd in ("log", "show", "replay"):
        extra = " --verify" if cmd == "replay" else ""
        out.print(Text(f"  slateboard {cmd} {info.board_id}{extra}{hint}", style="dim"), soft_wrap=True)
