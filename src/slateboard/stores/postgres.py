"""PostgreSQL store: psycopg 3 (async) with a connection pool, for boards shared by many runners.

``postgresql://user@host:5432/db?schema=NAME&snapshot_every=N&pool_max=N``: the tables live in
schema ``NAME`` (default ``slateboard``; created on open), so several stores (or test runs) can
share one database without seeing each other's data. Other query parameters go to libpq.

Guarantees, on top of the Store protocol's:
- Group commit: appends go through a commit queue; appends queued while others commit go, up to
  ``BATCH_MAX`` at a time, into one transaction on one connection, each append inside its own
  savepoint (a lost compare-and-set rolls back only itself) and each acknowledged only after its
  batch's commit; several batches commit side by side, so concurrent boards share WAL flushes.
- An append is one database transaction (or a savepoint of a batch): a conditional ``UPDATE boards ... WHERE last_seq = ...
  AND last_hash = ...`` (the CAS: a concurrent writer blocks on the row lock, then finds the
  position moved and gets ``Conflict``), the record insert, the agenda rows it creates or
  completes and the snapshot when due. ``NOTIFY slateboard_<schema>`` is sent (at commit) when
  the append made new pending work (so does ``create_board`` with start invocations), so idle
  runners blocked in ``wait_for_work`` wake up; ``set_status`` sends ``NOTIFY sb_status_<schema>``
  with the board id, and every append (in its transaction) ``+`` and the board id: one listening
  connection per store object reads them and wakes the ``wait_for_board`` calls of that board.
- ``claim`` picks with ``FOR UPDATE SKIP LOCKED``: concurrent claimers never block each other
  and never get the same invocation.
- Connection failures raise ``StoreUnavailable`` and damaged data ``StoreCorrupt``; no psycopg
  exception escapes.
- Lease times are the client's clock (``time.time()``), like the other backends.

This module holds ``PostgresStore``, the protocol's storage steps in SQL. Beside it:
``_pg_connection`` (the pool, transactions, error translation, the commit queue), ``_pg_listen``
(the ``LISTEN`` connections), ``_pg_statements`` and ``_pg_rows`` (the SQL only PostgreSQL
runs, and its row operations).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import Invocation
from ..vocabulary import BOARD_RUNNING, BoardStatus
from . import _common as c
from . import _pg_rows as rows
from . import _pg_statements as sql
from . import _tx as shared
from ._pg_connection import BATCH_MAX, OPTIONS, Conn
from ._pg_listen import APPEND_NOTE, PostgresListening
from ._snapshots import SnapshotSource
from ._sql import BOARD_TABLES, POSTGRES
from .backend import NewBoard, NewRecord, claim_time
from .base import (
    BoardExists,
    BoardInfo,
    BoardNotFound,
    Claim,
    ClaimRequest,
    Conflict,
    KeepsLedgers,
    Lease,
    LeaseLost,
    LedgerHome,
    LoadedBoard,
    ServesManyRunners,
    Snapshot,
)

__all__ = ["APPEND_NOTE", "BATCH_MAX", "OPTIONS", "PostgresStore"]


class PostgresStore(PostgresListening, ServesManyRunners, KeepsLedgers):
    """A Store in a PostgreSQL schema (see the module docstring)."""

    def ledger_home(self) -> LedgerHome:
        """Spend ledgers live in this database (``KeepsLedgers``)."""
        return LedgerHome("postgresql", self.dsn)

    # -- boards -----------------------------------------------------------------------------------
    def _info(self, row: Sequence[Any]) -> BoardInfo:
        return shared.board_info(row, self._where)

    async def _board_row(self, conn: Conn, board_id: str) -> Sequence[Any]:
        cur = await conn.execute(POSTGRES.select_board, (board_id,))
        row = await cur.fetchone()
        if row is None:
            raise BoardNotFound(board_id)
        return tuple(row)

    async def _insert_board(self, new: NewBoard) -> BoardInfo:
        bid = new.board_id
        async with self._tx() as conn:
            t = c.now()
            cur = await conn.execute(
                POSTGRES.insert_board, (bid, new.name, new.blueprint, new.initial, new.meta, t, t, GENESIS)
            )
            if await cur.fetchone() is None:
                raise BoardExists(bid)
            if await rows.push(conn, bid, new.agenda):
                await conn.execute(sql.NOTIFY, (self.channel, bid))
            return self._info(await self._board_row(conn, bid))

    async def board_info(self, board_id: str) -> BoardInfo:
        """See Store.board_info."""
        async with self._conn() as conn:
            return self._info(await self._board_row(conn, board_id))

    async def _list_boards(self, status: BoardStatus | None) -> list[BoardInfo]:
        async with self._conn() as conn:
            cur = await conn.execute(*POSTGRES.list_boards_query(status))
            return [self._info(r) for r in await cur.fetchall()]

    async def _set_status(self, board_id: str, status: BoardStatus, reason: str | None) -> BoardInfo:
        async with self._tx() as conn:
            cur = await conn.execute(POSTGRES.set_status, (status, reason, c.now(), board_id))
            if cur.rowcount == 0:
                raise BoardNotFound(board_id)
            if status == BOARD_RUNNING:
                await conn.execute(sql.NOTIFY, (self.channel, board_id))
            await conn.execute(sql.NOTIFY, (self.status_channel, board_id))
            return self._info(await self._board_row(conn, board_id))

    async def delete_board(self, board_id: str) -> None:
        """See Store.delete_board."""
        async with self._tx() as conn:
            for table in BOARD_TABLES:
                await conn.execute(POSTGRES.delete_from(table), (board_id,))

    # -- log --------------------------------------------------------------------------------------
    async def _append_tx(self, conn: Conn, job: NewRecord) -> tuple[int, Claim | None]:
        board_id, record, changes = job.board_id, job.record, job.changes
        expected_version = job.expected_version
        simple = not changes.cancel and not job.requeues
        claim_q = None if job.claim is None else self._claim_query(board_id, job.claim, claim_time(job.claim))
        row = None
        done: set[str] = set()
        got = None
        if expected_version is None or expected_version == job.prev_version:
            # The common append (complete, push, claim) is sent at once (the connection is in
            # pipeline mode: see _drain), one round trip instead of one per statement. Its
            # statements run even when the CAS refuses; then this raises below and the caller
            # rolls the transaction (or savepoint) back.
            cur = await conn.execute(sql.APPEND, (*job.cas_args(c.now()), board_id, record.seq, job.data))
            # Watchers wake on the commit (sent in the pipeline: no round trip of its own; the
            # server folds one board's repeats within a batch; a refused CAS rolls it back).
            await conn.execute(sql.NOTIFY, (self.status_channel, APPEND_NOTE + board_id))
            if simple:
                done_cur = await rows.complete(conn, board_id, record.seq, changes.complete)
                await rows.send_push(conn, board_id, job.pushes, notify=self.channel)  # rows: not needed
                claim_cur = None if claim_q is None else await conn.execute(*claim_q)
            row = await cur.fetchone()
            if row is not None and simple:
                done = set() if done_cur is None else {r[0] for r in await done_cur.fetchall()}
                got = None if claim_cur is None else self._claimed(await claim_cur.fetchone(), claim_q)
        if row is None:
            info = self._info(await self._board_row(conn, board_id))
            c.check_position(
                board_id,
                record,
                last_seq=info.seq,
                last_hash=info.last_hash,
                version=info.version,
                expected_version=expected_version,
            )
            raise Conflict(board_id, f"record {record.seq} does not continue the log", actual_seq=info.seq)
        if simple:
            await rows.explain_incomplete(conn, board_id, [i for i in changes.complete if i not in done])
            return int(row[0]), got
        await rows.apply_agenda(conn, board_id, record.seq, changes, job.requeues)
        # Each push sends the work notification in its own statement when it adds a row (one
        # round trip less than a separate NOTIFY; repeats are folded by the server at commit).
        added = await rows.push(conn, board_id, job.pushes, notify=self.channel) if job.pushes else []
        if claim_q is not None:
            got = self._claimed(await (await conn.execute(*claim_q)).fetchone(), claim_q)
        if job.requeues and not added:
            await conn.execute(sql.NOTIFY, (self.channel, board_id))
        return int(row[0]), got

    async def _snapshot_source(self, board_id: str, seq: int) -> SnapshotSource | None:
        async with self._tx(repeatable=True) as conn:
            cur = await conn.execute(POSTGRES.select_initial_and_seq, (board_id,))
            brow = await cur.fetchone()
            if brow is None or int(brow[1]) < seq:
                return None
            cur = await conn.execute(POSTGRES.select_snapshot, (board_id,))
            srow = await cur.fetchone()
            start = int(srow[0]) if srow is not None else 0
            if start >= seq:
                return None
            cur = await conn.execute(POSTGRES.records_between, (board_id, start, seq))
            found = await cur.fetchall()
        return shared.snapshot_source(brow[0], srow, found)

    async def _put_snapshot(self, board_id: str, snap: Snapshot, blob: bytes) -> None:
        # No flush of its own (lease=True: synchronous_commit off): a lost snapshot is rebuilt.
        async with self._tx(lease=True) as conn:
            await rows.store_snapshot(conn, board_id, snap, blob)

    async def _read_records(self, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            return await self._records(conn, board_id, from_seq, limit)

    async def _records(self, conn: Conn, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        cur = await conn.execute(POSTGRES.records_from, (board_id, from_seq, None if limit is None else max(limit, 0)))
        return shared.records_from(await cur.fetchall(), from_seq, self._board_where(board_id))

    async def _load_board(self, board_id: str) -> LoadedBoard:
        where = self._board_where(board_id)
        async with self._tx(repeatable=True) as conn:
            info = self._info(await self._board_row(conn, board_id))
            cur = await conn.execute(POSTGRES.select_blueprint, (board_id,))
            row = await cur.fetchone()
            assert row is not None
            bp, init = row
            cur = await conn.execute(POSTGRES.select_snapshot, (board_id,))
            snapshot = shared.snapshot_of(await cur.fetchone(), where)
            start = snapshot.seq if snapshot else 0
            self.note_snapshot_seq(board_id, start)
            records = await self._records(conn, board_id, start + 1, None)
            agenda = await rows.agenda(conn, board_id, shared.LIVE, where)
        return shared.loaded_board(info, bp, init, snapshot, records, agenda, where)

    async def _write_snapshot(self, board_id: str, at: Snapshot, blob: bytes) -> None:
        async with self._tx() as conn:
            cur = await conn.execute(POSTGRES.record_at, (board_id, at.seq))
            row = await cur.fetchone()
            if row is None:
                await self._board_row(conn, board_id)
                raise Conflict(board_id, f"snapshot at record {at.seq}, which is not in the log")
            rec = c.decode_record(row[0], self._board_where(board_id), at.seq)
            shared.check_logged(board_id, rec, version=at.version, last_hash=at.last_hash, state_hash=at.state_hash)
            await rows.store_snapshot(conn, board_id, at, blob)

    # -- agenda -----------------------------------------------------------------------------------
    async def _push_invocations(self, board_id: str, new: list[tuple[Invocation, bytes]]) -> list[str]:
        async with self._tx() as conn:
            await self._board_row(conn, board_id)
            added = await rows.push(conn, board_id, new)
            if added:
                await conn.execute(sql.NOTIFY, (self.channel, board_id))
            return added

    async def _read_agenda(self, board_id: str, statuses: tuple[str, ...]) -> list[Invocation]:
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            return await rows.agenda(conn, board_id, statuses, self._board_where(board_id))

    async def leases(self, board_id: str) -> list[Lease]:
        """See ReportsLeases.leases."""
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            cur = await conn.execute(sql.LEASES, (board_id,))
            return [Lease(str(r[0]), str(r[1]), float(r[2])) for r in await cur.fetchall()]

    async def _claim(self, board_id: str | None, req: ClaimRequest) -> Claim | None:
        # ``FOR UPDATE SKIP LOCKED`` over the index of live invocations.
        query = self._claim_query(board_id, req, claim_time(req))
        async with self._tx(lease=True) as conn:
            if query is None:
                return None
            if board_id is not None:
                await self._board_row(conn, board_id)
            cur = await conn.execute(*query)
            return self._claimed(await cur.fetchone(), query)

    @staticmethod
    def _claim_query(board_id: str | None, req: ClaimRequest, t: float) -> tuple[str, list[Any]] | None:
        """The statement that picks and leases the best claimable invocation at time ``t``, with
        its parameters (the first three: owner, lease end, time); None when nothing may match."""
        terms = ["b.status = 'running'", POSTGRES.claimable("i2")]
        params: list[Any] = [t]
        if board_id is not None:
            terms.append("i2.board_id = %s")
            params.append(board_id)
        if req.worker_names is not None:
            if not list(req.worker_names):
                return None
            terms.append("i2.worker = ANY(%s)")
            params.append(list(req.worker_names))
        if req.invocation_id is not None:
            terms.append("i2.id = %s")
            params.append(req.invocation_id)
        return sql.claim(terms), [req.owner, t + req.lease_s, *params]

    def _claimed(self, row: Sequence[Any] | None, query: tuple[str, list[Any]] | None) -> Claim | None:
        """The claim a ``_claim_query`` statement made (its returned row), if any."""
        if row is None or query is None:
            return None
        return shared.claim_from(row, query[1][0], query[1][1], self._where)

    async def _heartbeat(self, board_id: str, invocation_id: str, owner: str, until: float) -> None:
        async with self._tx(lease=True) as conn:
            cur = await conn.execute(POSTGRES.heartbeat, (until, board_id, invocation_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"board {board_id}: invocation {invocation_id!r} is not claimed by {owner!r}")

    async def _release_expired(self, now: float) -> int:
        async with self._tx(lease=True) as conn:
            cur = await conn.execute(sql.EXPIRED_CLAIMS, (now,))
            expired = await cur.fetchall()
            for bid, inv_id in expired:
                await rows.requeue_row(conn, bid, inv_id, None, None)
            if expired:
                await conn.execute(sql.NOTIFY, (self.channel, ""))
        return len(expired)

    async def stalled_boards(self) -> list[str]:
        """Ids of running boards with no pending or claimed invocation (oldest first): nothing
        will ever be claimed for them, so a runner must end them (or commit their approvals)."""
        async with self._conn() as conn:
            cur = await conn.execute(POSTGRES.stalled_boards)
            return [r[0] for r in await cur.fetchall()]
