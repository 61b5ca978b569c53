"""``slateboard run`` and ``resume``: create a board (or take up a stored one) and drive it to its end.

The command bodies live here; what they check first is ``_run_args``, the live panel and the
summary ``_run_display``, the ``--stream`` printer ``_run_stream``. The live display is fed by
the runner's events (never by polling the store); the summary after the run is read back from
the store, so it is the audit trail, not the display's own counts.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..vocabulary import BOARD_FAILED, BOARD_PAUSED, BOARD_RUNNING, BUDGET_PREFIX
from ._common import (
    ApiKeyEnvOption,
    BlueprintArgument,
    BoardArgument,
    ControlOption,
    InputsOption,
    JsonOption,
    MaxStepsOption,
    ModelOption,
    NameOption,
    ParallelOption,
    StoreOption,
    TaskOption,
    add_board_import_paths,
    console,
    load_for_new_board,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    store_hint,
    store_is_ephemeral,
)
from ._engine import EngineOption, TemporalOption, check_engine, resume_on_temporal
from ._errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, CliError
from ._ledger import refusal
from ._run_args import (
    check_control,
    check_genesis,
    lower_cap,
    mcp_servers,
    named_ledgers,
    parse_inputs,
    parse_max_cost,
    parse_parallel,
    resolve_workers,
    scope_key,
)
from ._run_display import RunDisplay, print_summary, run_with_display
from ._run_stream import StreamOption, run_streaming, stream_mode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..blueprint.compile import CompiledBlueprint
    from ..kernel.record import Record
    from ..runtime import RunResult
    from ..stores.base import BoardInfo


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
    parse_parallel(parallel)  # a bad --parallel or --control fails before a board is created
    check_control(control)
    mode = stream_mode(stream)
    cap = parse_max_cost(max_cost)
    compiled, meta = load_for_new_board(blueprint)
    initial = parse_inputs(compiled, task, inputs or [], blueprint)
    scope_key(model, api_key_env)
    resolved = resolve_workers(compiled, model)
    steps_limit = max_steps or compiled.spec.limits.max_steps
    servers = mcp_servers(compiled, mcp or [])

    created: list[str] = []

    async def go() -> tuple[RunResult, list[Record], BoardInfo]:
        from ..runtime import create_board

        async with opened_store(store) as st:
            from ..runtime.ledger import spend_meta

            spend = {"max_cost": cap, "ledgers": await named_ledgers(st, ledger)}
            # issue 45: the limits are part of the board, so every later run of it holds them
            bound = {**(meta or {}), **spend_meta(cap, [ledger] if ledger is not None else [])}
            board_id = await create_board(st, compiled, inputs=initial, name=name, meta=bound)
            created.append(board_id)
            label = name or compiled.spec.name
            async with contextlib.AsyncExitStack() as stack:
                tools = None
                if servers:
                    from ..mcp import mcp_tools

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


def resume_command(
    board: BoardArgument,
    model: ModelOption = None,
    api_key_env: ApiKeyEnvOption = None,
    store: StoreOption = None,
    parallel: ParallelOption = "auto",
    control: ControlOption = "agenda",
    as_json: JsonOption = False,
    stream: StreamOption = None,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            metavar="NAME",
            help="Also reserve every LLM call against this named ledger of the store (the ledgers and --max-cost the board was started with always hold).",
        ),
    ] = None,
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            metavar="USD",
            help="A lower spend cap for this resume (the whole board's cost counts); above the board's recorded cap it is refused.",
        ),
    ] = None,
    engine: EngineOption = "runners",
    temporal: TemporalOption = None,
    task_queue: Annotated[
        str | None,
        typer.Option(
            "--task-queue", metavar="QUEUE", help="With --engine temporal: the task queue (default: the board's)."
        ),
    ] = None,
) -> None:
    """Resume a board from its store (after an interruption, or after approve/refuse) and run it
    to its end. Committed records are never redone; approved patches are committed first.
    The spend limits the board was started with (run --ledger/--max-cost) hold; --ledger adds one,
    --max-cost lowers the cap for this resume (never raises it: a higher one is refused).
    --stream prints the streamed tokens or committed updates as the run goes (see run).
    With --engine temporal (a board submitted to the engine): a new workflow continues it on the
    Temporal workers instead of in this process."""
    from ..blueprint import compile_blueprint
    from ..status import INTERRUPTED

    if check_engine(engine):
        if ledger is not None or max_cost is not None:
            raise CliError(
                "--ledger and --max-cost are not for resume --engine temporal: the spend limits recorded with the"
                " board hold on every worker (submit --engine temporal --ledger/--max-cost records them)",
                code=EXIT_USAGE,
            )
        resume_on_temporal(board, store, temporal, task_queue)
        return

    parse_parallel(parallel)
    mode = stream_mode(stream)
    scope_key(model, api_key_env)
    cap = parse_max_cost(max_cost)

    created: list[str] = []
    holder: list[CompiledBlueprint] = []
    ended: list[BoardInfo] = []

    async def go() -> tuple[RunResult, list[Record], BoardInfo] | None:
        async with opened_store(store) as st:
            info = await resolve_board(st, board, store)
            if info.meta.get("architecture") == "blackboard":
                # A team's board has no rules: the team's code (agents, coordinator, models) drives
                # it, and that code is not in the store. Resuming it as a blueprint would end it.
                raise CliError(
                    f"board {info.board_id} is a Team.blackboard board: its team is code, not in the store;"
                    f" resume it from Python with `await team.resume({info.board_id!r})`"
                    + (
                        ", or with --engine temporal (it was submitted to the engine)"
                        if info.meta.get("engine")
                        else ""
                    ),
                    code=EXIT_USAGE,
                )
            created.append(info.board_id)
            loaded = await st.load_board(info.board_id)
            add_board_import_paths(info.meta)
            compiled = compile_blueprint(loaded.blueprint)
            holder.append(compiled)
            await check_genesis(st, info.board_id, compiled, loaded.initial_state, store, loaded.blueprint, info.meta)
            if info.status != BOARD_RUNNING:
                # Only a running board hands out claims: driving a done/failed/paused one would
                # retry its pending invocations forever (D4) or append one more run-end record
                # per resume (D16). Say where it stands instead.
                ended.append(info)
                return None
            resolved = resolve_workers(compiled, model)
            lower_cap(info, cap)  # a resume may lower the recorded cap, never raise it
            added = await named_ledgers(st, ledger)
            steps = compiled.spec.limits.max_steps
            if info.reason == INTERRUPTED:
                await st.set_status(info.board_id, BOARD_RUNNING, None)  # running again, no longer stopped
            return await _drive(
                st,
                info.board_id,
                info.name,
                resolved,
                parallel,
                None,
                steps,
                as_json,
                control=control,
                stream=mode,
                spend={"ledgers": added, "max_cost": cap},
            )

    _finish_run(go, created, holder, store, as_json, ended, lines=mode is not None)


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

    check_control(control)
    runner = Runner(
        st,
        board_id,
        model=model,
        parallel=parse_parallel(parallel),
        max_steps=max_steps,
        tools=tools,
        control=control,
        **(spend or {}),
    )
    if stream is not None:
        result = await run_streaming(runner, stream, as_json)
    elif as_json:
        result = await runner.run()
    else:
        result = await run_with_display(runner, RunDisplay(board_id, label, steps_limit, parallel))
    return result, await st.read_records(board_id), await st.board_info(board_id)


def _mark_interrupted(board_id: str, store: str | None) -> None:
    """Record that ``board_id``'s run was stopped: it stays ``running`` in the store (so
    ``resume`` takes it up) with the end reason ``interrupted`` that ``boards``, ``log`` and the
    dashboard show. Best effort: a second Ctrl-C or a store error leaves the board as it was."""
    from ..status import INTERRUPTED

    async def mark() -> None:
        async with opened_store(store, create=False) as st:
            info = await st.board_info(board_id)
            if info.status == BOARD_RUNNING:
                await st.set_status(board_id, BOARD_RUNNING, INTERRUPTED)

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
        go_on = (
            f"it lived in {store}, which is gone with this process"
            if store is not None and store_is_ephemeral(store)
            else f"its log is intact. Go on with: slateboard resume {created[0]}{store_hint(store)}"
        )
        raise CliError(f"interrupted: board {created[0]} stopped mid-run; {go_on}", code=EXIT_INTERRUPTED) from None
    if outcome is None:
        _not_resumed(ended[0], store, as_json)
        return
    result, records, info = outcome
    if isinstance(compiled, list):
        compiled = compiled[0]
    if as_json and lines:
        # After streamed events, one object per line: the result is the last line.
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    elif as_json:
        print_json(result.to_json())
    else:
        print_summary(result, records, info, store, has_answer=compiled.spec.answer is not None)
    if info.status == BOARD_FAILED:
        sys.stderr.write(f"board {info.board_id} failed: {result.end_reason}\n")
        raise typer.Exit(EXIT_ERROR)
    if result.end_reason.startswith(BUDGET_PREFIX):
        # The spend cap refused a model call (issue 47): the run did not do what was asked, so
        # the exit says so, as a too-small cap given on the command line is a usage problem.
        # The refusal says which ledger, its cap and spend, and what to do (issue 45): one line.
        why = refusal(records, result.end_reason) or "a model call did not fit --max-cost/--ledger"
        sys.stderr.write(
            f"board {info.board_id} stopped at its spend cap ({result.end_reason}): {why}"
            f" (see: slateboard log {info.board_id}{store_hint(store)})\n"
        )
        raise typer.Exit(EXIT_USAGE)


def _not_resumed(info: BoardInfo, store: str | None, as_json: bool) -> None:
    """Report a board that ``resume`` left alone because it is not running (exit 1 unless done)."""
    if info.status == BOARD_PAUSED:
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
    if info.status == BOARD_FAILED:
        raise typer.Exit(EXIT_ERROR)
