"""The SQLite store's connection handling: one connection thread, the commit queue, errors.

``SqliteConnection`` owns the store's two connections (the durable one and the lease one, see
the ``slateboard.stores.sqlite`` docstring) and the one thread they run on, and turns every
``sqlite3`` error into a ``StoreError`` (``_translate``). Work reaches the database in four ways:

- ``_w``: a durable write through the commit queue (group commit: each write of a batch in its
  own savepoint, every caller answered only after the batch's ``COMMIT``); ``writer=loop``
  runs it at once on the event loop's thread instead;
- ``_w_lease``: a write on the ``synchronous=NORMAL`` connection (leases, snapshots);
- ``_r``: one read transaction (a consistent snapshot under WAL);
- ``_run``: any call on the connection thread.

The commit loop (``_drain``) runs synchronously on the connection thread: a step's append
costs one thread hand-off and one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from . import _common as c
from . import _sqlite_statements as sql
from . import _tx as shared
from ._sql import SQLITE
from ._sqlite_file import check_file
from .backend import StoreBackend
from .base import StoreCorrupt, StoreError, StoreUnavailable
from .migrations import SCHEMA_TABLE, SQLITE_MIGRATIONS, SQLITE_TABLES

T = TypeVar("T")

_Job = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


class SqliteConnection(StoreBackend):
    """The connections, thread and commit queue of one SQLite store object."""

    def _init_connection(self, path: Path, *, synchronous: str, busy_timeout_ms: int, writer: str) -> None:
        self.path = path
        self._where = str(path)
        if synchronous.lower() not in ("full", "normal", "extra"):
            raise StoreError(f"sqlite option synchronous={synchronous!r}: use full, normal or extra")
        self.synchronous = synchronous.lower()
        self.busy_timeout_ms = busy_timeout_ms
        if writer.lower() not in ("thread", "loop"):
            raise StoreError(f"sqlite option writer={writer!r}: use thread or loop")
        self.writer = writer.lower()
        self._on_loop = self.writer == "loop"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="slateboard-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lease_conn: sqlite3.Connection | None = None
        self._waiters: set[asyncio.Future[bool]] = set()
        # The commit queue (see the module docstring): filled by the event loop, drained by
        # the connection thread; ``_draining`` says a drain is submitted or running.
        self._queue: list[_Job] = []
        self._queue_lock = threading.Lock()
        self._draining = False

    async def close(self) -> None:
        """Close the connection and its thread (idempotent)."""
        if self._closed:
            return
        if self._conn is not None:
            await self.settle_snapshots()
        self._closed = True
        for fut in list(self._waiters):
            if not fut.done():
                fut.cancel()

        def shut() -> None:
            for conn in (self._conn, self._lease_conn):
                if conn is not None:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
            self._conn = self._lease_conn = None

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, shut)
        finally:
            self._executor.shutdown(wait=False)

    # -- plumbing ---------------------------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed and fn is not self._open:
            raise shared.closed(self._where)
        if self._on_loop:
            return self._guard(fn, args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._guard, fn, args)

    async def _w(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a durable write transaction, through the commit queue: it may share
        the transaction (inside its own savepoint) and the flush with other queued writes, and
        returns only after that transaction committed. With ``writer=loop``: in a transaction
        of its own, at once, on this thread."""
        if self._closed:
            raise shared.closed(self._where)
        if self._on_loop:
            out: T = self._guard(self._write_on, (self._db, fn))
            self.count_flush(flushes=0 if self.synchronous == "normal" else 1)
            return out
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            self._queue.append((fn, fut, loop))
            start = not self._draining
            self._draining = True
        if start:
            # Submitted on the loop's next turn, not now: every board whose step is already
            # runnable (all woken by the last batch's results, say) queues its append first and
            # joins this batch, instead of this append paying a flush alone.
            loop.call_soon(self._executor.submit, self._drain)
        return await fut

    def _drain(self) -> None:
        """One batch of the commit queue (on the connection thread): everything queued now, in
        one transaction, each write in its own savepoint; results go back once committed."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        outcomes: list[shared.Outcome] = []
        try:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                single = len(batch) == 1
                for fn, _, _ in batch:
                    if not single:
                        db.execute("SAVEPOINT sb_write")
                    try:
                        out = fn(db)
                    except Exception as exc:
                        if not single:
                            db.execute("ROLLBACK TO sb_write")
                            db.execute("RELEASE sb_write")
                        outcomes.append((False, self._translate(exc) if isinstance(exc, sqlite3.Error) else exc))
                        continue
                    if not single:
                        db.execute("RELEASE sb_write")
                    outcomes.append((True, out))
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            if any(ok for ok, _ in outcomes):
                db.execute("COMMIT")
                self.count_flush(flushes=0 if self.synchronous == "normal" else 1)
            else:
                db.execute("ROLLBACK")
        except Exception as exc:
            err = self._translate(exc) if isinstance(exc, sqlite3.Error) else exc
            outcomes = [(False, err)] * len(batch)
        finally:
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], shared.Outcome]]] = {}
            for (_, fut, loop), outcome in zip(batch, outcomes, strict=False):
                by_loop.setdefault(loop, []).append((fut, outcome))
            for loop, items in by_loop.items():
                with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
                    loop.call_soon_threadsafe(shared.deliver, items)
            with self._queue_lock:
                if self._queue and not self._closed:
                    # Behind the reads already submitted: a busy queue never starves them.
                    self._executor.submit(self._drain)
                else:
                    self._draining = False

    async def _w_lease(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """A write transaction for lease bookkeeping (claim, heartbeat, release) and background
        snapshots, on the ``synchronous=NORMAL`` connection (see the module docstring)."""
        out: T = await self._run(self._write_on, self._lease_db, fn)
        return out

    def _write_on(self, db: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a BEGIN IMMEDIATE transaction on ``db`` (rolled back on any exception)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn(db)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    async def _r(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a read transaction on the connection thread."""
        out: T = await self._run(self._read, fn)
        return out

    def _guard(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            raise self._translate(exc) from None

    def _translate(self, exc: sqlite3.Error) -> StoreError:
        msg = str(exc)
        low = msg.lower()
        where = str(self.path)
        if "locked" in low or "busy" in low:
            # Writes wait busy_timeout_ms for the lock before this; name the knob.
            return StoreUnavailable(
                f"{where}: the database is locked by another connection ({msg}) after waiting"
                f" busy_timeout_ms={self.busy_timeout_ms}: nothing was written (retry, or resume the board)"
            )
        if "unable to open" in low or "readonly" in low or "read-only" in low or "disk i/o" in low:
            return StoreUnavailable(f"{where}: cannot open or write the database ({msg})")
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return StoreCorrupt(where, f"the database is damaged ({msg})")
        if "no such table" in low or "no such column" in low:
            return StoreCorrupt(where, f"the slateboard tables are damaged ({msg})")
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
            exc, (sqlite3.OperationalError, sqlite3.IntegrityError, sqlite3.ProgrammingError)
        ):
            return StoreCorrupt(where, f"the database is damaged ({msg})")
        return StoreError(f"{where}: {type(exc).__name__}: {msg}")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise shared.closed(self._where)
        return self._conn

    @property
    def _lease_db(self) -> sqlite3.Connection:
        if self._lease_conn is None:
            raise shared.closed(self._where)
        return self._lease_conn

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot under WAL)."""
        db = self._db
        db.execute("BEGIN")
        try:
            return fn(db)
        finally:
            with contextlib.suppress(sqlite3.Error):
                db.execute("COMMIT")

    def _open(self) -> None:
        check_file(self.path)
        if not self.path.exists():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"{self.path}: cannot create its directory ({exc.strerror})") from None
        db = self._conn = self._connect(self.synchronous)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            raise StoreUnavailable(f"{self.path}: cannot switch the database to WAL mode (got {mode!r})")
        self._write_on(db, self._migrate)
        self._lease_conn = self._connect("normal")

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        """A connection in autocommit mode (transactions are explicit) with the store's busy timeout."""
        db = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=self.busy_timeout_ms / 1000
        )
        db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        tables = {r[0] for r in db.execute(sql.TABLES)}
        current = 0
        if SCHEMA_TABLE in tables:
            row = db.execute(SQLITE.schema_version).fetchone()
            current = int(row[0] or 0)
        elif tables:
            mine = sorted(tables & set(SQLITE_TABLES))
            found = ", ".join(sorted(tables)[:6])
            problem = "its schema table is missing" if mine else "it holds other tables"
            raise StoreCorrupt(str(self.path), f"not a slateboard store: {problem} (tables: {found})")
        shared.check_schema(current, str(self.path))
        for version, statements in SQLITE_MIGRATIONS:
            if version <= current:
                continue
            for stmt in statements:
                db.execute(stmt)
            db.execute(SQLITE.record_migration, (version, c.now()))

    async def schema_version(self) -> int:
        """The schema version stored in the file."""

        def q(db: sqlite3.Connection) -> int:
            row = db.execute(SQLITE.schema_version).fetchone()
            return int(row[0] or 0)

        return await self._r(q)

    async def verify(self) -> None:
        """Run SQLite's integrity check over the whole file (``StoreCorrupt`` naming the problem)."""

        def q(db: sqlite3.Connection) -> None:
            rows = [r[0] for r in db.execute(sql.INTEGRITY_CHECK)]
            if rows != ["ok"]:
                raise StoreCorrupt(str(self.path), "integrity check failed: " + "; ".join(map(str, rows)))

        await self._run(q, self._db)
