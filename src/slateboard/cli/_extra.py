"""``architect``, ``templates``, ``bench`` and ``approve``/``refuse``."""

from __future__ import annotations

import enum
import importlib
import inspect
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer
import yaml
from rich.table import Table

from ..progress import ProgressLine, progress
from ._common import (
    BoardArgument,
    JsonOption,
    StoreOption,
    as_blueprint_json,
    console,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    short,
    template_entries,
    templates_module,
)
from ._errors import EXIT_ERROR, EXIT_USAGE, CliError, one_line

BENCH_ENV = "SLATEBOARD_BENCHMARKS"
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
"""``bench``'s settings: every argument after NAME goes to the script, ``--help`` included (so
``bench kernel --help`` shows the script's options); ``bench --help`` alone shows bench's help."""


# -- architect ------------------------------------------------------------------------------------
class _Mode(enum.StrEnum):
    auto = "auto"
    full = "full"
    outline = "outline"


def architect_command(
    request: Annotated[str, typer.Argument(help="What the board should do, in plain words.", show_default=False)],
    model: Annotated[
        str | None, typer.Option("--model", "-m", metavar="MODEL", help="Model for the Architect's call.")
    ] = None,
    repairs: Annotated[
        int | None, typer.Option("--repairs", min=0, help="Repair rounds after the first attempt (default: 2).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the YAML to FILE instead of stdout.")
    ] = None,
    mode: Annotated[
        _Mode,
        typer.Option(
            "--mode",
            help="full: the model writes the whole blueprint; outline: it plans the steps and slateboard writes "
            "the blueprint; auto: outline on an in-process model (a small context), full elsewhere.",
        ),
    ] = _Mode.auto,
) -> None:
    """Turn a request into a blueprint with the Architect and print it as YAML."""
    module, build = _architect()
    kwargs: dict[str, Any] = {"mode": mode.value}
    if model is not None:
        kwargs["model"] = model
    if repairs is not None:
        kwargs["max_repairs"] = repairs
    failure = getattr(module, "ArchitectError", None)
    try:
        with progress(f"architect: asking {model or 'the default model'} for a blueprint"):
            result: Any = build(request, **kwargs)
            if inspect.isawaitable(result):
                awaitable = result

                async def wait() -> Any:
                    return await awaitable

                result = run_async(wait)
    except Exception as exc:
        if isinstance(failure, type) and isinstance(exc, failure):
            issues = getattr(exc, "issues", None) or []
            head = str(exc).split("\n", 1)[0]
            raise CliError(
                f"the Architect produced no accepted blueprint: {one_line(head)}",
                details=[f"  - {one_line(str(i))}" for i in issues],
            ) from exc
        raise
    text = yaml.safe_dump(as_blueprint_json(result), sort_keys=False, allow_unicode=True)
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    sys.stderr.write(f"blueprint written to {output}\n")


def _architect() -> tuple[ModuleType, Any]:
    name = "slateboard.architect"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        module = None
    build = getattr(module, "blueprint_from_request", None) if module is not None else None
    if module is None or build is None:
        raise CliError("the Architect is not available in this installation (no slateboard.architect)", code=EXIT_USAGE)
    return module, build


# -- templates ------------------------------------------------------------------------------------
def templates_command(as_json: JsonOption = False) -> None:
    """List the blueprint templates that slateboard run accepts by name."""
    module = templates_module()
    if module is None:
        raise CliError("templates are not available in this installation", code=EXIT_USAGE)
    entries = template_entries(module)
    if as_json:
        print_json([{"name": n, "description": d} for n, d in entries])
        return
    out = console()
    if not entries:
        out.print("no templates")
        return
    table = Table(box=None, pad_edge=False)
    table.add_column("template", no_wrap=True)
    table.add_column("description")
    for name, desc in entries:
        table.add_row(name, desc)
    out.print(table)


# -- bench ----------------------------------------------------------------------------------------
class Bench(enum.StrEnum):
    """The benchmark scripts under benchmarks/."""

    kernel = "kernel"
    store = "store"
    constrained = "constrained"
    peers = "peers"
    scale = "scale"
    service = "service"
    telemetry = "telemetry"


def find_benchmarks() -> Path:
    """The benchmarks directory: $SLATEBOARD_BENCHMARKS, else ./benchmarks in the working
    directory or one of its parents, else the one next to this source checkout."""
    env = os.environ.get(BENCH_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise CliError(f"{BENCH_ENV}={env} is not a directory")
        return path
    cwd = Path.cwd().resolve()
    candidates = [d / "benchmarks" for d in (cwd, *cwd.parents)]
    candidates.append(Path(__file__).resolve().parents[3] / "benchmarks")
    for candidate in candidates:
        if (candidate / "kernel.py").is_file() or (candidate / "store.py").is_file():
            return candidate
    raise CliError(
        "no benchmarks directory found: run from a slateboard source checkout or set "
        f"{BENCH_ENV} to the directory holding kernel.py, store.py and constrained.py"
    )


def bench_command(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help=f"Which benchmark to run: {', '.join(Bench)}.", show_default=False),
    ] = None,
) -> None:
    """Run a benchmark script (benchmarks/NAME.py) with this Python; further arguments go to it.

    Example: slateboard bench kernel --proposals 1000 --sizes 100,10000 --json
    (and `slateboard bench kernel --help` for a benchmark's own options)

    The benchmarks directory is $SLATEBOARD_BENCHMARKS, else ./benchmarks here or in a parent, else the source checkout's.
    """
    if name is None or name in ("--help", "-h"):
        # No NAME: `bench`, `bench --help` or `bench -h` show this command's help.
        typer.echo(ctx.get_help())
        return
    try:
        bench = Bench(name)
    except ValueError:
        raise CliError(f"unknown benchmark {name!r} (one of: {', '.join(Bench)})", code=2) from None
    try:
        script = find_benchmarks() / f"{bench.value}.py"
    except CliError as exc:
        if not {"--help", "-h"} & set(ctx.args):
            raise
        # Help is answered anywhere (issue 48): this command's own, and why the script's is not here.
        typer.echo(ctx.get_help())
        typer.echo(f"\n{bench.value}'s own options: {exc.message}")
        return
    if not script.is_file():
        raise CliError(f"benchmark script not found: {script}")
    sys.stdout.flush()
    command = [sys.executable, str(script), *ctx.args]
    held = ""
    with progress(f"bench {bench.value}: running {script.name}") as line:
        if line.active:
            code, held = _bench(command, bench.value, line)
        else:
            code = subprocess.run(command, check=False).returncode
    # Written once the progress line is gone, so the two never overdraw each other.
    sys.stdout.write(held)
    sys.stdout.flush()
    if code:
        raise typer.Exit(code)


def _bench(command: list[str], name: str, line: ProgressLine) -> tuple[int, str]:
    """Run the benchmark under a progress line: its stderr goes above the line as it comes, its
    stdout (the results, maybe JSON) is held and returned unchanged with the exit code, and its
    newest stdout line is shown in the progress line meanwhile."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdout is not None and proc.stderr is not None  # both piped above
    errors = proc.stderr

    def relay() -> None:
        for text in errors:
            line.print(text.rstrip("\n"))

    relayer = threading.Thread(target=relay, daemon=True)
    relayer.start()
    held: list[str] = []
    for text in proc.stdout:
        held.append(text)
        if text.strip():
            line.update(f"bench {name}: {short(text, 60)}")
    code = proc.wait()
    relayer.join()
    return code, "".join(held)


# -- human approval -------------------------------------------------------------------------------
HeldRecordArgument = Annotated[
    int | None, typer.Argument(metavar="RECORD", help="The held record's seq (default: the only one).")
]
ByOption = Annotated[str, typer.Option("--by", help="Who decides (logged).")]
NoteOption = Annotated[str, typer.Option("--note", help="Why (logged).")]


def approve_command(
    board: BoardArgument,
    record: HeldRecordArgument = None,
    by: ByOption = "human",
    note: NoteOption = "",
    store: StoreOption = None,
    patch: Annotated[
        Path | None,
        typer.Option("--patch", help="Approve this edited JSON Patch (a file) instead of the held one."),
    ] = None,
) -> None:
    """Approve a held proposal: log the decision; the next `slateboard resume`/run commits it.

    With --patch FILE, the edited patch is checked by every kernel stage now and committed in
    place of the held one (the worker is not called again)."""
    _decide(board, record, by, note, store, approved=True, patch=patch)


def refuse_command(
    board: BoardArgument,
    record: HeldRecordArgument = None,
    by: ByOption = "human",
    note: NoteOption = "",
    store: StoreOption = None,
) -> None:
    """Refuse a held proposal: log the decision; its patch is never committed, and its worker is
    asked again with the refusal as feedback (up to the blueprint's limits.max_refusals)."""
    _decide(board, record, by, note, store, approved=False)


def _decide(
    board: str, record: int | None, by: str, note: str, url: str | None, *, approved: bool, patch: Path | None = None
) -> None:
    from ..runtime.approval import ApprovalError, approve, approve_edited, held_proposals, refuse

    edited: str | None = None
    if patch is not None:
        try:
            edited = patch.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read the edited patch {str(patch)!r}: {exc}", code=EXIT_USAGE) from None

    async def go() -> str:
        async with opened_store(url) as st:
            info = await resolve_board(st, board, url)
            held = await held_proposals(st, info.board_id)
            seq = record
            if seq is None:
                if len(held) != 1:
                    waiting = ", ".join(str(h.seq) for h in held) or "none"
                    raise CliError(f"board {info.board_id}: name the held record (waiting: {waiting})", code=EXIT_USAGE)
                seq = held[0].seq
            try:
                if edited is not None:
                    rec = await approve_edited(st, info.board_id, seq, edited, by=by, note=note)
                else:
                    rec = await (approve if approved else refuse)(st, info.board_id, seq, by=by, note=note)
            except ApprovalError as exc:
                raise CliError(one_line(str(exc)), code=EXIT_USAGE if edited is not None else EXIT_ERROR) from None
            done = f"{rec.reason} (logged as record {rec.seq})"
            if not approved:
                asked = rec.meta.get("asked_again")
                done += (
                    f"; {rec.worker} will be asked again with the refusal as feedback (refusal {rec.meta.get('refusals')})"
                    if asked
                    else f"; {rec.worker} is not asked again: its invocation failed (refusal {rec.meta.get('refusals')})"
                )
            from ._engine import engine_of, signal_if_on_engine

            if engine_of(info.meta) is None:
                return f"{done}; resume with: slateboard resume {info.board_id}"
            # A board on Temporal: its workflow waits for this signal, then runs on by itself.
            warning = await signal_if_on_engine(info.meta, info.board_id)
            if warning is not None:
                sys.stderr.write(warning + "\n")
            return f"{done}; its Temporal workflow runs on (slateboard wait {info.board_id})"

    console().print(run_async(go))
