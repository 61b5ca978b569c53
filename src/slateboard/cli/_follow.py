"""``slateboard watch``: follow a board's log from any process until the board ends."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ._common import JsonOption, StoreOption, opened_store, resolve_board, run_async
from ._errors import EXIT_USAGE, CliError, one_line


def watch_command(
    board: Annotated[str, typer.Argument(metavar="BOARD", help="A board id (or a unique prefix).", show_default=False)],
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
