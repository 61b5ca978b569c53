"""``slateboard anchor``: signed checkpoints of a board's log in a file outside the database,
and the key and file handling ``replay --verify --anchor`` shares (see slateboard.kernel.anchor)."""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import BoardArgument, JsonOption, StoreOption, console, opened_store, print_json, resolve_board, run_async
from ._errors import EXIT_USAGE, CliError

KEY_ENV = "SLATEBOARD_ANCHOR_KEY"

AnchorOption = Annotated[
    Path | None,
    typer.Option(
        "--anchor", metavar="FILE", help="Anchor file of signed checkpoints (JSON lines), kept outside the store."
    ),
]
KeyFileOption = Annotated[
    Path | None,
    typer.Option(
        "--key-file", metavar="FILE", help=f"File holding the anchor key (default: ${KEY_ENV}); never in the store."
    ),
]


def read_key(key_file: Path | None) -> bytes:
    """The operator's anchor key: the file's bytes (a trailing newline dropped), else $SLATEBOARD_ANCHOR_KEY."""
    if key_file is not None:
        try:
            key = key_file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise CliError(f"cannot read the anchor key {key_file}: {exc.strerror}") from None
    else:
        key = os.environ.get(KEY_ENV, "").encode("utf-8")
        if not key:
            raise CliError(f"an anchor needs a key: pass --key-file FILE or set ${KEY_ENV}", code=EXIT_USAGE)
    from ..kernel.anchor import MIN_KEY_BYTES

    if len(key) < MIN_KEY_BYTES:
        raise CliError(f"the anchor key has {len(key)} bytes; use at least {MIN_KEY_BYTES}", code=EXIT_USAGE)
    return key


def anchor_command(
    board: BoardArgument,
    anchor: Annotated[
        Path,
        typer.Option("--anchor", metavar="FILE", help="Anchor file to append the checkpoint to (created if absent)."),
    ],
    key_file: KeyFileOption = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sign a checkpoint of the board's log as it is now (its last record) and append it to an
    anchor file. ``replay --verify --anchor FILE`` then detects a log rewritten or rolled back
    by anyone with write access to the store but not to the key."""
    from ..kernel.anchor import sign_checkpoint, sign_genesis
    from ..kernel.record import board_genesis, board_genesis_hash

    key = read_key(key_file)

    async def last() -> tuple[str, list[object], Any, Any]:
        async with opened_store(store) as st:
            info = await resolve_board(st, board, store)
            tail = await st.read_records(info.board_id, max(1, info.seq)) if info.seq else []
            loaded = await st.load_board(info.board_id) if not tail else None
            return info.board_id, list(tail), loaded and loaded.blueprint, loaded and loaded.initial_state

    board_id, tail, blueprint, initial = run_async(last)
    if tail:
        checkpoint = sign_checkpoint(key, board_id, tail[-1])  # type: ignore[arg-type]
    else:
        # No record yet: sign the genesis (record 0), so the stored blueprint and initial state
        # cannot be changed before the first step unnoticed (issue 29, R1).
        state_hash = str(board_genesis(blueprint, initial)["initial_state"])
        checkpoint = sign_genesis(key, board_id, board_genesis_hash(blueprint, initial), state_hash)
    try:
        with anchor.open("ab") as out:
            out.write(checkpoint.to_line())
    except OSError as exc:
        raise CliError(f"cannot write the anchor file {anchor}: {exc.strerror}") from None
    if as_json:
        print_json({**checkpoint.body(), "anchor": str(anchor)})
    else:
        console().print(f"anchored board {board_id} at record {checkpoint.seq} ({checkpoint.hash[:12]}) in {anchor}")


def seq_in(problem: str) -> int | None:
    """The record number an anchor problem names ('... record N ...')."""
    words = problem.split()
    for a, b in pairwise(words):
        if a == "record" and b.isdigit():
            return int(b)
    return None
