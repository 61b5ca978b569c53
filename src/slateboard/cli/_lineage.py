"""Fork lineage as ``boards``, ``show`` and ``log`` give it (issue 42): a fork's parent and the
version it was taken at, and a parent's forks (read from each board's ``parent`` binding, see
``slateboard.runtime.fork``); and sub-board links (issue 43): a child board's parent, and a
parent's child boards (``slateboard.runtime.children``). Both are read from the boards of the
store the command opened (a tenant's, with ``--tenant``), so no link crosses tenants."""

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
    line = _subboard_line(info, boards)
    if line:
        out.print(line, markup=False, highlight=False)


_SHOWN_CHILDREN = 20


def _subboard_line(info: BoardInfo, boards: Sequence[BoardInfo]) -> str | None:
    """One line naming ``info``'s parent board (worker, item, invocation) and its sub-boards."""
    from ..runtime.children import subboard_children, subboard_link
    from ..status import end_status

    parts = []
    link = subboard_link(info.meta)
    if link is not None:
        parts.append(
            f"sub-board of {link['board']} (worker {link['worker']}, item {link['index']},"
            f" invocation {link['invocation']})"
        )
    children = subboard_children(boards, info.board_id)
    if children:
        shown = ", ".join(
            f"{b.board_id} (item {k['index']}, {end_status(b.status, b.reason)})" for b, k in children[:_SHOWN_CHILDREN]
        )
        more = f" and {len(children) - _SHOWN_CHILDREN} more" if len(children) > _SHOWN_CHILDREN else ""
        parts.append(f"{len(children)} sub-board{'s' if len(children) != 1 else ''}: {shown}{more}")
    return "; ".join(parts) or None


def board_lineage(info: BoardInfo, boards: Sequence[BoardInfo]) -> dict[str, JSON]:
    """``parent`` and ``children`` of ``info`` for a ``--json`` output (``lineage_json``), and
    its sub-board links: ``subboard_of`` (``{"board", "invocation", "index", "worker"}``, None
    for a board that is no sub-board) and ``subboards`` (its child boards, by invocation then
    item: ``board_id``, ``invocation``, ``index``, ``worker``, ``status``, ``end_status``)."""
    from ..runtime.children import subboard_children, subboard_link
    from ..runtime.fork import lineage_json
    from ..status import end_status

    children: list[JSON] = [
        {
            "board_id": b.board_id,
            **{k: link[k] for k in ("invocation", "index", "worker")},
            "status": b.status,
            "end_status": end_status(b.status, b.reason),
        }
        for b, link in subboard_children(boards, info.board_id)
    ]
    return {**lineage_json(info, boards), "subboard_of": subboard_link(info.meta), "subboards": children}
