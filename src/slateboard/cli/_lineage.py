"""Fork lineage as ``boards``, ``show`` and ``log`` give it (issue 42): a fork's parent and the
version it was taken at, and a parent's forks (read from each board's ``parent`` binding, see
``slateboard.runtime.fork``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON
from ._common import opened_store

if TYPE_CHECKING:
    from ..stores.base import BoardInfo

__all__ = ["board_lineage", "fork_cells", "print_lineage", "store_boards"]
# runtime.fork (the blueprint compiler, replay) is imported on use: the CLI starts without it.


async def store_boards(store: str | None) -> list[BoardInfo]:
    """Every board of ``store`` (a board's forks are found among them)."""
    async with opened_store(store, create=False) as st:
        found: list[BoardInfo] = await st.list_boards()
        return found


def fork_cells(boards: Sequence[BoardInfo]) -> dict[str, str]:
    """``PARENT@VERSION`` per board id (empty for a board that is no fork); ``{}`` when none of
    ``boards`` is a fork, so a store without forks gets no such column."""
    from ..runtime.fork import fork_parent

    parents = {b.board_id: fork_parent(b.meta) for b in boards}
    if all(p is None for p in parents.values()):
        return {}
    return {board: "" if p is None else f"{p[0]}@{p[1]}" for board, p in parents.items()}


def print_lineage(out: Any, info: BoardInfo, boards: Sequence[BoardInfo]) -> None:
    """Print ``info``'s lineage line on the console ``out`` (nothing for a board without one)."""
    from ..runtime.fork import lineage_line

    line = lineage_line(info, boards)
    if line:
        out.print(line)


def board_lineage(info: BoardInfo, boards: Sequence[BoardInfo]) -> dict[str, JSON]:
    """``parent`` and ``children`` of ``info`` for a ``--json`` output (``lineage_json``)."""
    from ..runtime.fork import lineage_json

    return lineage_json(info, boards)
