"""The PostgreSQL store's row operations on one connection inside a transaction the caller
holds: agenda pushes, completions, cancellations, re-queues, agenda reads, snapshots. On a
connection in pipeline mode (an append's batch) a statement is sent at once and waited for only
where its result is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncCursor

from ..scheduling.invocation import CANCELLED, CLAIMED, PENDING, Invocation
from . import _pg_statements as sql
from . import _tx as shared
from ._pg_connection import Conn
from ._sql import POSTGRES
from .base import AgendaChanges, Snapshot


def _insert_args(board_id: str, inv: Invocation, blob: bytes) -> tuple[Any, ...]:
    return (board_id, inv.id, inv.key, inv.worker, inv.priority, inv.order, inv.attempts, blob)


async def send_push(conn: Conn, board_id: str, rows: Sequence[tuple[Invocation, bytes]], *, notify: str) -> None:
    """Send the inserts of ``push``, each with its NOTIFY (pipeline mode: not waited for)."""
    for inv, blob in rows:
        await conn.execute(sql.PUSH_AND_NOTIFY, (*_insert_args(board_id, inv, blob), notify, board_id))


async def push(
    conn: Conn, board_id: str, rows: Sequence[tuple[Invocation, bytes]], *, notify: str | None = None
) -> list[str]:
    """Insert pending invocations (skipping taken ids and pending keys); the ids added.
    ``notify``: a channel that gets ``NOTIFY <channel>, board_id`` for each row added."""
    added: list[str] = []
    for inv, blob in rows:
        params = _insert_args(board_id, inv, blob)
        if notify is None:
            cur = await conn.execute(POSTGRES.insert_invocation, params)
        else:
            cur = await conn.execute(sql.PUSH_AND_NOTIFY, (*params, notify, board_id))
        if await cur.fetchone() is not None:
            added.append(inv.id)
    return added


async def complete(conn: Conn, board_id: str, seq: int, ids: Sequence[str]) -> AsyncCursor[Any] | None:
    """Send the UPDATE completing the live ones of ``ids`` (their ids come back); None when
    there are none."""
    if not ids:
        return None
    return await conn.execute(sql.COMPLETE, (seq, board_id, list(ids)))


async def explain_incomplete(conn: Conn, board_id: str, missing: Sequence[str]) -> None:
    """Raise the error for invocations an append could not complete (none: nothing)."""
    if not missing:
        return
    cur = await conn.execute(sql.WHY_INCOMPLETE, (board_id, list(missing)))
    found = {r[0]: (r[1], r[2]) for r in await cur.fetchall()}
    inv_id = missing[0]
    status, done_seq = found.get(inv_id, (None, None))
    shared.check_complete(board_id, inv_id, status, None if done_seq is None else int(done_seq))


async def _locked_status(conn: Conn, board_id: str, inv_id: str) -> str | None:
    cur = await conn.execute(sql.LOCK_INVOCATION_STATUS, (board_id, inv_id))
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def apply_agenda(
    conn: Conn,
    board_id: str,
    seq: int,
    changes: AgendaChanges,
    requeues: Sequence[tuple[Invocation, bytes]],
) -> None:
    """The completions, cancellations and re-queues of an append (``seq``: its record)."""
    cur = await complete(conn, board_id, seq, changes.complete)
    if cur is not None:
        done = {r[0] for r in await cur.fetchall()}
        await explain_incomplete(conn, board_id, [i for i in changes.complete if i not in done])
    for inv_id in changes.cancel:
        if shared.check_cancel(board_id, inv_id, await _locked_status(conn, board_id, inv_id)):
            await conn.execute(POSTGRES.cancel, (board_id, inv_id))
    for inv, blob in requeues:
        shared.check_requeue(board_id, inv.id, await _locked_status(conn, board_id, inv.id), changes)
        await requeue_row(conn, board_id, inv.id, blob, inv.attempts)


async def requeue_row(conn: Conn, board_id: str, inv_id: str, blob: bytes | None, attempts: int | None) -> None:
    """Put an invocation back to pending, or cancel it when its key is pending again."""
    cur = await conn.execute(sql.KEY_PENDING_ELSEWHERE, (board_id, inv_id))
    status = CANCELLED if await cur.fetchone() is not None else PENDING
    await conn.execute(POSTGRES.requeue, (status, blob, attempts, board_id, inv_id))


async def agenda(conn: Conn, board_id: str, statuses: tuple[str, ...], where: str) -> list[Invocation]:
    """The board's invocations in ``statuses``, in agenda order."""
    live = set(statuses) <= {PENDING, CLAIMED}
    cur = await conn.execute(sql.agenda(live), (board_id, list(statuses)))
    return shared.invocations_from(await cur.fetchall(), where)


async def store_snapshot(conn: Conn, board_id: str, at: Snapshot, blob: bytes) -> None:
    """Store ``blob`` as the snapshot at ``at``'s position unless the board already has one at
    that seq or later."""
    cur = await conn.execute(POSTGRES.advance_snapshot_seq, (at.seq, board_id, at.seq))
    if await cur.fetchone() is not None:
        await conn.execute(POSTGRES.upsert_snapshot, (board_id, at.seq, at.version, at.last_hash, at.state_hash, blob))
