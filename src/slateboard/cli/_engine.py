"""The ``--engine temporal`` side of ``submit`` (``--team`` too) and ``worker``, and ``slateboard cancel``.

Temporal is imported only here and only when asked for, so the CLI starts as fast without the
extra; a missing extra, an unreachable server or a refused start is one line and exit 2.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..vocabulary import BOARD_FAILED, BOARD_RUNNING
from ._common import (
    BLUEPRINT_DIR,
    BoardArgument,
    StoreOption,
    add_import_paths,
    opened_store,
    resolve_board,
    run_async,
)
from ._errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from temporalio.client import Client

ENGINES = ("runners", "temporal")

EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        metavar="ENGINE",
        help="What runs the board past one machine: runners (slateboard's runner processes on PostgreSQL)"
        " or temporal (Temporal workflows; any store).",
    ),
]
TemporalOption = Annotated[
    str | None,
    typer.Option(
        "--temporal",
        metavar="HOST:PORT",
        help="The Temporal server (default: $TEMPORAL_ADDRESS, else 127.0.0.1:7233).",
    ),
]
TaskQueueOption = Annotated[
    str, typer.Option("--task-queue", metavar="QUEUE", help="The Temporal task queue boards run on.")
]


def check_engine(engine: str) -> bool:
    """True for ``temporal``, False for ``runners``; exit 2 naming the choices otherwise."""
    if engine not in ENGINES:
        raise CliError(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}", code=EXIT_USAGE)
    return engine == "temporal"


def check_task_queue(queue: str) -> str:
    """A task queue name: printable, no spaces, at most 200 characters."""
    if not queue or len(queue) > 200 or not queue.isprintable() or any(c.isspace() for c in queue):
        raise CliError(
            f"--task-queue {queue[:60]!r}: expected a name without spaces (1-200 characters)", code=EXIT_USAGE
        )
    return queue


def _engine_module() -> Any:
    try:
        import slateboard.temporal as engine
    except ImportError:
        raise CliError(
            "the temporal engine needs the temporal extra: pip install 'slateboard[temporal]'", code=EXIT_USAGE
        ) from None
    return engine


async def engine_client(address: str | None) -> tuple[Any, Client, str]:
    """The engine module, a connected client and the address it reached; exit 2 naming the
    address when Temporal does not answer."""
    engine = _engine_module()
    try:
        where = engine.resolve_address(address)
        return engine, await engine.connect(where), where
    except engine.EngineError as exc:
        raise CliError(str(exc), code=EXIT_USAGE) from None


async def submit_on_temporal(address: str | None, task_queue: str, store: Any, compiled: Any, **board: Any) -> str:
    """Connect first (nothing is created when Temporal is unreachable), then create the board
    and start its workflow."""
    engine, client, where = await engine_client(address)
    try:
        board_id: str = await engine.submit_board(
            client, store, compiled, address=where, task_queue=task_queue, **board
        )
    except engine.EngineError as exc:
        raise CliError(str(exc), code=EXIT_USAGE) from None
    return board_id


def check_team_submit(team: str, blueprint: str | None, engine: str, task: str | None, others: list[str]) -> None:
    """``submit --team``: only on the Temporal engine, with its prompt (--task), without a
    blueprint or the options a blueprint's board takes; exit 2 naming what is wrong."""
    if not check_engine(engine):
        raise CliError(
            f"--team {team} runs on the Temporal engine: add --engine temporal (in one process: await team.run(task))",
            code=EXIT_USAGE,
        )
    if blueprint is not None:
        raise CliError(
            f"--team takes no blueprint (got {blueprint!r}): the team's own board is its blueprint", code=EXIT_USAGE
        )
    if task is None:
        raise CliError("--team needs --task: the problem the team works on", code=EXIT_USAGE)
    if others:
        raise CliError(f"{', '.join(others)}: not for --team (the team sets its own board)", code=EXIT_USAGE)


async def submit_team_on_temporal(address: str | None, task_queue: str, store: str | None, team: str, task: str) -> str:
    """Import the team (from the working directory too), reach Temporal, then create the team's
    board and start its workflow; a bad reference or an unreachable server is exit 2, nothing created."""
    engine = _engine_module()
    add_import_paths(Path.cwd())
    try:
        where = engine.resolve_address(address)
        async with opened_store(store) as st:
            board_id: str = await engine.submit_team(
                team, task, store=st, address=where, task_queue=task_queue, meta={BLUEPRINT_DIR: str(Path.cwd())}
            )
    except (engine.EngineError, engine.TeamRefError) as exc:
        raise CliError(str(exc), code=EXIT_USAGE) from None
    return board_id


def serve_on_temporal(
    url: str | None,
    address: str | None,
    task_queue: str,
    concurrency: int,
    names: Sequence[str] | None,
    model: Any,
    out: Any,
    *,
    grace: float = 10.0,
) -> None:
    """``slateboard worker --engine temporal``: serve board workflows until SIGTERM/SIGINT
    (running activities get ``grace`` seconds)."""

    async def go() -> None:
        import asyncio

        engine, client, _ = await engine_client(address)
        async with opened_store(url) as st:
            worker = engine.BoardWorker(
                client,
                st,
                task_queue=task_queue,
                concurrency=concurrency,
                worker_names=names,
                model=model,
                import_blueprint_dirs=True,
                log_line=out,
                grace_s=grace,
            )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, worker.stop)
            try:
                await worker.serve()
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    run_async(go)


def engine_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The engine a board's meta names (``submit --engine temporal`` records it), or None."""
    found = meta.get("engine")
    return found if isinstance(found, dict) and found.get("name") == "temporal" else None


async def signal_if_on_engine(meta: dict[str, Any], board_id: str) -> str | None:
    """After an approval decision: wake the board's workflow when it runs on Temporal. Returns
    a line to print when it could not be reached (the decision is logged either way)."""
    engine_meta = engine_of(meta)
    if engine_meta is None:
        return None
    address = engine_meta.get("address")
    try:
        engine, client, _ = await engine_client(address if isinstance(address, str) else None)
        await engine.signal_approval(client, board_id)
    except CliError as exc:
        return f"warning: the decision is logged, but the board's workflow was not told: {exc.message}"
    except Exception as exc:
        return f"warning: the decision is logged, but the board's workflow was not told: {type(exc).__name__}: {exc}"
    return None


def resume_on_temporal(board: str, store: str | None, temporal: str | None, task_queue: str | None) -> None:
    """``slateboard resume BOARD --engine temporal``: start a new workflow for a board submitted
    to the engine whose workflow ended (cancelled, or its workers failed it); it continues from
    the log. Exit 2 for a board of another engine, one not running, or one whose workflow runs."""

    async def go() -> str:
        async with opened_store(store, create=False) as st:
            info = await resolve_board(st, board, store)
            engine_meta = engine_of(info.meta)
            if engine_meta is None:
                raise CliError(
                    f"board {info.board_id} was not submitted to the Temporal engine: resume it in this process"
                    f" with slateboard resume {info.board_id}",
                    code=EXIT_USAGE,
                )
            if info.status not in (BOARD_RUNNING, BOARD_FAILED):
                raise CliError(f"board {info.board_id} is {info.status}: there is nothing to resume", code=EXIT_USAGE)
            recorded = engine_meta.get("address")
            engine, client, _ = await engine_client(temporal or (recorded if isinstance(recorded, str) else None))
            queue = task_queue or engine_meta.get("task_queue") or engine.DEFAULT_TASK_QUEUE
            try:
                start = await engine.stored_start(st, info.board_id)
                if info.status == BOARD_FAILED:
                    await st.set_status(info.board_id, BOARD_RUNNING, None)  # a worker mismatch, fixed since
                await engine.start_board(client, start, task_queue=check_task_queue(str(queue)))
            except engine.EngineError as exc:
                raise CliError(str(exc), code=EXIT_USAGE) from None
            return info.board_id

    board_id = run_async(go)
    sys.stdout.write(f"board {board_id}: resumed on Temporal; follow it with: slateboard wait {board_id}\n")


def cancel_on_interrupt(board_id: str, store: str | None, temporal: str | None) -> None:
    """Ctrl-C while following a board on Temporal: cancel its workflow (best effort: a second
    Ctrl-C or an unreachable server leaves it running, and the message says how to cancel)."""
    try:
        cancel_command(board_id, store=store, temporal=temporal)
    except (CliError, KeyboardInterrupt):
        raise CliError(
            f"interrupted: board {board_id} still runs on Temporal; stop it with: slateboard cancel {board_id}",
            code=EXIT_INTERRUPTED,
        ) from None
    raise CliError(
        f"interrupted: board {board_id}'s workflow is cancelled; resume it with: slateboard resume {board_id} --engine temporal",
        code=EXIT_INTERRUPTED,
    )


def cancel_command(board: BoardArgument, store: StoreOption = None, temporal: TemporalOption = None) -> None:
    """Cancel a board running on Temporal: its workflow gives its claims back and the board is
    left interrupted (resume it with slateboard resume, or submit it again to the engine)."""

    async def go() -> str:
        async with opened_store(store, create=False) as st:
            info = await resolve_board(st, board, store)
        engine_meta = engine_of(info.meta)
        if engine_meta is None:
            raise CliError(
                f"board {info.board_id} does not run on Temporal: stop a local run with Ctrl-C, runner processes with SIGTERM",
                code=EXIT_USAGE,
            )
        recorded = engine_meta.get("address")
        engine, client, _ = await engine_client(temporal or (recorded if isinstance(recorded, str) else None))
        try:
            await engine.cancel_board(client, info.board_id)
        except engine.EngineError as exc:
            raise CliError(str(exc), code=EXIT_USAGE) from None
        return info.board_id

    board_id = run_async(go)
    sys.stdout.write(f"board {board_id}: cancel requested; it ends interrupted once its workflow stops\n")
