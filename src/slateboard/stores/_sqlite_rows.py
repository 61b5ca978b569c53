"""The SQLite store's row operations on one connection inside a transaction the caller holds:
agenda pushes, completions, cancellations, re-queues, agenda reads, snapshots. Synchronous: they
run on the connection thread, in the commit loop's transaction when an append calls them."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ..scheduling.invocation import CANCELLED, CLAIMED, PENDING, Invocation
from . import _common as c
from . import _sqlite_statements as sql
from . import _tx as shared
from ._sql import SQLITE
from .base import AgendaChanges, Snapshot


def has_work(db: sqlite3.Connection, worker_names: list[str] | None) -> bool:
    """Whether a running board has a claimable invocation (of ``worker_names`` when given)."""
    terms = SQLITE.claimable()
    params: list[Any] = [c.now()]
    if worker_names is not None:
        if not worker_names:
            return False
        terms += " AND " + sql.workers_in(len(worker_names))
        params.extend(worker_names)
    return db.execute(sql.has_work(terms), params).fetchone() is not None


def push(db: sqlite3.Connection, board_id: str, rows: Sequence[tuple[Invocation, bytes]]) -> list[str]:
    """Insert pending invocations (skipping taken ids and pending keys); the ids added."""
    added: list[str] = []
    for inv, blob in rows:
        row = db.execute(
            SQLITE.insert_invocation,
            (board_id, inv.id, inv.key, inv.worker, inv.priority, inv.order, inv.attempts, blob),
        ).fetchone()
        if row is not None:
            added.append(inv.id)
    return added


def requeue_row(db: sqlite3.Connection, board_id: str, inv_id: str, blob: bytes | None, attempts: int | None) -> None:
    """Put an invocation back to pending, or cancel it when its key is pending again."""
    row = db.execute(sql.INVOCATION_KEY, (board_id, inv_id)).fetchone()
    clash = db.execute(sql.KEY_PENDING_ELSEWHERE, (board_id, row[0], inv_id)).fetchone()
    status = CANCELLED if clash else PENDING
    db.execute(SQLITE.requeue, (status, blob, attempts, board_id, inv_id))


def _status(db: sqlite3.Connection, board_id: str, inv_id: str) -> str | None:
    row = db.execute(SQLITE.invocation_status, (board_id, inv_id)).fetchone()
    return None if row is None else str(row[0])


def apply_agenda(
    db: sqlite3.Connection,
    board_id: str,
    seq: int,
    changes: AgendaChanges,
    requeues: Sequence[tuple[Invocation, bytes]],
) -> None:
    """The completions, cancellations and re-queues of an append (``seq``: its record)."""
    for inv_id in changes.complete:
        # Complete a live invocation in one statement; only when none matched, read why.
        if db.execute(sql.COMPLETE, (seq, board_id, inv_id)).fetchone() is not None:
            continue
        row = db.execute(sql.WHY_INCOMPLETE, (board_id, inv_id)).fetchone()
        status, done_seq = (None, None) if row is None else row
        shared.check_complete(board_id, inv_id, status, None if done_seq is None else int(done_seq))
    for inv_id in changes.cancel:
        if shared.check_cancel(board_id, inv_id, _status(db, board_id, inv_id)):
            db.execute(SQLITE.cancel, (board_id, inv_id))
    for inv, blob in requeues:
        shared.check_requeue(board_id, inv.id, _status(db, board_id, inv.id), changes)
        requeue_row(db, board_id, inv.id, blob, inv.attempts)


def agenda(db: sqlite3.Connection, board_id: str, statuses: tuple[str, ...], where: str) -> list[Invocation]:
    """The board's invocations in ``statuses``, in agenda order."""
    if not statuses:
        return []
    live = set(statuses) <= {PENDING, CLAIMED}
    found = db.execute(sql.agenda(len(statuses), live), (board_id, *statuses)).fetchall()
    return shared.invocations_from(found, where)


def store_snapshot(db: sqlite3.Connection, board_id: str, at: Snapshot, blob: bytes) -> None:
    """Store ``blob`` as the snapshot at ``at``'s position unless the board already has one at
    that seq or later."""
    if db.execute(SQLITE.advance_snapshot_seq, (at.seq, board_id, at.seq)).fetchone() is not None:
        db.execute(SQLITE.upsert_snapshot, (board_id, at.seq, at.version, at.last_hash, at.state_hash, blob))
