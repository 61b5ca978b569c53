"""``slateboard worker``, ``submit`` and ``wait``: runner processes sharing boards through PostgreSQL.

``submit`` creates a board (any store) and prints its id; ``worker`` is a long-running runner
process serving every board of a PostgreSQL store (one line per commit, exit 0 on SIGTERM or
Ctrl-C after a graceful stop); ``wait`` follows a board to its end and prints the end reason and
the answer.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..vocabulary import BOARD_DONE
from ._common import (
    BoardArgument,
    InputsOption,
    JsonOption,
    MaxStepsOption,
    ModelOption,
    NameOption,
    StoreOption,
    TaskOption,
    add_import_paths,
    load_for_new_board,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    store_hint,
    store_label,
)
from ._engine import (
    EngineOption,
    TaskQueueOption,
    TemporalOption,
    cancel_on_interrupt,
    check_engine,
    check_task_queue,
    check_team_submit,
    serve_on_temporal,
    submit_on_temporal,
    submit_team_on_temporal,
)
from ._errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, CliError
from ._run_args import check_control, named_ledgers, parse_inputs, parse_max_cost

if TYPE_CHECKING:
    from ..runtime import RunnerStats, RunResult
    from ..stores.base import BoardInfo


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def worker_command(
    store: StoreOption = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Invocations in flight at once in this process.")
    ] = 4,
    workers: Annotated[
        str | None,
        typer.Option("--workers", "-w", metavar="A,B", help="Serve only these blueprint workers (comma-separated)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help="Override the model every board was submitted with (all LLM workers).",
        ),
    ] = None,
    lease: Annotated[
        float, typer.Option("--lease", min=0.1, help="Claim lease in seconds (renewed while a worker runs).")
    ] = 30.0,
    grace: Annotated[
        float, typer.Option("--grace", min=0.0, help="On SIGTERM, seconds to let in-flight invocations finish.")
    ] = 30.0,
    worker_timeout: Annotated[
        float, typer.Option("--worker-timeout", min=0.1, help="Seconds one worker call may take.")
    ] = 120.0,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the process's statistics as JSON at the end instead of one line per commit."
        ),
    ] = False,
    engine: EngineOption = "runners",
    temporal: TemporalOption = None,
    task_queue: TaskQueueOption = "slateboard",
) -> None:
    """Run a runner process: serve every board of a PostgreSQL store until SIGTERM/SIGINT.

    With --engine temporal it is a Temporal worker instead: it serves the board workflows of
    --task-queue for the store (any store; SQLite for one machine), one line per commit, and the
    team boards of submit --team (it imports each team's MODULE:NAME; one line per round).

    Claims pending invocations of any running board (several processes never get the same one),
    runs their workers, commits through the store's compare-and-set and logs one line per commit.
    Sleeps on LISTEN/NOTIFY when there is nothing to do. On SIGTERM it stops claiming, lets
    in-flight invocations finish within --grace seconds, gives back the rest and exits 0.
    Function workers (module:callable) import from the working directory and from the directory
    each board's blueprint was submitted from.
    """
    url = store or ""
    on_temporal = check_engine(engine)
    if on_temporal:
        check_task_queue(task_queue)
        if as_json:
            raise CliError(
                "--json is for runner processes; a Temporal worker prints one line per commit", code=EXIT_USAGE
            )
        if lease != 30.0 or worker_timeout != 120.0:
            raise CliError(
                "--lease and --worker-timeout are for runner processes: on Temporal a step's time limits are"
                " the workflow's (heartbeats, retries), recorded when the board is submitted",
                code=EXIT_USAGE,
            )
    elif not url.lower().startswith(("postgresql:", "postgres:")):
        raise CliError(
            f"slateboard worker needs a postgresql:// store: scale-out across runner processes shares boards through"
            f" PostgreSQL (got {store_label(store)}); run one board in this process with: slateboard resume BOARD",
            code=EXIT_USAGE,
        )
    names = [n.strip() for n in workers.split(",")] if workers is not None else None
    if names is not None and (not names or not all(names)):
        raise CliError(f"--workers {workers!r}: expected worker names separated by commas", code=EXIT_USAGE)
    add_import_paths(Path.cwd())
    from ..runtime import RunnerProcess, resolve_runner_model

    resolved = resolve_runner_model(model)  # a bad model string fails before serving anything
    if on_temporal:
        serve_on_temporal(store, temporal, task_queue, concurrency, names, resolved, _out, grace=grace)
        return

    async def go() -> RunnerStats:
        import asyncio

        async with opened_store(url) as st:
            runner = RunnerProcess(
                st,
                concurrency=concurrency,
                worker_names=names,
                model=resolved,
                lease_s=lease,
                grace_s=grace,
                worker_timeout=worker_timeout,
                log_line=(lambda line: None) if as_json else _out,
                import_blueprint_dirs=True,  # as `run`/`resume`: function workers beside the blueprint
            )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, runner.stop)
            try:
                return await runner.serve()
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    stats = run_async(go)
    if as_json:
        print_json(stats.to_json())


def submit_command(
    blueprint: Annotated[
        str | None,
        typer.Argument(
            metavar="BLUEPRINT_OR_TEMPLATE",
            help="A blueprint file (YAML or JSON) or the name of a template (see: slateboard templates);"
            " none with --team.",
            show_default=False,
        ),
    ] = None,
    task: TaskOption = None,
    inputs: InputsOption = None,
    model: ModelOption = None,
    store: StoreOption = None,
    name: NameOption = None,
    max_steps: MaxStepsOption = None,
    control: Annotated[
        str | None,
        typer.Option(
            "--control",
            help="Control unit the runner processes ask which invocation runs next: agenda, round-robin or "
            "coordinator (recorded with the board).",
        ),
    ] = None,
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            metavar="USD",
            help="Hard spend cap for the board in dollars (recorded with the board; needs limits.prices).",
        ),
    ] = None,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            metavar="NAME",
            help="Every runner process reserves the board's LLM calls against this named ledger of the store.",
        ),
    ] = None,
    as_json: JsonOption = False,
    engine: EngineOption = "runners",
    temporal: TemporalOption = None,
    task_queue: TaskQueueOption = "slateboard",
    follow: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Then follow the board to its end, as slateboard wait does; with --engine temporal, Ctrl-C"
            " cancels its workflow (the board is left interrupted, resumable).",
        ),
    ] = False,
    team: Annotated[
        str | None,
        typer.Option(
            "--team",
            metavar="MODULE:NAME",
            help="Submit a Team.blackboard instead of a blueprint (with --engine temporal and --task, the"
            " prompt): NAME is a Team, or a callable returning one; every worker imports it.",
        ),
    ] = None,
) -> None:
    """Create a board for runner processes (slateboard worker) and print its id.

    With --engine temporal the board runs as a Temporal workflow on --task-queue, served by
    `slateboard worker --engine temporal`; Temporal is reached first, so nothing is created when
    it does not answer.

    The model string is recorded with the board; runner processes use it unless they override it.
    So are --max-cost and --ledger: every runner process reserves the board's model calls against them.

    With --team MODULE:NAME (and --engine temporal) it submits a team's board for --task: the
    workers of --task-queue import the same MODULE:NAME and play it one round at a time.
    """
    if team is not None:
        given = {"--inputs": inputs, "--model": model, "--name": name, "--max-steps": max_steps}
        given.update({"--control": control, "--max-cost": max_cost, "--ledger": ledger})
        check_team_submit(team, blueprint, engine, task, [k for k, v in given.items() if v])
        check_task_queue(task_queue)
        assert task is not None  # check_team_submit: a team needs its prompt
        board_id = run_async(lambda: submit_team_on_temporal(temporal, task_queue, store, team, task))
        _follow_or_print(board_id, store, temporal, as_json=as_json, follow=follow, on_temporal=True, model=None)
        return
    if blueprint is None:
        raise CliError(
            "submit needs a blueprint (a file or a template), or --team MODULE:NAME with --engine temporal",
            code=EXIT_USAGE,
        )
    if control is not None:
        check_control(control)
    if control == "coordinator" and model is None:
        raise CliError("--control coordinator needs --model (the coordinator asks a model)", code=EXIT_USAGE)

    on_temporal = check_engine(engine)
    if on_temporal:
        check_task_queue(task_queue)
    cap = parse_max_cost(max_cost)
    compiled, where = load_for_new_board(blueprint)
    initial = parse_inputs(compiled, task, inputs or [], blueprint)

    async def go() -> str:
        from ..runtime import submit
        from ..runtime.ledger import spend_meta

        async with opened_store(store) as st:
            await named_ledgers(st, ledger)  # a ledger that does not exist fails before the board does
            meta = {**(where or {}), **spend_meta(cap, [ledger] if ledger is not None else [])}
            if on_temporal:
                return await submit_on_temporal(
                    temporal, task_queue, st, compiled, inputs=initial, model=model, name=name,
                    max_steps=max_steps, control=control, meta=meta,
                )  # fmt: skip
            return await submit(
                st, compiled, inputs=initial, model=model, name=name, max_steps=max_steps, control=control, meta=meta
            )

    board_id = run_async(go)
    _follow_or_print(board_id, store, temporal, as_json=as_json, follow=follow, on_temporal=on_temporal, model=model)


def _follow_or_print(
    board_id: str,
    store: str | None,
    temporal: str | None,
    *,
    as_json: bool,
    follow: bool,
    on_temporal: bool,
    model: str | None,
) -> None:
    """After ``submit``: follow the board to its end (``--wait``; Ctrl-C cancels its workflow on
    Temporal), or print its id."""
    if follow:
        _out(board_id)
        try:
            wait_command(board_id, store=store, as_json=as_json)
        except KeyboardInterrupt:
            if on_temporal:
                cancel_on_interrupt(board_id, store, temporal)
            raise CliError(f"interrupted: board {board_id} left as it is", code=EXIT_INTERRUPTED) from None
        return
    if as_json:
        print_json({"board_id": board_id, "store": store_label(store), "model": model})
    else:
        _out(board_id)


def wait_command(
    board: BoardArgument,
    store: StoreOption = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.0, help="Give up after this many seconds (exit 1).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a board until it ends; print its end reason and answer.

    Exit code 0 when it ended normally, 1 when it was halted (failed), paused for approval, or
    still running after --timeout seconds.
    """

    async def go() -> tuple[RunResult, BoardInfo]:
        from ..runtime import wait

        async with opened_store(store, create=False) as st:
            info = await resolve_board(st, board, store)
            try:
                result = await wait(st, info.board_id, timeout=timeout)
            except TimeoutError as exc:
                raise CliError(f"{exc} (see: slateboard log {info.board_id}{store_hint(store)})") from None
            return result, await st.board_info(info.board_id)

    result, info = run_async(go)
    if as_json:
        print_json({**result.to_json(), "status": info.status})
    else:
        _out(f"board {info.board_id} {info.status}: {result.end_reason}")
        answer: Any = result.answer
        _out(f"answer: {answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)}")
    if info.status != BOARD_DONE:
        sys.stderr.write(f"board {info.board_id} {info.status}: {result.end_reason}\n")
        raise typer.Exit(EXIT_ERROR)
