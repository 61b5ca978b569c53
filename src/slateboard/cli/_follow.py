"""``slateboard watch``: follow a board's log from any process until the board ends."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ._common import BoardArgument, JsonOption, StoreOption, opened_store, resolve_board, run_async
from ._errors import EXIT_USAGE, CliError, one_line


def watch_command(
    board: BoardArgument,
    store: StoreOption = None,
    after: Annotated[int, typer.Option("--after", help="Start after this seq (resume where you stopped).")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Print the board's records in seq order, one line (or JSON object) each, until it ends.

    Works on a board run by any process; `--after N` resumes after the record with seq N, so
    nothing is lost or repeated.
    """

    async def go() -> None:
        from ..runtime.watch import WatchPastEnd, watch

        async with opened_store(store, create=False) as st:
            try:
                info = await resolve_board(st, board, store)
            except CliError as exc:  # an unknown board is bad input here: exit 2
                raise CliError(exc.message, code=EXIT_USAGE) from None
            try:
                async for record in watch(st, info.board_id, after=after):
                    if as_json:
                        line = json.dumps(record.to_json(), ensure_ascii=False, sort_keys=True)
                    else:
                        line = " ".join(
                            part
                            for part in (
                                f"{record.seq}",
                                f"v{record.version}",
                                record.kind,
                                record.outcome,
                                record.worker or "-",
                                f"stage={record.stage}" if record.stage else "",
                                f"reason={one_line(record.reason)}" if record.reason else "",
                            )
                            if part
                        )
                    sys.stdout.write(line + "\n")
                    sys.stdout.flush()  # a follower reads line by line while the board runs
            except WatchPastEnd as exc:
                raise CliError(str(exc), code=EXIT_USAGE) from None

    run_async(go)


def fork_problem(url: str | None, board_id: str) -> str | None:
    """For ``replay --verify``: why a forked board's parent binding, or a child board one of its
    records binds, does not check out, or None."""
    from ..runtime.fork import ForkError, verify_fork
    from ..runtime.verify import subboards_problem
    from ..stores.base import BoardNotFound

    async def go() -> str | None:
        async with opened_store(url, create=False) as st:
            try:
                await verify_fork(st, board_id)
            except ForkError as exc:
                return str(exc)
            except BoardNotFound as exc:  # the parent named is gone
                return f"its parent cannot be read: {exc}"
            # the child boards its sub-board workers ran, each verified whole (issue 43)
            children = await subboards_problem(st, list(await st.read_records(board_id)))
            return None if children is None else f"record {children[0]}: {children[1]}"

    return run_async(go)


def fork_command(
    board: BoardArgument,
    at: Annotated[int, typer.Option("--at", help="The parent's state version to start from.")],
    blueprint: Annotated[
        str | None, typer.Option("--blueprint", help="Run the child under this blueprint (file or template).")
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a new board from BOARD's state at version --at; print its id. The parent is only
    read; the child's metadata binds the parent's id, version, record hash and state hash, and
    `replay --verify` of the child checks that prefix of the parent."""
    from ..runtime.fork import ForkError, fork_board
    from ._common import load_blueprint_or_template

    compiled = load_blueprint_or_template(blueprint)[0] if blueprint is not None else None

    async def go() -> str:
        async with opened_store(store, create=False) as st:
            try:
                info = await resolve_board(st, board, store)
            except CliError as exc:
                raise CliError(exc.message, code=EXIT_USAGE) from None
            try:
                return await fork_board(st, info.board_id, at, compiled)
            except ForkError as exc:
                raise CliError(one_line(str(exc)), code=EXIT_USAGE) from None

    child = run_async(go)
    if as_json:
        sys.stdout.write(json.dumps({"board_id": child, "parent": board, "version": at}) + "\n")
    else:
        sys.stdout.write(child + "\n")
