"""The PostgreSQL store's connection handling: the pool, transactions, errors, group commit.

``PostgresConnection`` opens the pool (after a direct probe connection, whose error names the
reason), brings the schema up to date, hands out connections and transactions (``_conn``,
``_tx``), turns every psycopg error into a ``StoreError`` (``_translate``), and runs the commit
queue: appends queued while others commit go, up to ``BATCH_MAX`` at a time, into one
transaction on one connection in pipeline mode, each in its own savepoint, each acknowledged
only after its batch's commit; several batches commit side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Self

import psycopg
from psycopg import AsyncConnection, errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from . import _common as c
from . import _pg_statements as sql
from . import _tx as shared
from ._sql import POSTGRES
from .backend import NewRecord, StoreBackend
from .base import DEFAULT_SNAPSHOT_EVERY, Claim, StoreCorrupt, StoreError, StoreMissing, StoreUnavailable
from .migrations import POSTGRES_MIGRATIONS, SCHEMA_TABLE

OPTIONS = {"schema", "snapshot_every", "pool_min", "pool_max", "connect_timeout_s"}
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
Conn = AsyncConnection[Any]
BATCH_MAX = 4
"""Appends per group-commit transaction (more batches then run side by side)."""


class PostgresConnection(StoreBackend):
    """The pool, transactions and commit queue of one PostgreSQL store object."""

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
        self._pool = pool
        self._where = f"{c.redact(dsn)} schema {schema}"
        # The listening connections (``_listen``): work notes, and status/append notes.
        self.channel = f"slateboard_{schema}"
        self.status_channel = f"sb_status_{schema}"
        self._listener: Conn | None = None
        self._listen_lock = asyncio.Lock()
        self._status_listener: Conn | None = None
        self._status_lock = asyncio.Lock()
        self._status_task: asyncio.Task[None] | None = None
        self._board_waiters: dict[str, set[tuple[asyncio.Future[None], bool]]] = {}
        """Who waits on which board (``wait_for_board``): a future, and whether appends wake it."""
        # The commit queue: appends wait here while the previous batch commits.
        self._queue: list[tuple[NewRecord, asyncio.Future[tuple[int, Claim | None]]]] = []
        self._drainers: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> Self:
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
                    found = await probe.execute(sql.HAS_STORE, (schema, SCHEMA_TABLE))
                    if await found.fetchone() is None:
                        raise StoreMissing(
                            f"{where}: schema {schema!r} holds no slateboard store: nothing to read (a run creates it)"
                        )
            finally:
                await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(f"{where}: cannot connect ({first_line(exc)})") from None
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
            raise StoreUnavailable(f"{where}: cannot open a connection pool ({first_line(exc)})") from None
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
        """Close the pool (idempotent), after the snapshots and commits under way."""
        if self._closed:
            return
        await self.settle_snapshots()
        if self._drainers:
            await asyncio.gather(*self._drainers, return_exceptions=True)
        self._closed = True
        await self._close_listeners()
        await self._pool.close()

    async def _close_listeners(self) -> None:
        """Close the connections that listen for notifications (none here)."""

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
        msg = first_line(exc)
        if isinstance(exc, (errors.UndefinedTable, errors.UndefinedColumn, errors.InvalidSchemaName)):
            return StoreCorrupt(self._where, f"the slateboard tables are damaged or missing ({msg})")
        if isinstance(exc, (errors.DataCorrupted, errors.IndexCorrupted)):
            return StoreCorrupt(self._where, f"the database reports damaged data ({msg})")
        if isinstance(exc, psycopg.OperationalError):
            return StoreUnavailable(f"{self._where}: {msg}")
        return StoreError(f"{self._where}: {type(exc).__name__}: {msg}")

    async def _migrate(self) -> None:
        async with self._tx() as conn:
            await conn.execute(sql.ADVISORY_LOCK, (f"slateboard:{self.schema}",))
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            cur = await conn.execute(sql.SCHEMA_TABLES, (self.schema,))
            tables = {r[0] for r in await cur.fetchall()}
            current = 0
            if SCHEMA_TABLE in tables:
                cur = await conn.execute(POSTGRES.schema_version)
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
                await conn.execute(POSTGRES.record_migration, (version, c.now()))

    async def schema_version(self) -> int:
        """The schema version stored in the database."""
        async with self._conn() as conn:
            cur = await conn.execute(POSTGRES.schema_version)
            row = await cur.fetchone()
            return int(row[0] or 0) if row else 0

    # -- group commit -----------------------------------------------------------------------------
    def _commit_append(self, job: NewRecord) -> Awaitable[tuple[int, Claim | None]]:
        # Through the commit queue (see the module docstring); answered once its batch committed.
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
        return fut

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
        """Write one append on ``conn`` inside the batch's transaction (or its savepoint)."""
        raise NotImplementedError


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (psycopg's run on with context and hints)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
