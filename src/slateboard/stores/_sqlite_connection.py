"""The SQLite store's connection handling: the commit queue, where it is drained, errors.

``SqliteConnection`` owns the store's two connections (the durable one and the lease one, see
the ``slateboard.stores.sqlite`` docstring) and the one thread that may run them, and turns
every ``sqlite3`` error into a ``StoreError`` (``_translate``). Work reaches the database in
four ways:

- ``_w``: a durable write through the commit queue (group commit: each write of a batch in its
  own savepoint, every caller answered only after the batch's ``COMMIT``);
- ``_w_lease``: a write on the ``synchronous=NORMAL`` connection (leases, snapshots);
- ``_r``: one read transaction (a consistent snapshot under WAL);
- ``_run``: any other call.

Where the work runs is the ``writer`` option. ``loop`` (the default): on the event loop's own
thread; the commit queue is drained once per turn of the loop (``_drain_on_loop``, scheduled by
the turn's first write), so every board whose step ran in that turn shares one transaction and
one flush. A batch of several writes is committed on the connection thread (its ``COMMIT`` is
the flush: the loop runs the next boards' steps meanwhile, and calls after it follow it there
until it is done); a write alone commits on the loop (one board by itself has nothing else to
run meanwhile, and a flush slow enough to hold others up makes the next batch bigger). The
connections wait for no lock there (``busy_timeout = 0``): a call that finds the
database locked by another process is handed, with everything after it, to the connection
thread, where it waits up to ``busy_timeout_ms`` as usual (``_offload``), so the loop never
sleeps on another process's lock. ``thread``: every call on the connection thread (``_drain``
takes the queue there): the loop never waits for a flush, but each call is a thread hand-off,
and the thread needs the GIL back after every statement, which a busy loop holds for up to the
interpreter's switch interval (5 ms): what the loop writer removes.
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

SQLITE_BUSY = 5
"""SQLite's primary result code for a database locked by another connection."""


class _Busy(StoreUnavailable):
    """A call on the loop found the database locked (it waits for no lock there): nothing was
    done, and it is run again on the connection thread, which waits ``busy_timeout_ms``."""


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == SQLITE_BUSY
    return "database is locked" in str(exc).lower()


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
        # Calls handed to the connection thread and not finished (``writer=loop`` only): while
        # any is, every later call goes there too, so the store's calls keep their order.
        self._offloaded = 0
        # Held by whoever uses the connections: on the loop only when free at once (a store
        # used from another thread's loop at the same moment waits on the connection thread).
        self._conn_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="slateboard-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lease_conn: sqlite3.Connection | None = None
        self._waiters: set[asyncio.Future[bool]] = set()
        # The commit queue (see the module docstring): filled by the event loop, drained by
        # the connection thread or the loop; ``_draining`` says a drain is due or running.
        self._queue: list[_Job] = []
        self._queue_lock = threading.Lock()
        self._draining = False
        self._drain_loop: asyncio.AbstractEventLoop | None = None  # the loop a loop drain is due on

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
            if self._on_loop and not self._offloaded and self._conn_lock.acquire(blocking=False):
                try:
                    shut()
                finally:
                    self._conn_lock.release()
            else:
                await asyncio.get_running_loop().run_in_executor(self._executor, self._locked, shut, ())
        finally:
            self._executor.shutdown(wait=False)

    # -- plumbing ---------------------------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if fn is self._open:
            # Opening waits for locks as configured, on the thread the store runs on.
            if self._on_loop:
                return self._guard(fn, args)
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._guard, fn, args)
        if self._closed:
            raise shared.closed(self._where)
        if not self._on_loop:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._guard, fn, args)
        if not self._offloaded and self._conn_lock.acquire(blocking=False):
            try:
                return self._inline(fn, args)
            except _Busy:
                pass  # nothing was done: run it where it may wait for the lock
            finally:
                self._conn_lock.release()
        return await self._offload(fn, args)

    def _inline(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``fn(*args)`` on this thread (the lock held), raising ``_Busy`` when the database was
        locked (``writer=loop``: the connections wait for no lock here), else a ``StoreError``."""
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            if _is_busy(exc):
                raise _Busy from None
            raise self._translate(exc) from None

    async def _offload(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``writer=loop``: run ``fn(*args)`` on the connection thread, waiting up to
        ``busy_timeout_ms`` for a lock; later calls follow it there until it is done."""
        with self._queue_lock:
            self._offloaded += 1
        try:
            out: T = await asyncio.get_running_loop().run_in_executor(self._executor, self._waiting, fn, args)
        finally:
            with self._queue_lock:
                self._offloaded -= 1
        return out

    def _locked(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``fn(*args)`` holding the connection lock (on the connection thread)."""
        with self._conn_lock:
            return fn(*args)

    def _waiting(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``fn(*args)`` on the connection thread with the configured busy timeout (the loop
        writer's connections otherwise wait for no lock), errors translated."""
        with self._conn_lock:
            self._busy_timeout(self.busy_timeout_ms)
            try:
                return self._guard(fn, args)
            finally:
                self._busy_timeout(0)

    def _busy_timeout(self, ms: int) -> None:
        for conn in (self._conn, self._lease_conn):
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    async def _w(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a durable write transaction, through the commit queue: it may share
        the transaction (inside its own savepoint) and the flush with other queued writes, and
        returns only after that transaction committed (see the module docstring for where)."""
        if self._closed:
            raise shared.closed(self._where)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            self._queue.append((fn, fut, loop))
            # A drain due on a loop that closed before running it (``asyncio.run`` ended) never
            # comes: this loop starts one.
            start = not self._draining or (
                self._on_loop and self._drain_loop is not None and self._drain_loop.is_closed()
            )
            self._draining = True
            if start:
                self._drain_loop = loop
        if start:
            # Drained on the loop's next turn, not now: every board whose step is already
            # runnable (all woken by the last batch's results, say) queues its append first and
            # joins this batch, instead of this append paying a flush alone.
            if self._on_loop:
                loop.call_soon(self._drain_on_loop)
            else:
                loop.call_soon(self._executor.submit, self._drain)
        return await fut

    def _drain_on_loop(self) -> None:
        """``writer=loop``: one batch of the commit queue, its statements on the loop's thread
        and its ``COMMIT`` (the flush) on the connection thread, so the loop never waits for the
        disk (see the module docstring); a batch that finds the database locked goes to the
        connection thread whole."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        loop = asyncio.get_running_loop()
        staged: tuple[list[shared.Outcome], bool] | None = None
        if not self._offloaded and self._conn_lock.acquire(blocking=False):
            try:
                staged = self._stage(batch, inline=True)
            except _Busy:
                staged = None
            finally:
                if staged is None or not staged[1] or self.synchronous == "normal" or len(batch) == 1:
                    # Ended here: nothing to flush, nothing to wait for (synchronous=normal), or
                    # one write alone (the loop has nobody else's step to run meanwhile; a flush
                    # slow enough to hold others up makes the next batch bigger, flushed there).
                    outcomes = self._end(batch, staged) if staged is not None else None
                    self._conn_lock.release()
                    staged = None if outcomes is None else (outcomes, False)
        if staged is None:
            with self._queue_lock:
                self._offloaded += 1
            self._executor.submit(self._drain_offloaded, batch, loop)
            return
        outcomes, flush = staged
        if flush:
            # The transaction stays open, the connection lock held, until the thread commits.
            with self._queue_lock:
                self._offloaded += 1
            self._executor.submit(self._commit_offloaded, batch, outcomes, loop)
            return
        self._answer(batch, outcomes, here=loop)
        with self._queue_lock:
            if self._queue and not self._closed:
                loop.call_soon(self._drain_on_loop)
            else:
                self._draining = False

    def _commit_offloaded(
        self, batch: list[_Job], outcomes: list[shared.Outcome], loop: asyncio.AbstractEventLoop
    ) -> None:
        """The connection thread's half of a loop writer's batch: its ``COMMIT``, then the
        answers and the connection lock (taken on the loop by ``_drain_on_loop``)."""
        try:
            outcomes = self._end(batch, (outcomes, True))
        finally:
            self._conn_lock.release()
            self._answer(batch, outcomes)
            self._back_to_loop(loop)

    def _back_to_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """An offloaded batch is done (on the connection thread): the loop takes the queue
        again, drained on ``loop`` if it grew meanwhile. The bookkeeping is done here, not in a
        callback: a loop that closes (``asyncio.run`` ends) may never run one, and the store's
        next loop must find the queue as it is."""
        with self._queue_lock:
            self._offloaded -= 1
            more = bool(self._queue) and not self._closed
            if not more:
                self._draining = False
        if more:
            try:
                loop.call_soon_threadsafe(self._drain_on_loop)
            except RuntimeError:  # closed: the next write, on another loop, starts a drain
                with self._queue_lock:
                    self._draining = False

    def _drain_offloaded(self, batch: list[_Job], loop: asyncio.AbstractEventLoop) -> None:
        """A loop writer's batch on the connection thread (the lock may be held elsewhere)."""
        outcomes: list[shared.Outcome] | None = None
        try:
            with self._conn_lock:
                self._busy_timeout(self.busy_timeout_ms)
                try:
                    outcomes = self._flush(batch)
                finally:
                    self._busy_timeout(0)
        finally:
            if outcomes is not None:
                self._answer(batch, outcomes)
            self._back_to_loop(loop)

    def _drain(self) -> None:
        """``writer=thread``: one batch of the commit queue (on the connection thread):
        everything queued now, in one transaction; results go back once committed."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        try:
            outcomes = self._flush(batch)
        finally:
            with self._queue_lock:
                if self._queue and not self._closed:
                    # Behind the reads already submitted: a busy queue never starves them.
                    self._executor.submit(self._drain)
                else:
                    self._draining = False
        self._answer(batch, outcomes)

    def _answer(
        self, batch: list[_Job], outcomes: list[shared.Outcome], here: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Hand each write of ``batch`` its outcome, on its caller's loop (at once for the
        callers on ``here``, the loop running this code)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], shared.Outcome]]] = {}
        for (_, fut, loop), outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((fut, outcome))
        for loop, items in by_loop.items():
            if loop is here:
                shared.deliver(items)
                continue
            with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
                loop.call_soon_threadsafe(shared.deliver, items)

    def _flush(self, batch: list[_Job]) -> list[shared.Outcome]:
        """Run ``batch`` in one transaction, each write in its own savepoint when there are
        several, and commit: one outcome per write (a failed transaction fails them all)."""
        return self._end(batch, self._stage(batch))

    def _stage(self, batch: list[_Job], *, inline: bool = False) -> tuple[list[shared.Outcome], bool]:
        """The first half of ``_flush``: ``BEGIN IMMEDIATE`` and the batch's writes, each in its
        own savepoint when there are several. Returns the outcomes and whether the transaction
        is open with something to commit (else it was rolled back, or never started: then every
        outcome is the failure). ``inline`` (the loop writer): ``_Busy`` when the transaction
        could not start because the database is locked (nothing done)."""
        outcomes: list[shared.Outcome] = []
        try:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                if inline and _is_busy(exc):
                    raise _Busy from None
                raise
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
                return outcomes, True
            db.execute("ROLLBACK")
        except _Busy:
            raise
        except Exception as exc:
            err = self._translate(exc) if isinstance(exc, sqlite3.Error) else exc
            outcomes = [(False, err)] * len(batch)
        return outcomes, False

    def _end(self, batch: list[_Job], staged: tuple[list[shared.Outcome], bool]) -> list[shared.Outcome]:
        """The second half of ``_flush``: ``COMMIT`` a staged transaction that is open (on
        failure, roll back and fail every write of the batch); the outcomes to answer."""
        outcomes, open_ = staged
        if not open_:
            return outcomes
        try:
            self._db.execute("COMMIT")
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._db.execute("ROLLBACK")
            err = self._translate(exc) if isinstance(exc, sqlite3.Error) else exc
            return [(False, err)] * len(batch)
        self.count_flush(flushes=0 if self.synchronous == "normal" else 1)
        return outcomes

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
        if self._on_loop:
            self._busy_timeout(0)  # see the module docstring: a locked call goes to the thread

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
