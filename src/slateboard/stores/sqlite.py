"""SQLite store: one file, WAL, its calls on the event loop's thread (or one connection thread).

``sqlite:///abs/path.db`` (or ``sqlite://rel/path.db``; ``sqlite://`` alone uses the default file
under the user's data directory). Query options: ``snapshot_every=N`` (records between
snapshots), ``synchronous=full|normal``, ``busy_timeout_ms=N`` and ``writer=loop|thread``.

Guarantees, on top of the Store protocol's:
- Every write is one SQLite transaction started with ``BEGIN IMMEDIATE`` (the write lock is
  taken before the CAS is read, so two writers in different processes serialise and the second
  sees the first's record and gets ``Conflict``).
- Group commit: durable writes (appends, board creation, status changes) go through a commit
  queue; the writes queued together go into one transaction, each inside its own savepoint, so
  one failing (a lost compare-and-set, say) rolls back only itself, and each is acknowledged
  only after the batch's commit. One board appending alone pays one transaction per step
  (``append(..., claim=...)`` leases its next invocation in it).
- ``writer=loop`` (the default) runs the database calls on the event loop's own thread and
  drains the commit queue once per turn of the loop: the appends of every board whose step ran
  in that turn share one transaction and one flush, with no thread hand-off per statement (the
  connection thread needs the GIL back after each statement, which a busy loop may hold for
  the interpreter's 5 ms switch interval). A batch of several writes is flushed (its
  ``COMMIT``, an fsync at ``synchronous=full``) on the connection thread while the loop runs
  on; a write alone commits on the loop. Its connections wait for no lock: a call that finds
  the database locked by another process goes, with the calls after it, to the connection
  thread, which waits up to ``busy_timeout_ms``, so the loop never sleeps on a lock.
  ``writer=thread`` runs every call on the connection thread (the queue drained there), at a
  thread hand-off per call. Both give the guarantees above.
- Lease bookkeeping (claims, heartbeats, releases) and background snapshots commit on a second
  connection opened with ``synchronous=NORMAL`` (no per-claim ``PRAGMA`` switching): the WAL
  is append-only, so the next durable commit syncs those frames too, and losing a lease change
  to a power cut only makes an invocation claimable again, as an expired lease would.
- ``synchronous=full`` (the default) fsyncs the WAL at every commit: a returned append survives
  a power loss. ``synchronous=normal`` survives the death of the process but may lose the last
  commits on a power loss; it is faster on disks with slow syncs (see benchmarks/store.py).
- A file that is not an SQLite database, is truncated, or is damaged raises ``StoreCorrupt``
  naming the file and the problem; a locked file ``StoreUnavailable``; no sqlite3 exception
  escapes.

This module holds ``SqliteStore``, the protocol's storage steps: each method builds a function
of one ``sqlite3.Connection``, run synchronously where the writer runs calls. Beside it:
``_sqlite_file`` (the file a URL names, checked before SQLite opens it), ``_sqlite_connection``
(where calls run, the commit queue, error translation), ``_sqlite_statements`` and
``_sqlite_rows`` (the SQL only SQLite runs, and its row operations).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import Invocation
from ..vocabulary import BOARD_RUNNING, BoardStatus
from . import _common as c
from . import _sqlite_rows as rows
from . import _sqlite_statements as sql
from . import _tx as shared
from ._snapshots import SnapshotSource
from ._sql import BOARD_TABLES, SQLITE
from ._sqlite_connection import SqliteConnection
from ._sqlite_file import check_file, default_path, path_from_url
from ._wake import wake
from .backend import NewBoard, NewRecord, claim_time
from .base import (
    DEFAULT_SNAPSHOT_EVERY,
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
    Snapshot,
    StoreError,
)

OPTIONS = {"snapshot_every", "synchronous", "busy_timeout_ms", "writer"}

__all__ = ["OPTIONS", "SqliteStore", "check_file", "default_path", "path_from_url"]


class SqliteStore(SqliteConnection, KeepsLedgers):
    """A Store in one SQLite file (see the module docstring)."""

    _board_poll_s = 0.05  # another process may change a board: SQLite has no notifications

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        url: str | None = None,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        synchronous: str = "full",
        busy_timeout_ms: int = 30_000,
        writer: str = "loop",
    ) -> None:
        self._init_backend()
        self._init_connection(Path(path), synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, writer=writer)
        self.url = url or f"sqlite:///{self.path}"
        self.snapshot_every = snapshot_every

    def ledger_home(self) -> LedgerHome:
        """Spend ledgers live in this database file (``KeepsLedgers``)."""
        return LedgerHome("sqlite", str(self.path), self.busy_timeout_ms)

    @classmethod
    async def open(cls, url: str) -> SqliteStore:
        """Open (creating if needed) the file a URL names and bring its schema up to date."""
        _, opts = c.split_options(url, OPTIONS)
        unknown = set(urlsplit(url).query and dict(parse_qsl(urlsplit(url).query))) - OPTIONS
        if unknown:
            raise StoreError(
                f"unknown sqlite store options: {', '.join(sorted(unknown))} (known: {', '.join(sorted(OPTIONS))})"
            )
        store = cls(
            path_from_url(url),
            url=url,
            snapshot_every=c.int_option(opts, "snapshot_every", DEFAULT_SNAPSHOT_EVERY),
            synchronous=opts.get("synchronous", "full"),
            busy_timeout_ms=c.int_option(opts, "busy_timeout_ms", 30_000),
            writer=opts.get("writer", "loop"),
        )
        try:
            await store._run(store._open)
        except BaseException:
            await store.close()
            raise
        return store

    # -- boards -----------------------------------------------------------------------------------
    def _info(self, row: Sequence[Any]) -> BoardInfo:
        return shared.board_info(row, self._where)

    def _board_row(self, db: sqlite3.Connection, board_id: str) -> Sequence[Any]:
        row = db.execute(SQLITE.select_board, (board_id,)).fetchone()
        if row is None:
            raise BoardNotFound(board_id)
        return tuple(row)

    async def _insert_board(self, new: NewBoard) -> BoardInfo:
        bid = new.board_id

        def tx(db: sqlite3.Connection) -> BoardInfo:
            t = c.now()
            row = db.execute(
                SQLITE.insert_board, (bid, new.name, new.blueprint, new.initial, new.meta, t, t, GENESIS)
            ).fetchone()
            if row is None:
                raise BoardExists(bid)
            rows.push(db, bid, new.agenda)
            return self._info(self._board_row(db, bid))

        info = await self._w(tx)
        if new.agenda:
            self._wake()
        return info

    async def board_info(self, board_id: str) -> BoardInfo:
        """See Store.board_info."""
        return await self._r(lambda db: self._info(self._board_row(db, board_id)))

    async def _list_boards(self, status: BoardStatus | None) -> list[BoardInfo]:
        return await self._r(lambda db: [self._info(r) for r in db.execute(*SQLITE.list_boards_query(status))])

    async def _set_status(self, board_id: str, status: BoardStatus, reason: str | None) -> BoardInfo:
        def tx(db: sqlite3.Connection) -> BoardInfo:
            cur = db.execute(SQLITE.set_status, (status, reason, c.now(), board_id))
            if cur.rowcount == 0:
                raise BoardNotFound(board_id)
            return self._info(self._board_row(db, board_id))

        info = await self._w(tx)
        if status == BOARD_RUNNING:
            self._wake()
        return info

    async def delete_board(self, board_id: str) -> None:
        """See Store.delete_board."""

        def tx(db: sqlite3.Connection) -> None:
            for table in BOARD_TABLES:
                db.execute(SQLITE.delete_from(table), (board_id,))

        await self._w(tx)

    # -- log --------------------------------------------------------------------------------------
    def _commit_append(self, job: NewRecord) -> Awaitable[tuple[int, Claim | None]]:
        # Through the commit queue (see the module docstring): the transaction runs on the
        # connection thread, synchronously.
        return self._w(lambda db: self._append_tx(db, job))

    def _after_append(self, job: NewRecord) -> None:
        if job.pushes or job.requeues:
            self._wake()

    def _append_tx(self, db: sqlite3.Connection, job: NewRecord) -> tuple[int, Claim | None]:
        board_id, record = job.board_id, job.record
        expected_version = job.expected_version
        row = None
        if expected_version is None or expected_version == job.prev_version:
            # ``prev_version`` is the version check_position wants the board at.
            row = db.execute(sql.APPEND_CAS, job.cas_args(c.now())).fetchone()
        if row is None:
            # Not appended: read the board to say why (the same checks, in the same order).
            old = db.execute(sql.BOARD_POSITION, (board_id,)).fetchone()
            if old is None:
                raise BoardNotFound(board_id)
            c.check_position(
                board_id,
                record,
                last_seq=int(old[1]),
                last_hash=old[2],
                version=int(old[0]),
                expected_version=expected_version,
            )
            raise Conflict(board_id, f"record {record.seq} does not continue the log", actual_seq=int(old[1]))
        db.execute(sql.INSERT_RECORD, (board_id, record.seq, job.data))
        if job.changes.complete or job.changes.cancel or job.requeues:
            rows.apply_agenda(db, board_id, record.seq, job.changes, job.requeues)
        if job.pushes:
            rows.push(db, board_id, job.pushes)
        got = None
        if job.claim is not None:
            got = self._claim_tx(db, board_id, job.claim, claim_time(job.claim), board_status=row[1])
        return int(row[0]), got

    async def _snapshot_source(self, board_id: str, seq: int) -> SnapshotSource | None:
        def q(db: sqlite3.Connection) -> SnapshotSource | None:
            brow = db.execute(SQLITE.select_initial_and_seq, (board_id,)).fetchone()
            if brow is None or int(brow[1]) < seq:
                return None
            srow = db.execute(SQLITE.select_snapshot, (board_id,)).fetchone()
            start = int(srow[0]) if srow is not None else 0
            if start >= seq:
                return None
            return shared.snapshot_source(brow[0], srow, db.execute(SQLITE.records_between, (board_id, start, seq)))

        return await self._r(q)

    async def _put_snapshot(self, board_id: str, snap: Snapshot, blob: bytes) -> None:
        await self._w_lease(lambda db: rows.store_snapshot(db, board_id, snap, blob))

    async def _read_records(self, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        def q(db: sqlite3.Connection) -> list[Record]:
            self._board_row(db, board_id)
            return self._records(db, board_id, from_seq, limit)

        return await self._r(q)

    def _records(self, db: sqlite3.Connection, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        found = db.execute(SQLITE.records_from, (board_id, from_seq, -1 if limit is None else max(limit, 0)))
        return shared.records_from(found.fetchall(), from_seq, self._board_where(board_id))

    async def _load_board(self, board_id: str) -> LoadedBoard:
        def q(db: sqlite3.Connection) -> LoadedBoard:
            info = self._info(self._board_row(db, board_id))
            where = self._board_where(board_id)
            bp, init = db.execute(SQLITE.select_blueprint, (board_id,)).fetchone()
            snapshot = shared.snapshot_of(db.execute(SQLITE.select_snapshot, (board_id,)).fetchone(), where)
            start = snapshot.seq if snapshot else 0
            self.note_snapshot_seq(board_id, start)
            records = self._records(db, board_id, start + 1, None)
            agenda = rows.agenda(db, board_id, shared.LIVE, where)
            return shared.loaded_board(info, bp, init, snapshot, records, agenda, where)

        return await self._r(q)

    async def _write_snapshot(self, board_id: str, at: Snapshot, blob: bytes) -> None:
        def tx(db: sqlite3.Connection) -> None:
            row = db.execute(SQLITE.record_at, (board_id, at.seq)).fetchone()
            if row is None:
                self._board_row(db, board_id)
                raise Conflict(board_id, f"snapshot at record {at.seq}, which is not in the log")
            rec = c.decode_record(row[0], self._board_where(board_id), at.seq)
            shared.check_logged(board_id, rec, version=at.version, last_hash=at.last_hash, state_hash=at.state_hash)
            rows.store_snapshot(db, board_id, at, blob)

        await self._w(tx)

    # -- agenda -----------------------------------------------------------------------------------
    async def _push_invocations(self, board_id: str, new: list[tuple[Invocation, bytes]]) -> list[str]:
        def tx(db: sqlite3.Connection) -> list[str]:
            self._board_row(db, board_id)
            return rows.push(db, board_id, new)

        added = await self._w(tx)
        if added:
            self._wake()
        return added

    async def _read_agenda(self, board_id: str, statuses: tuple[str, ...]) -> list[Invocation]:
        def q(db: sqlite3.Connection) -> list[Invocation]:
            self._board_row(db, board_id)
            return rows.agenda(db, board_id, statuses, self._board_where(board_id))

        return await self._r(q)

    async def leases(self, board_id: str) -> list[Lease]:
        """See ReportsLeases.leases."""

        def q(db: sqlite3.Connection) -> list[Lease]:
            self._board_row(db, board_id)
            return [Lease(str(r[0]), str(r[1]), float(r[2])) for r in db.execute(sql.LEASES, (board_id,))]

        return await self._r(q)

    async def _claim(self, board_id: str | None, req: ClaimRequest) -> Claim | None:
        # Walks the index of live invocations only.
        return await self._w_lease(lambda db: self._claim_tx(db, board_id, req, claim_time(req)))

    def _claim_tx(
        self,
        db: sqlite3.Connection,
        board_id: str | None,
        req: ClaimRequest,
        t: float,
        *,
        board_status: str | None = None,
    ) -> Claim | None:
        """Lease the best claimable invocation (of ``board_id``, or of any running board) at
        time ``t``; ``board_status``: the board's status when the caller read it in this
        transaction."""
        terms = [SQLITE.claimable()]
        params: list[Any] = [t]
        if req.worker_names is not None:
            names = list(req.worker_names)
            if not names:
                return None
            terms.append(sql.workers_in(len(names)))
            params.extend(names)
        if req.invocation_id is not None:
            terms.append("i.id = ?")
            params.append(req.invocation_id)
        if board_id is not None:
            if board_status is None:
                status = db.execute(sql.BOARD_STATUS, (board_id,)).fetchone()
                if status is None:
                    raise BoardNotFound(board_id)
                board_status = status[0]
            if board_status != BOARD_RUNNING:
                return None
            params.insert(0, board_id)
        until = t + req.lease_s
        got = db.execute(sql.claim(board_id is not None, terms), (req.owner, until, *params)).fetchone()
        return None if got is None else shared.claim_from(got, req.owner, until, self._where)

    async def _heartbeat(self, board_id: str, invocation_id: str, owner: str, until: float) -> None:
        def tx(db: sqlite3.Connection) -> None:
            if db.execute(SQLITE.heartbeat, (until, board_id, invocation_id, owner)).rowcount == 0:
                raise LeaseLost(f"board {board_id}: invocation {invocation_id!r} is not claimed by {owner!r}")

        await self._w_lease(tx)

    async def _release_expired(self, now: float) -> int:
        def tx(db: sqlite3.Connection) -> int:
            expired = db.execute(SQLITE.expired_claims, (now,)).fetchall()
            for bid, inv_id in expired:
                rows.requeue_row(db, bid, inv_id, None, None)
            return len(expired)

        count = await self._w_lease(tx)
        if count:
            self._wake()
        return count

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See WatchesWork.wait_for_work: woken at once by pushes from this store object; pushes
        from other processes are seen by polling the file every 50 ms."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.add(fut)
        names = None if worker_names is None else list(worker_names)
        try:
            while not self._closed:
                if await self._r(lambda db: rows.has_work(db, names)):
                    return True
                left = deadline - loop.time()
                if left <= 0:
                    return False
                try:
                    return await asyncio.wait_for(asyncio.shield(fut), min(left, 0.05))
                except TimeoutError:
                    continue
            return False
        finally:
            self._waiters.discard(fut)

    async def stalled_boards(self) -> list[str]:
        """See ScansStalledBoards.stalled_boards (one query over the live-invocation index)."""
        return await self._r(lambda db: [r[0] for r in db.execute(SQLITE.stalled_boards)])

    def _wake(self) -> None:
        wake(self._waiters)
