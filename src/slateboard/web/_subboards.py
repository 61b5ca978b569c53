"""A board's sub-board links on the dashboard (issue 43): a child board's parent, and a parent's
child boards (``runtime.subboards``).

Pure over what it is given: the boards are the ones the request's store listed (for a tenant's
token, its ``TenantStore``), so neither side of a link ever names another tenant's board, and a
parent outside that list shows as ``exists: false`` with no name, as a deleted one does.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..runtime.children import subboard_children, subboard_link
from ..runtime.subboards import SUBBOARDS_META
from ..stores.base import BoardInfo
from ._shapes import board_json

__all__ = ["subboards_json"]


def _bound_seqs(records: Sequence[Record]) -> dict[str, int]:
    """For each child board a record of this log binds, the seq of the last record binding it
    (a retried invocation attaches to the same children, so later records bind them again)."""
    out: dict[str, int] = {}
    for r in records:
        bound = r.meta.get(SUBBOARDS_META) if isinstance(r.meta, dict) else None
        for entry in bound if isinstance(bound, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("board"), str):
                out[str(entry["board"])] = r.seq
    return out


def subboards_json(info: BoardInfo, boards: Sequence[BoardInfo], records: Sequence[Record]) -> dict[str, JSON]:
    """``{"parent", "children"}`` of board ``info`` among ``boards``, with ``records`` its log.

    ``parent`` is None for a board that is no sub-board; else the parent's ``board_id``, the
    ``invocation``, item ``index`` and ``worker`` that ran this board, and the parent's ``name``,
    ``status``, ``end_status`` with ``exists: true`` when it is among ``boards`` (else those
    are None and ``exists: false``). ``children`` are the boards this one ran through sub-board
    workers, by invocation then item index: each board's header (``board_json``), its
    ``invocation``, ``index`` and ``worker``, and ``bound_seq``, the seq of this log's record
    that binds it (None while its invocation has not proposed yet).
    """
    link = subboard_link(info.meta)
    parent: dict[str, JSON] | None = None
    if link is not None:
        found = next((b for b in boards if b.board_id == link["board"]), None)
        parent = {"board_id": link["board"], **{k: link[k] for k in ("invocation", "index", "worker")}}
        if found is None:
            parent.update(name=None, status=None, end_status=None, exists=False)
        else:
            shown = board_json(found)
            parent.update(name=found.name, status=shown["status"], end_status=shown["end_status"], exists=True)
    bound = _bound_seqs(records)
    children: list[JSON] = [
        {
            **board_json(b),
            **{k: child_link[k] for k in ("invocation", "index", "worker")},
            "bound_seq": bound.get(b.board_id),
        }
        for b, child_link in subboard_children(boards, info.board_id)
    ]
    return {"parent": parent, "children": children}
