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
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from psycopg import AsyncConnection, AsyncCursor, errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..kernel.canonical import JSON
from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import CANCELLED, CLAIMED, PENDING, Invocation
from . import _common as c
from . import _tx as shared
from ._sql import BOARD_TABLES, POSTGRES
from .backend import NewRecord, SnapshotSource, StoreBackend
from .base import (
    DEFAULT_LEASE_S,
    DEFAULT_SNAPSHOT_EVERY,
    AgendaChanges,
    AppendResult,
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
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    ServesManyRunners,
    Snapshot,
    Store,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreUnavailable,
    WatchesBoards,
    WatchesWork,
)
from .migrations import POSTGRES_MIGRATIONS, SCHEMA_TABLE

OPTIONS = {"schema", "snapshot_every", "pool_min", "pool_max", "connect_timeout_s"}
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
Conn = AsyncConnection[Any]
BATCH_MAX = 4
APPEND_NOTE = "+"
"""Prefix of the board id in the status channel's payload when the NOTIFY comes from an append."""
"""Appends per group-commit transaction (more batches then run side by side)."""


class PostgresStore(
    StoreBackend,
    Store,
    WatchesWork,
    WatchesBoards,
    ScansStalledBoards,
    ReportsCommits,
    ReportsLeases,
    ServesManyRunners,
    KeepsLedgers,
):
    """A Store in a PostgreSQL schema (see module docstring)."""

    def __init__(
        self,
        url: str,
        dsn: str,
        pool: AsyncConnectionPool,
        *,
        schema: str,
        snapshot_every: int,
    ) -> None:
        self._init_backend()
        self.url = url
        self.dsn = dsn
        self.schema = schema
        self.snapshot_every = snapshot_every
        self.channel = f"slateboard_{schema}"
        self.status_channel = f"sb_status_{schema}"
        self._pool = pool
        self._where = f"{c.redact(dsn)} schema {schema}"
        self._listener: Conn | None = None
        self._listen_lock = asyncio.Lock()
        self._status_listener: Conn | None = None
        self._status_lock = asyncio.Lock()
        self._status_task: asyncio.Task[None] | None = None
        self._board_waiters: dict[str, set[tuple[asyncio.Future[None], bool]]] = {}
        """Who waits on which board (``wait_for_board``): a future, and whether appends wake it."""
        self._closed = False
        # The commit queue: appends wait here while the previous batch commits.
        self._queue: list[tuple[NewRecord, asyncio.Future[tuple[int, Claim | None]]]] = []
        self._drainers: set[asyncio.Task[None]] = set()

    def ledger_home(self) -> LedgerHome:
        """Spend ledgers live in this database (``KeepsLedgers``)."""
        return LedgerHome("postgresql", self.dsn)

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> PostgresStore:
        """Connect, create the schema if needed and apply the migrations it lacks. With
        ``create=False`` (read-only commands) a schema without slateboard's tables raises
        ``StoreMissing`` and nothing is created."""
        dsn, opts = c.split_options(url, OPTIONS)
        dsn = "postgresql" + dsn[dsn.index(":") :] if dsn.startswith("postgres:") else dsn
        schema = opts.get("schema", "slateboard")
        if not _IDENT.match(schema):
            raise StoreError(f"postgresql store schema {schema!r}: use lowercase letters, digits and _ (max 51)")
        timeout = float(c.int_option(opts, "connect_timeout_s", 10, minimum=1))
        where = c.redact(dsn)
        # A direct connection first: its error names the reason, which a pool timeout would not.
        try:
            probe = await AsyncConnection.connect(dsn, autocommit=True, connect_timeout=int(timeout))
            try:
                if not create:
                    found = await probe.execute(
                        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
                        (schema, SCHEMA_TABLE),
                    )
                    if await found.fetchone() is None:
                        raise StoreMissing(
                            f"{where}: schema {schema!r} holds no slateboard store: nothing to read (a run creates it)"
                        )
            finally:
                await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(f"{where}: cannot connect ({_first_line(exc)})") from None
        pool = AsyncConnectionPool(
            dsn,
            min_size=c.int_option(opts, "pool_min", 1, minimum=0),
            max_size=c.int_option(opts, "pool_max", 8, minimum=1),
            kwargs={"autocommit": True, "options": f"-c search_path={schema}"},
            open=False,
            timeout=timeout,
        )
        try:
            await pool.open(wait=True, timeout=timeout)
        except (PoolTimeout, psycopg.Error) as exc:
            await pool.close()
            raise StoreUnavailable(f"{where}: cannot open a connection pool ({_first_line(exc)})") from None
        store = cls(
            url,
            dsn,
            pool,
            schema=schema,
            snapshot_every=c.int_option(opts, "snapshot_every", DEFAULT_SNAPSHOT_EVERY),
        )
        try:
            await store._migrate()
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        """Close the pool and the listening connection (idempotent)."""
        if self._closed:
            return
        await self.settle_snapshots()
        if self._drainers:
            await asyncio.gather(*self._drainers, return_exceptions=True)
        self._closed = True
        if self._status_task is not None and not self._status_task.done():
            self._status_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._status_task  # it closes its connection and wakes every waiter
        for listener in (self._listener, self._status_listener):
            if listener is not None:
                with contextlib.suppress(psycopg.Error):
                    await listener.close()
        self._listener = self._status_listener = None
        await self._pool.close()

    async def drop_schema(self) -> None:
        """Drop this store's schema with every board in it (tests and tear-down only)."""
        async with self._conn() as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    # -- plumbing ---------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _conn(self) -> AsyncIterator[Conn]:
        if self._closed:
            raise shared.closed(self._where)
        try:
            async with self._pool.connection() as conn:
                yield conn
        except StoreError:
            raise
        except PoolTimeout as exc:
            raise StoreUnavailable(f"{self._where}: no database connection available ({exc})") from None
        except psycopg.Error as exc:
            raise self._translate(exc) from None

    @contextlib.asynccontextmanager
    async def _tx(self, *, repeatable: bool = False, lease: bool = False) -> AsyncIterator[Conn]:
        """A transaction; ``lease=True`` for lease bookkeeping (claim, heartbeat, release), which
        commits without waiting for its WAL flush: the WAL is sequential, so the next durable
        commit flushes it too, and losing a lease change to a server crash only makes the
        invocation claimable again, as an expired lease would."""
        async with self._conn() as conn, conn.transaction():
            if repeatable:
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            elif lease:
                await conn.execute("SET LOCAL synchronous_commit = off")
            yield conn

    def _translate(self, exc: psycopg.Error) -> StoreError:
        msg = _first_line(exc)
        if isinstance(exc, (errors.UndefinedTable, errors.UndefinedColumn, errors.InvalidSchemaName)):
            return StoreCorrupt(self._where, f"the slateboard tables are damaged or missing ({msg})")
        if isinstance(exc, (errors.DataCorrupted, errors.IndexCorrupted)):
            return StoreCorrupt(self._where, f"the database reports damaged data ({msg})")
        if isinstance(exc, psycopg.OperationalError):
            return StoreUnavailable(f"{self._where}: {msg}")
        return StoreError(f"{self._where}: {type(exc).__name__}: {msg}")

    async def _migrate(self) -> None:
        async with self._tx() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"slateboard:{self.schema}",))
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            cur = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (self.schema,)
            )
            tables = {r[0] for r in await cur.fetchall()}
            current = 0
            if SCHEMA_TABLE in tables:
                cur = await conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}")
                row = await cur.fetchone()
                current = int(row[0] or 0) if row else 0
            elif tables:
                raise StoreCorrupt(
                    self._where,
                    f"not a slateboard store: schema {self.schema} holds other tables ({', '.join(sorted(tables)[:6])})",
                )
            shared.check_schema(current, self._where)
            for version, statements in POSTGRES_MIGRATIONS:
                if version <= current:
                    continue
                for stmt in statements:
                    await conn.execute(stmt)
                await conn.execute(
                    f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (%s, %s)", (version, c.now())
                )

    async def schema_version(self) -> int:
        """The schema version stored in the database."""
        async with self._conn() as conn:
            cur = await conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}")
            row = await cur.fetchone()
            return int(row[0] or 0) if row else 0

    # -- boards -----------------------------------------------------------------------------------
    def _info(self, row: Sequence[Any]) -> BoardInfo:
        return shared.board_info(row, self._where)

    async def _board_row(self, conn: Conn, board_id: str, *, lock: bool = False) -> Sequence[Any]:
        cur = await conn.execute(
            POSTGRES.select_board + (" FOR UPDATE" if lock else ""),
            (board_id,),
        )
        row = await cur.fetchone()
        if row is None:
            raise BoardNotFound(board_id)
        return tuple(row)

    async def create_board(
        self,
        blueprint: dict[str, Any],
        initial_state: JSON,
        *,
        board_id: str | None = None,
        name: str | None = None,
        meta: dict[str, JSON] | None = None,
        agenda: Sequence[Invocation] = (),
    ) -> BoardInfo:
        """See Store.create_board."""
        new = self.prepare_board(blueprint, initial_state, board_id=board_id, name=name, meta=meta, agenda=agenda)
        bid, label, bp, init, meta_b, rows = new.board_id, new.name, new.blueprint, new.initial, new.meta, new.agenda
        async with self._tx() as conn:
            t = c.now()
            cur = await conn.execute(POSTGRES.insert_board, (bid, label, bp, init, meta_b, t, t, GENESIS))
            if await cur.fetchone() is None:
                raise BoardExists(bid)
            if await self._push(conn, bid, rows):
                await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, bid))
            return self._info(await self._board_row(conn, bid))

    async def board_info(self, board_id: str) -> BoardInfo:
        """See Store.board_info."""
        async with self._conn() as conn:
            return self._info(await self._board_row(conn, board_id))

    async def list_boards(self, *, status: str | None = None) -> list[BoardInfo]:
        """See Store.list_boards."""
        async with self._conn() as conn:
            if status is None:
                cur = await conn.execute(POSTGRES.list_boards)
            else:
                cur = await conn.execute(POSTGRES.list_boards_in, (status,))
            return [self._info(r) for r in await cur.fetchall()]

    async def set_status(self, board_id: str, status: str, reason: str | None = None) -> BoardInfo:
        """See Store.set_status."""
        shared.check_status(status)
        async with self._tx() as conn:
            cur = await conn.execute(POSTGRES.set_status, (status, reason, c.now(), board_id))
            if cur.rowcount == 0:
                raise BoardNotFound(board_id)
            if status == "running":
                await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, board_id))
            await conn.execute("SELECT pg_notify(%s, %s)", (self.status_channel, board_id))
            return self._info(await self._board_row(conn, board_id))

    async def delete_board(self, board_id: str) -> None:
        """See Store.delete_board."""
        async with self._tx() as conn:
            for table in BOARD_TABLES:
                await conn.execute(POSTGRES.delete_from(table), (board_id,))

    # -- log --------------------------------------------------------------------------------------
    async def append(
        self,
        board_id: str,
        record: Record,
        *,
        agenda: AgendaChanges | None = None,
        expected_version: int | None = None,
        state: JSON = None,
        claim: ClaimRequest | None = None,
    ) -> AppendResult:
        """See Store.append (through the commit queue: see the module docstring)."""
        job = self.prepare_append(
            board_id, record, agenda=agenda, expected_version=expected_version, state=state, claim=claim
        )
        if self._closed:
            raise shared.closed(self._where)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[int, Claim | None]] = loop.create_future()
        self._queue.append((job, fut))
        # One drainer per BATCH_MAX queued appends, up to the pool's size less one (claims and
        # reads need a connection too): batches commit side by side on their own connections,
        # and the server's WAL flush covers concurrent commits together, while the savepoints
        # of one batch run one round trip after another on its connection.
        limit = max(1, self._pool.max_size - 1)
        active = sum(1 for t in self._drainers if not t.done())  # a finished one may await its discard
        if active < limit and len(self._queue) > BATCH_MAX * active:
            task = loop.create_task(self._drain())
            self._drainers.add(task)
            task.add_done_callback(self._drainers.discard)
        snap_seq, got = await fut
        return self.finish_append(job, snap_seq, got)

    async def _drain(self) -> None:
        """Commit the queued appends, batch after batch: everything queued while the previous
        batch was flushing goes into one transaction, each append in its own savepoint."""
        while self._queue:
            batch = self._queue[:BATCH_MAX]
            del self._queue[:BATCH_MAX]
            outcomes: list[shared.Outcome] = []
            try:
                # Pipeline mode: BEGIN, each SAVEPOINT/RELEASE and the COMMIT travel with the
                # appends' statements; the connection waits only where a result is read.
                async with self._conn() as conn, conn.pipeline(), conn.transaction():
                    for job, _ in batch:
                        try:
                            if len(batch) == 1:
                                out = await self._append_tx(conn, job)
                            else:
                                async with conn.transaction():  # a savepoint
                                    out = await self._append_tx(conn, job)
                            outcomes.append((True, out))
                        except StoreError as exc:
                            if len(batch) == 1:
                                raise
                            outcomes.append((False, exc))
                        except psycopg.Error as exc:
                            if len(batch) == 1 or isinstance(exc, psycopg.OperationalError):
                                raise
                            outcomes.append((False, self._translate(exc)))
                    if not any(ok for ok, _ in outcomes):
                        raise psycopg.Rollback()
                if any(ok for ok, _ in outcomes):
                    self.count_flush()
            except Exception as exc:  # the transaction failed (translated by _conn): every append in it fails
                outcomes = [(False, exc)] * len(batch)
            shared.deliver((fut, outcome) for (_, fut), outcome in zip(batch, outcomes, strict=False))

    async def _append_tx(self, conn: Conn, job: NewRecord) -> tuple[int, Claim | None]:
        board_id, record, changes = job.board_id, job.record, job.changes
        expected_version = job.expected_version
        simple = not changes.cancel and not job.requeues
        claim_q = None
        if job.claim is not None:
            req = job.claim
            t = c.now() if req.now is None else req.now
            claim_q = self._claim_query(board_id, req.owner, t, req.lease_s, req.worker_names, req.invocation_id)
        row = None
        done: set[str] = set()
        got = None
        if expected_version is None or expected_version == job.prev_version:
            # The common append (complete, push, claim) is sent at once (the connection is in
            # pipeline mode: see _drain), one round trip instead of one per statement. Its
            # statements run even when the CAS refuses; then this raises below and the caller
            # rolls the transaction (or savepoint) back.
            cur = await conn.execute(
                # The CAS and the record insert in one statement: no row from the UPDATE, no insert.
                "WITH b AS (UPDATE boards SET version = %s, last_seq = %s, last_hash = %s, updated_at = %s"
                " WHERE board_id = %s AND last_seq = %s AND last_hash = %s AND version = %s"
                " RETURNING snapshot_seq)"
                " INSERT INTO records (board_id, seq, data) SELECT %s, %s, %s FROM b"
                " RETURNING (SELECT snapshot_seq FROM b)",
                (*job.cas_args(c.now()), board_id, record.seq, job.data),
            )
            # Watchers wake on the commit (sent in the pipeline: no round trip of its own; the
            # server folds one board's repeats within a batch; a refused CAS rolls it back).
            await conn.execute("SELECT pg_notify(%s, %s)", (self.status_channel, APPEND_NOTE + board_id))
            if simple:
                done_cur = await self._complete(conn, board_id, record.seq, changes.complete)
                await self._send_push(conn, board_id, job.pushes, notify=self.channel)  # rows: not needed
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
            await self._explain_incomplete(conn, board_id, [i for i in changes.complete if i not in done])
            return int(row[0]), got
        await self._apply_agenda(conn, board_id, record.seq, changes, job.requeues)
        # Each push sends the work notification in its own statement when it adds a row (one
        # round trip less than a separate NOTIFY; repeats are folded by the server at commit).
        added = await self._push(conn, board_id, job.pushes, notify=self.channel) if job.pushes else []
        if claim_q is not None:
            got = self._claimed(await (await conn.execute(*claim_q)).fetchone(), claim_q)
        if job.requeues and not added:
            await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, board_id))
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
            rows = await cur.fetchall()
        return shared.snapshot_source(brow[0], srow, rows)

    async def _put_snapshot(self, board_id: str, snap: Snapshot, blob: bytes) -> None:
        # No flush of its own (lease=True: synchronous_commit off): a lost snapshot is rebuilt.
        async with self._tx(lease=True) as conn:
            await _store_snapshot(conn, board_id, snap.seq, snap.version, snap.last_hash, snap.state_hash, blob)

    async def _apply_agenda(
        self,
        conn: Conn,
        board_id: str,
        seq: int,
        changes: AgendaChanges,
        requeues: Sequence[tuple[Invocation, bytes]],
    ) -> None:
        cur = await self._complete(conn, board_id, seq, changes.complete)
        if cur is not None:
            done = {r[0] for r in await cur.fetchall()}
            await self._explain_incomplete(conn, board_id, [i for i in changes.complete if i not in done])
        for inv_id in changes.cancel:
            cur = await conn.execute(
                "SELECT status FROM invocations WHERE board_id = %s AND id = %s FOR UPDATE", (board_id, inv_id)
            )
            row = await cur.fetchone()
            if shared.check_cancel(board_id, inv_id, None if row is None else row[0]):
                await conn.execute(POSTGRES.cancel, (board_id, inv_id))
        for inv, blob in requeues:
            cur = await conn.execute(
                "SELECT status FROM invocations WHERE board_id = %s AND id = %s FOR UPDATE", (board_id, inv.id)
            )
            row = await cur.fetchone()
            shared.check_requeue(board_id, inv.id, None if row is None else row[0], changes)
            await _requeue_row(conn, board_id, inv.id, blob, inv.attempts)

    @staticmethod
    async def _complete(conn: Conn, board_id: str, seq: int, ids: Sequence[str]) -> AsyncCursor | None:
        """Send the UPDATE completing the live ones of ``ids`` (their ids come back); None when
        there are none."""
        if not ids:
            return None
        return await conn.execute(
            "UPDATE invocations SET status = 'done', done_seq = %s, owner = NULL, lease_until = NULL"
            " WHERE board_id = %s AND id = ANY(%s) AND status IN ('pending', 'claimed') RETURNING id",
            (seq, board_id, list(ids)),
        )

    @staticmethod
    async def _explain_incomplete(conn: Conn, board_id: str, missing: Sequence[str]) -> None:
        """Raise the error for invocations an append could not complete (none: nothing)."""
        if not missing:
            return
        cur = await conn.execute(
            "SELECT id, status, done_seq FROM invocations WHERE board_id = %s AND id = ANY(%s)",
            (board_id, list(missing)),
        )
        found = {r[0]: (r[1], r[2]) for r in await cur.fetchall()}
        inv_id = missing[0]
        status, done_seq = found.get(inv_id, (None, None))
        shared.check_complete(board_id, inv_id, status, None if done_seq is None else int(done_seq))

    @staticmethod
    async def _send_push(conn: Conn, board_id: str, rows: Sequence[tuple[Invocation, bytes]], *, notify: str) -> None:
        """Send the inserts of ``_push``, each with its NOTIFY (pipeline mode: not waited for)."""
        sql = f"WITH ins AS ({POSTGRES.insert_invocation}) SELECT id, pg_notify(%s, %s) FROM ins"
        for inv, blob in rows:
            params = (board_id, inv.id, inv.key, inv.worker, inv.priority, inv.order, inv.attempts, blob)
            await conn.execute(sql, (*params, notify, board_id))

    @staticmethod
    async def _push(
        conn: Conn, board_id: str, rows: Sequence[tuple[Invocation, bytes]], *, notify: str | None = None
    ) -> list[str]:
        """Insert pending invocations (skipping taken ids and pending keys); the ids added.
        ``notify``: a channel that gets ``NOTIFY <channel>, board_id`` for each row added."""
        added: list[str] = []
        sql = POSTGRES.insert_invocation
        if notify is not None:
            sql = f"WITH ins AS ({sql}) SELECT id, pg_notify(%s, %s) FROM ins"
        for inv, blob in rows:
            params: tuple[Any, ...] = (
                board_id,
                inv.id,
                inv.key,
                inv.worker,
                inv.priority,
                inv.order,
                inv.attempts,
                blob,
            )
            cur = await conn.execute(sql, params if notify is None else (*params, notify, board_id))
            if await cur.fetchone() is not None:
                added.append(inv.id)
        return added

    async def read_records(self, board_id: str, from_seq: int = 1, *, limit: int | None = None) -> list[Record]:
        """See Store.read_records."""
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            return await self._records(conn, board_id, from_seq, limit)

    async def _records(self, conn: Conn, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        cur = await conn.execute(POSTGRES.records_from, (board_id, from_seq, None if limit is None else max(limit, 0)))
        return shared.records_from(await cur.fetchall(), from_seq, f"{self._where} board {board_id}")

    async def load_board(self, board_id: str) -> LoadedBoard:
        """See Store.load_board."""
        await self.settle_snapshots(board_id)
        where = f"{self._where} board {board_id}"
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
            agenda = await _agenda(conn, board_id, shared.LIVE, where)
        return shared.loaded_board(info, bp, init, snapshot, records, agenda, where)

    async def write_snapshot(
        self, board_id: str, state: JSON, *, version: int, seq: int, last_hash: str, state_hash: str
    ) -> None:
        """See Store.write_snapshot."""
        blob = c.encode_json(state)
        async with self._tx() as conn:
            cur = await conn.execute(POSTGRES.record_at, (board_id, seq))
            row = await cur.fetchone()
            if row is None:
                await self._board_row(conn, board_id)
                raise Conflict(board_id, f"snapshot at record {seq}, which is not in the log")
            rec = c.decode_record(row[0], f"{self._where} board {board_id}", seq)
            shared.check_logged(board_id, rec, version=version, last_hash=last_hash, state_hash=state_hash)
            await _store_snapshot(conn, board_id, seq, version, last_hash, state_hash, blob)

    async def compact(self, board_id: str) -> Snapshot | None:
        """See Store.compact."""
        return await c.compact(self, board_id, self._where)

    # -- agenda -----------------------------------------------------------------------------------
    async def push_invocations(self, board_id: str, invocations: Sequence[Invocation]) -> list[str]:
        """See Store.push_invocations."""
        rows = [(inv, c.encode_invocation(inv)) for inv in invocations]
        async with self._tx() as conn:
            await self._board_row(conn, board_id)
            added = await self._push(conn, board_id, rows)
            if added:
                await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, board_id))
            return added

    async def agenda(self, board_id: str, statuses: Sequence[str] = (PENDING, CLAIMED)) -> list[Invocation]:
        """See Store.agenda."""
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            return await _agenda(conn, board_id, tuple(statuses), f"{self._where} board {board_id}")

    async def leases(self, board_id: str) -> list[Lease]:
        """See ReportsLeases.leases."""
        async with self._tx(repeatable=True) as conn:
            await self._board_row(conn, board_id)
            cur = await conn.execute(
                "SELECT id, owner, lease_until FROM invocations WHERE board_id = %s AND status = 'claimed'"
                " AND owner IS NOT NULL AND lease_until IS NOT NULL ORDER BY id",
                (board_id,),
            )
            return [Lease(str(r[0]), str(r[1]), float(r[2])) for r in await cur.fetchall()]

    async def claim(
        self,
        board_id: str | None,
        *,
        owner: str,
        lease_s: float = DEFAULT_LEASE_S,
        worker_names: Sequence[str] | None = None,
        now: float | None = None,
        invocation_id: str | None = None,
    ) -> Claim | None:
        """See Store.claim (``FOR UPDATE SKIP LOCKED`` over the index of live invocations)."""
        t = c.now() if now is None else now
        async with self._tx(lease=True) as conn:
            return await self._claim_tx(conn, board_id, owner, t, lease_s, worker_names, invocation_id)

    async def _claim_tx(
        self,
        conn: Conn,
        board_id: str | None,
        owner: str,
        t: float,
        lease_s: float,
        worker_names: Sequence[str] | None,
        invocation_id: str | None,
    ) -> Claim | None:
        """Lease the best claimable invocation (of ``board_id``, or of any running board)."""
        query = self._claim_query(board_id, owner, t, lease_s, worker_names, invocation_id)
        if query is None:
            return None
        if board_id is not None:
            await self._board_row(conn, board_id)
        cur = await conn.execute(*query)
        return self._claimed(await cur.fetchone(), query)

    @staticmethod
    def _claim_query(
        board_id: str | None,
        owner: str,
        t: float,
        lease_s: float,
        worker_names: Sequence[str] | None,
        invocation_id: str | None,
    ) -> tuple[str, list[Any]] | None:
        """The statement that picks and leases the best claimable invocation, with its
        parameters (the first three: owner, lease end, time); None when nothing may match."""
        until = t + lease_s
        # ``status IN ('pending', 'claimed')`` is spelt out so the planner can use the partial
        # indexes over live invocations (migrations 2 and 3), whatever the board's history.
        where = ["b.status = 'running'", POSTGRES.claimable("i2")]
        params: list[Any] = [t]
        if board_id is not None:
            where.append("i2.board_id = %s")
            params.append(board_id)
        if worker_names is not None:
            if not list(worker_names):
                return None
            where.append("i2.worker = ANY(%s)")
            params.append(list(worker_names))
        if invocation_id is not None:
            where.append("i2.id = %s")
            params.append(invocation_id)
        return (
            "UPDATE invocations i SET status = 'claimed', owner = %s, lease_until = %s, claims = i.claims + 1"
            " FROM (SELECT i2.board_id, i2.id FROM invocations i2 JOIN boards b ON b.board_id = i2.board_id"
            f" WHERE {' AND '.join(where)} ORDER BY i2.priority DESC, i2.ord, i2.created LIMIT 1"
            " FOR UPDATE OF i2 SKIP LOCKED) pick"
            " WHERE i.board_id = pick.board_id AND i.id = pick.id"
            " RETURNING i.board_id, i.data, i.attempts, i.claims",
            [owner, until, *params],
        )

    def _claimed(self, row: Sequence[Any] | None, query: tuple[str, list[Any]] | None) -> Claim | None:
        """The claim a ``_claim_query`` statement made (its returned row), if any."""
        if row is None or query is None:
            return None
        return shared.claim_from(row, query[1][0], query[1][1], self._where)

    async def heartbeat(
        self, board_id: str, invocation_id: str, *, owner: str, lease_s: float, now: float | None = None
    ) -> float:
        """See Store.heartbeat."""
        until = (c.now() if now is None else now) + lease_s
        async with self._tx(lease=True) as conn:
            cur = await conn.execute(POSTGRES.heartbeat, (until, board_id, invocation_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"board {board_id}: invocation {invocation_id!r} is not claimed by {owner!r}")
        return until

    async def release_expired(self, now: float | None = None) -> int:
        """See Store.release_expired."""
        t = c.now() if now is None else now
        async with self._tx(lease=True) as conn:
            cur = await conn.execute(
                "SELECT board_id, id FROM invocations WHERE status = 'claimed' AND lease_until <= %s"
                " ORDER BY created FOR UPDATE SKIP LOCKED",
                (t,),
            )
            rows = await cur.fetchall()
            for bid, inv_id in rows:
                await _requeue_row(conn, bid, inv_id, None, None)
            if rows:
                await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, ""))
        return len(rows)

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See Store.wait_for_work: ``LISTEN slateboard_<schema>`` on a dedicated connection.

        The connection stays listening between calls, so a notification sent while the caller
        was busy (claiming, say) is not lost: the next call returns at once. When the listening
        connection is (re)opened, work already there returns at once too: a pending invocation,
        or a claimed one whose lease expired, of a running board (of one of ``worker_names`` when
        given, so a runner that serves only some workers does not wake for work it cannot take).
        Notifications already received are consumed together: one wake-up per burst of commits.
        """
        if self._closed:
            return False
        async with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = await AsyncConnection.connect(self.dsn, autocommit=True)
                    await self._listener.execute(f'LISTEN "{self.channel}"')
                    if await self._claimable(worker_names):
                        return True
                woken = False
                async for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    woken = True
                if woken:
                    async for _ in self._listener.notifies(timeout=0):
                        pass
                return woken
            except StoreError:
                raise
            except psycopg.Error as exc:
                if self._listener is not None:
                    with contextlib.suppress(psycopg.Error):
                        await self._listener.close()
                    self._listener = None
                raise self._translate(exc) from None

    async def _claimable(self, worker_names: Sequence[str] | None) -> bool:
        where = POSTGRES.claimable()
        params: list[Any] = [c.now()]
        if worker_names is not None:
            where += " AND i.worker = ANY(%s)"
            params.append(list(worker_names))
        async with self._conn() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM invocations i JOIN boards b ON b.board_id = i.board_id"
                f" WHERE {where} AND b.status = 'running' LIMIT 1",
                params,
            )
            return await cur.fetchone() is not None

    async def wait_for_board(self, board_id: str, timeout: float, *, after_seq: int | None = None) -> BoardInfo:
        """The board's header once its status is no longer ``running``, or after ``timeout``
        seconds (then still running), or (with ``after_seq``) once the log has a record past
        ``after_seq``. One connection per store object listens on ``sb_status_<schema>`` (every
        ``set_status`` notifies it with the board id, every append with ``+`` and the board id,
        in its transaction) and wakes the waiters of the board a note names, so any number of
        boards are waited on at once; a waiter registers before it reads the header, so no
        change is missed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await self._status_listening()
            fut: asyncio.Future[None] = loop.create_future()
            entry = (fut, after_seq is not None)
            waiting = self._board_waiters.setdefault(board_id, set())
            waiting.add(entry)
            try:
                info = await self.board_info(board_id)
                left = deadline - loop.time()
                if info.status != "running" or left <= 0 or self._closed:
                    return info
                if after_seq is not None and info.seq > after_seq:
                    return info
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, left)
            finally:
                waiting.discard(entry)
                if not waiting and self._board_waiters.get(board_id) is waiting:
                    del self._board_waiters[board_id]

    async def _status_listening(self) -> None:
        """Start the status channel's listener and its reader task unless they run."""
        if self._status_task is not None and not self._status_task.done():
            return
        async with self._status_lock:
            if self._status_task is not None and not self._status_task.done():
                return
            if self._closed:
                raise shared.closed(self._where)
            try:
                conn = await AsyncConnection.connect(self.dsn, autocommit=True)
                await conn.execute(f'LISTEN "{self.status_channel}"')
            except psycopg.Error as exc:
                raise self._translate(exc) from None
            self._status_listener = conn
            self._status_task = asyncio.get_running_loop().create_task(self._status_reader(conn))

    async def _status_reader(self, conn: Conn) -> None:
        """Wake the waiters of each board the status channel names (appends: only those that
        asked for them); on any end (an error, ``close``) wake every waiter: each reads its
        board again and the next wait starts a new listener."""
        try:
            async for note in conn.notifies():
                payload = note.payload
                self._wake_board(payload, appends_only=False)
                if payload.startswith(APPEND_NOTE):
                    self._wake_board(payload[len(APPEND_NOTE) :], appends_only=True)
        except (psycopg.Error, asyncio.CancelledError):
            pass
        finally:
            if self._status_listener is conn:
                self._status_listener = None
            with contextlib.suppress(psycopg.Error):
                await conn.close()
            for board_id in list(self._board_waiters):
                self._wake_board(board_id, appends_only=False)

    def _wake_board(self, board_id: str, *, appends_only: bool) -> None:
        for fut, wants_appends in list(self._board_waiters.get(board_id, ())):
            if (wants_appends or not appends_only) and not fut.done():
                fut.set_result(None)

    async def stalled_boards(self) -> list[str]:
        """Ids of running boards with no pending or claimed invocation (oldest first): nothing
        will ever be claimed for them, so a runner must end them (or commit their approvals)."""
        async with self._conn() as conn:
            cur = await conn.execute(POSTGRES.stalled_boards)
            return [r[0] for r in await cur.fetchall()]


async def _requeue_row(conn: Conn, board_id: str, inv_id: str, blob: bytes | None, attempts: int | None) -> None:
    cur = await conn.execute(
        "SELECT 1 FROM invocations o, invocations i WHERE i.board_id = %s AND i.id = %s AND o.board_id = i.board_id"
        " AND o.key = i.key AND o.status = 'pending' AND o.id != i.id",
        (board_id, inv_id),
    )
    status = CANCELLED if await cur.fetchone() is not None else PENDING
    await conn.execute(POSTGRES.requeue, (status, blob, attempts, board_id, inv_id))


async def _agenda(conn: Conn, board_id: str, statuses: tuple[str, ...], where: str) -> list[Invocation]:
    # Live statuses only: say so in the SQL, so the partial index of live invocations is used.
    live = " AND status IN ('pending', 'claimed')" if set(statuses) <= {PENDING, CLAIMED} else ""
    cur = await conn.execute(
        "SELECT data, status, attempts FROM invocations WHERE board_id = %s AND status = ANY(%s)"
        f"{live} ORDER BY priority DESC, ord, created",
        (board_id, list(statuses)),
    )
    return shared.invocations_from(await cur.fetchall(), where)


async def _store_snapshot(
    conn: Conn, board_id: str, seq: int, version: int, last_hash: str, state_hash: str, blob: bytes
) -> None:
    """Store a snapshot unless the board already has one at ``seq`` or later."""
    cur = await conn.execute(POSTGRES.advance_snapshot_seq, (seq, board_id, seq))
    if await cur.fetchone() is not None:
        await conn.execute(POSTGRES.upsert_snapshot, (board_id, seq, version, last_hash, state_hash, blob))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
