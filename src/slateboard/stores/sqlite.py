"""SQLite store: one file, WAL, one dedicated connection thread per store object.

``sqlite:///abs/path.db`` (or ``sqlite://rel/path.db``; ``sqlite://`` alone uses the default file
under the user's data directory). Query options: ``snapshot_every=N`` (records between
snapshots), ``synchronous=full|normal``, ``busy_timeout_ms=N`` and ``writer=thread|loop``.

Guarantees, on top of the Store protocol's:
- Every write is one SQLite transaction started with ``BEGIN IMMEDIATE`` (the write lock is
  taken before the CAS is read, so two writers in different processes serialise and the second
  sees the first's record and gets ``Conflict``).
- Group commit: durable writes (appends, board creation, status changes) go through a commit
  queue drained by the store's one connection thread; every write queued while the previous
  batch was flushing goes into the next transaction, each inside its own savepoint, so one
  failing (a lost compare-and-set, say) rolls back only itself, and each is acknowledged only
  after the batch's commit. One board appending alone pays one transaction and one thread
  hand-off per step (``append(..., claim=...)`` leases its next invocation in it).
- Lease bookkeeping (claims, heartbeats, releases) and background snapshots commit on a second
  connection opened with ``synchronous=NORMAL`` (no per-claim ``PRAGMA`` switching): the WAL
  is append-only, so the next durable commit syncs those frames too, and losing a lease change
  to a power cut only makes an invocation claimable again, as an expired lease would.
- ``writer=loop`` runs every database call on the event loop's own thread instead of the
  connection thread: no thread hand-off (about 0.2 ms of CPU per step on a 2-core VM, see
  benchmarks/peers.py), but the loop waits for each flush and nothing else in it runs
  meanwhile, so concurrent boards no longer share flushes. For one board per process (one
  Runner), not for a service driving many boards or a web server in the same loop. Each write
  is then its own transaction; the guarantees above hold otherwise.
- ``synchronous=full`` (the default) fsyncs the WAL at every commit: a returned append survives
  a power loss. ``synchronous=normal`` survives the death of the process but may lose the last
  commits on a power loss; it is faster on disks with slow syncs (see benchmarks/store.py).
- A file that is not an SQLite database, is truncated, or is damaged raises ``StoreCorrupt``
  naming the file and the problem; a locked file ``StoreUnavailable``; no sqlite3 exception
  escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from ..kernel.canonical import JSON
from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import CANCELLED, CLAIMED, PENDING, Invocation
from . import _common as c
from . import _tx as shared
from ._sql import BOARD_TABLES, SQLITE
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
    Snapshot,
    Store,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    WatchesBoards,
    WatchesWork,
)
from .migrations import SCHEMA_TABLE, SQLITE_MIGRATIONS, SQLITE_TABLES

T = TypeVar("T")

OPTIONS = {"snapshot_every", "synchronous", "busy_timeout_ms", "writer"}
_HEADER = b"SQLite format 3\x00"


def default_path() -> Path:
    """``<user data dir>/slateboard/slateboard.db`` (platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("slateboard")) / "slateboard.db"


def path_from_url(url: str) -> Path:
    """The database file a ``sqlite:`` URL names: ``sqlite:///abs/path.db`` (or ``sqlite:////abs``)
    is absolute, ``sqlite://rel/path.db`` and ``sqlite:rel.db`` are relative to the working
    directory, ``sqlite://`` is the default file. The query string is ignored here."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() != "sqlite":
        raise StoreError(f"not a sqlite URL: {url!r}")
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    if rest.startswith("///"):
        raw = "/" + rest[3:].lstrip("/")
    elif rest.startswith("//"):
        raw = rest[2:]
    else:
        raw = rest
    raw = unquote(raw)
    if raw in ("", "/"):
        return default_path()
    return Path(raw).expanduser()


def check_file(path: Path) -> None:
    """Cheap checks before SQLite touches the file: it is an SQLite database and not truncated."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot read the database file ({exc.strerror})") from None
    if size == 0:
        return
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot read the database file ({exc.strerror})") from None
    if len(header) < 100:
        if _HEADER.startswith(header[:16]) or header.startswith(_HEADER):
            raise StoreCorrupt(str(path), f"truncated: the file has {size} bytes, less than an SQLite header")
        raise StoreCorrupt(str(path), "not an SQLite database (the file does not start with an SQLite header)")
    if not header.startswith(_HEADER):
        raise StoreCorrupt(str(path), "not an SQLite database (the file does not start with an SQLite header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreCorrupt(str(path), f"damaged header: page size {page_size} is impossible")
    if size % page_size:
        raise StoreCorrupt(str(path), f"truncated: {size} bytes is not a whole number of {page_size}-byte pages")
    pages = int.from_bytes(header[28:32], "big")
    valid = header[92:96] == header[24:28]
    if valid and pages * page_size > size:
        raise StoreCorrupt(
            str(path),
            f"truncated: the header says {pages} pages ({pages * page_size} bytes), the file has {size} bytes",
        )


_Job = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


class SqliteStore(
    StoreBackend, Store, WatchesWork, WatchesBoards, ScansStalledBoards, ReportsCommits, ReportsLeases, KeepsLedgers
):
    """A Store in one SQLite file (see module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        url: str | None = None,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        synchronous: str = "full",
        busy_timeout_ms: int = 30_000,
        writer: str = "thread",
    ) -> None:
        self._init_backend()
        self.path = Path(path)
        self.url = url or f"sqlite:///{self.path}"
        self.snapshot_every = snapshot_every
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
        self._closed = False
        # The commit queue (see the module docstring): filled by the event loop, drained by
        # the connection thread; ``_draining`` says a drain is submitted or running.
        self._queue: list[_Job] = []
        self._queue_lock = threading.Lock()
        self._draining = False

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
            writer=opts.get("writer", "thread"),
        )
        try:
            await store._run(store._open)
        except BaseException:
            await store.close()
            raise
        return store

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
            raise shared.closed(str(self.path))
        if self._on_loop:
            return self._guard(fn, args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._guard, fn, args)

    async def _w(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a durable write transaction, through the commit queue: it may share
        the transaction (inside its own savepoint) and the flush with other queued writes, and
        returns only after that transaction committed. With ``writer=loop``: in a transaction
        of its own, at once, on this thread."""
        if self._closed:
            raise shared.closed(str(self.path))
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
            return StoreUnavailable(f"{where}: the database is locked by another connection ({msg})")
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
            raise shared.closed(str(self.path))
        return self._conn

    @property
    def _lease_db(self) -> sqlite3.Connection:
        if self._lease_conn is None:
            raise shared.closed(str(self.path))
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
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        current = 0
        if SCHEMA_TABLE in tables:
            row = db.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()
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
            db.execute(f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (?, ?)", (version, c.now()))

    async def schema_version(self) -> int:
        """The schema version stored in the file."""

        def q(db: sqlite3.Connection) -> int:
            row = db.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()
            return int(row[0] or 0)

        return await self._r(q)

    async def verify(self) -> None:
        """Run SQLite's integrity check over the whole file (``StoreCorrupt`` naming the problem)."""

        def q(db: sqlite3.Connection) -> None:
            rows = [r[0] for r in db.execute("PRAGMA integrity_check(5)")]
            if rows != ["ok"]:
                raise StoreCorrupt(str(self.path), "integrity check failed: " + "; ".join(map(str, rows)))

        await self._run(q, self._db)

    # -- boards -----------------------------------------------------------------------------------
    def _info(self, row: Sequence[Any]) -> BoardInfo:
        return shared.board_info(row, str(self.path))

    def _board_row(self, db: sqlite3.Connection, board_id: str) -> Sequence[Any]:
        row = db.execute(SQLITE.select_board, (board_id,)).fetchone()
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
        bid = new.board_id

        def tx(db: sqlite3.Connection) -> BoardInfo:
            t = c.now()
            row = db.execute(
                SQLITE.insert_board, (bid, new.name, new.blueprint, new.initial, new.meta, t, t, GENESIS)
            ).fetchone()
            if row is None:
                raise BoardExists(bid)
            _push(db, bid, new.agenda)
            return self._info(self._board_row(db, bid))

        info = await self._w(tx)
        if new.agenda:
            self._wake()
        return info

    async def board_info(self, board_id: str) -> BoardInfo:
        """See Store.board_info."""
        return await self._r(lambda db: self._info(self._board_row(db, board_id)))

    async def list_boards(self, *, status: str | None = None) -> list[BoardInfo]:
        """See Store.list_boards."""

        def q(db: sqlite3.Connection) -> list[BoardInfo]:
            if status is None:
                rows = db.execute(SQLITE.list_boards).fetchall()
            else:
                rows = db.execute(SQLITE.list_boards_in, (status,)).fetchall()
            return [self._info(r) for r in rows]

        return await self._r(q)

    async def set_status(self, board_id: str, status: str, reason: str | None = None) -> BoardInfo:
        """See Store.set_status."""
        shared.check_status(status)

        def tx(db: sqlite3.Connection) -> BoardInfo:
            cur = db.execute(SQLITE.set_status, (status, reason, c.now(), board_id))
            if cur.rowcount == 0:
                raise BoardNotFound(board_id)
            return self._info(self._board_row(db, board_id))

        info = await self._w(tx)
        if status == "running":
            self._wake()
        return info

    async def delete_board(self, board_id: str) -> None:
        """See Store.delete_board."""

        def tx(db: sqlite3.Connection) -> None:
            for table in BOARD_TABLES:
                db.execute(SQLITE.delete_from(table), (board_id,))

        await self._w(tx)

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
        snap_seq, got = await self._w(lambda db: self._append_tx(db, job))
        if job.pushes or job.requeues:
            self._wake()
        return self.finish_append(job, snap_seq, got)

    def _append_tx(self, db: sqlite3.Connection, job: NewRecord) -> tuple[int, Claim | None]:
        board_id, record = job.board_id, job.record
        expected_version = job.expected_version
        row = None
        if expected_version is None or expected_version == job.prev_version:
            # The CAS as one statement: the UPDATE matches only when the record continues the
            # stored log (seq, hash and version; ``prev_version`` is the version check_position
            # wants the board at), so the common case needs no SELECT first.
            row = db.execute(
                "UPDATE boards SET version = ?, last_seq = ?, last_hash = ?, updated_at = ?"
                " WHERE board_id = ? AND last_seq = ? AND last_hash = ? AND version = ?"
                " RETURNING snapshot_seq, status",
                job.cas_args(c.now()),
            ).fetchone()
        if row is None:
            # Not appended: read the board to say why (the same checks, in the same order).
            old = db.execute(
                "SELECT version, last_seq, last_hash FROM boards WHERE board_id = ?", (board_id,)
            ).fetchone()
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
        db.execute("INSERT INTO records (board_id, seq, data) VALUES (?, ?, ?)", (board_id, record.seq, job.data))
        if job.changes.complete or job.changes.cancel or job.requeues:
            _apply_agenda(db, board_id, record.seq, job.changes, job.requeues)
        if job.pushes:
            _push(db, board_id, job.pushes)
        got = None
        if job.claim is not None:
            req = job.claim
            t = c.now() if req.now is None else req.now
            got = self._claim_tx(
                db, board_id, req.owner, t, req.lease_s, req.worker_names, req.invocation_id, board_status=row[1]
            )
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
        await self._w_lease(
            lambda db: _store_snapshot(db, board_id, snap.seq, snap.version, snap.last_hash, snap.state_hash, blob)
        )

    async def read_records(self, board_id: str, from_seq: int = 1, *, limit: int | None = None) -> list[Record]:
        """See Store.read_records."""

        def q(db: sqlite3.Connection) -> list[Record]:
            self._board_row(db, board_id)
            return self._records(db, board_id, from_seq, limit)

        return await self._r(q)

    def _records(self, db: sqlite3.Connection, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        rows = db.execute(SQLITE.records_from, (board_id, from_seq, -1 if limit is None else max(limit, 0))).fetchall()
        return shared.records_from(rows, from_seq, f"{self.path} board {board_id}")

    async def load_board(self, board_id: str) -> LoadedBoard:
        """See Store.load_board."""
        await self.settle_snapshots(board_id)

        def q(db: sqlite3.Connection) -> LoadedBoard:
            info = self._info(self._board_row(db, board_id))
            where = f"{self.path} board {board_id}"
            bp, init = db.execute(SQLITE.select_blueprint, (board_id,)).fetchone()
            snapshot = shared.snapshot_of(db.execute(SQLITE.select_snapshot, (board_id,)).fetchone(), where)
            start = snapshot.seq if snapshot else 0
            self.note_snapshot_seq(board_id, start)
            records = self._records(db, board_id, start + 1, None)
            agenda = _agenda(db, board_id, shared.LIVE, where)
            return shared.loaded_board(info, bp, init, snapshot, records, agenda, where)

        return await self._r(q)

    async def write_snapshot(
        self, board_id: str, state: JSON, *, version: int, seq: int, last_hash: str, state_hash: str
    ) -> None:
        """See Store.write_snapshot."""
        blob = c.encode_json(state)

        def tx(db: sqlite3.Connection) -> None:
            row = db.execute(SQLITE.record_at, (board_id, seq)).fetchone()
            if row is None:
                self._board_row(db, board_id)
                raise Conflict(board_id, f"snapshot at record {seq}, which is not in the log")
            rec = c.decode_record(row[0], f"{self.path} board {board_id}", seq)
            shared.check_logged(board_id, rec, version=version, last_hash=last_hash, state_hash=state_hash)
            _store_snapshot(db, board_id, seq, version, last_hash, state_hash, blob)

        await self._w(tx)

    async def compact(self, board_id: str) -> Snapshot | None:
        """See Store.compact."""
        return await c.compact(self, board_id, str(self.path))

    # -- agenda -----------------------------------------------------------------------------------
    async def push_invocations(self, board_id: str, invocations: Sequence[Invocation]) -> list[str]:
        """See Store.push_invocations."""
        rows = [(inv, c.encode_invocation(inv)) for inv in invocations]

        def tx(db: sqlite3.Connection) -> list[str]:
            self._board_row(db, board_id)
            return _push(db, board_id, rows)

        added = await self._w(tx)
        if added:
            self._wake()
        return added

    async def agenda(self, board_id: str, statuses: Sequence[str] = (PENDING, CLAIMED)) -> list[Invocation]:
        """See Store.agenda."""

        def q(db: sqlite3.Connection) -> list[Invocation]:
            self._board_row(db, board_id)
            return _agenda(db, board_id, tuple(statuses), f"{self.path} board {board_id}")

        return await self._r(q)

    async def leases(self, board_id: str) -> list[Lease]:
        """See ReportsLeases.leases."""

        def q(db: sqlite3.Connection) -> list[Lease]:
            self._board_row(db, board_id)
            rows = db.execute(
                "SELECT id, owner, lease_until FROM invocations WHERE board_id = ? AND status = 'claimed'"
                " AND owner IS NOT NULL AND lease_until IS NOT NULL ORDER BY rowid",
                (board_id,),
            ).fetchall()
            return [Lease(str(r[0]), str(r[1]), float(r[2])) for r in rows]

        return await self._r(q)

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
        """See Store.claim (walks the index of live invocations only)."""
        t = c.now() if now is None else now
        return await self._w_lease(
            lambda db: self._claim_tx(db, board_id, owner, t, lease_s, worker_names, invocation_id)
        )

    def _claim_tx(
        self,
        db: sqlite3.Connection,
        board_id: str | None,
        owner: str,
        t: float,
        lease_s: float,
        worker_names: Sequence[str] | None,
        invocation_id: str | None,
        *,
        board_status: str | None = None,
    ) -> Claim | None:
        """Lease the best claimable invocation (of ``board_id``, or of any running board);
        ``board_status``: the board's status when the caller read it in this transaction."""
        # ``status IN ('pending', 'claimed')`` is spelt out so the planner uses the partial
        # indexes over live invocations (migration 3), whatever the board's history.
        where = [SQLITE.claimable()]
        params: list[Any] = [t]
        if worker_names is not None:
            names = list(worker_names)
            if not names:
                return None
            where.append(f"i.worker IN ({', '.join('?' * len(names))})")
            params.extend(names)
        if invocation_id is not None:
            where.append("i.id = ?")
            params.append(invocation_id)
        if board_id is not None:
            if board_status is None:
                status = db.execute("SELECT status FROM boards WHERE board_id = ?", (board_id,)).fetchone()
                if status is None:
                    raise BoardNotFound(board_id)
                board_status = status[0]
            if board_status != "running":
                return None
            sql = f"SELECT i.rowid FROM invocations i WHERE i.board_id = ? AND {' AND '.join(where)}"
            params.insert(0, board_id)
        else:
            sql = (
                "SELECT i.rowid FROM invocations i JOIN boards b ON b.board_id = i.board_id"
                f" WHERE b.status = 'running' AND {' AND '.join(where)}"
            )
        until = t + lease_s
        # Pick and lease in one statement (the connection holds the write lock: nobody can take
        # the row between the pick and the update).
        got = db.execute(
            "UPDATE invocations SET status = 'claimed', owner = ?, lease_until = ?, claims = claims + 1"
            f" WHERE rowid = ({sql} ORDER BY i.priority DESC, i.ord, i.rowid LIMIT 1)"
            " RETURNING board_id, data, attempts, claims",
            (owner, until, *params),
        ).fetchone()
        return None if got is None else shared.claim_from(got, owner, until, str(self.path))

    async def heartbeat(
        self, board_id: str, invocation_id: str, *, owner: str, lease_s: float, now: float | None = None
    ) -> float:
        """See Store.heartbeat."""
        until = (c.now() if now is None else now) + lease_s

        def tx(db: sqlite3.Connection) -> float:
            cur = db.execute(SQLITE.heartbeat, (until, board_id, invocation_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"board {board_id}: invocation {invocation_id!r} is not claimed by {owner!r}")
            return until

        return await self._w_lease(tx)

    async def release_expired(self, now: float | None = None) -> int:
        """See Store.release_expired."""
        t = c.now() if now is None else now

        def tx(db: sqlite3.Connection) -> int:
            rows = db.execute(
                "SELECT board_id, id FROM invocations WHERE status = 'claimed' AND lease_until <= ? ORDER BY rowid",
                (t,),
            ).fetchall()
            for bid, inv_id in rows:
                _requeue_row(db, bid, inv_id, None, None)
            return len(rows)

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
                if await self._r(lambda db: _has_work(db, names)):
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

    async def wait_for_board(self, board_id: str, timeout: float, *, after_seq: int | None = None) -> BoardInfo:
        """See WatchesBoards.wait_for_board: the header is read every 50 ms (another process may
        change the status or append; SQLite has no notifications), so a change is seen within
        about 50 ms."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            info = await self.board_info(board_id)
            left = deadline - loop.time()
            if info.status != "running" or left <= 0:
                return info
            if after_seq is not None and info.seq > after_seq:
                return info
            await asyncio.sleep(min(left, 0.05))

    async def stalled_boards(self) -> list[str]:
        """See ScansStalledBoards.stalled_boards (one query over the live-invocation index)."""

        def q(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(SQLITE.stalled_boards).fetchall()
            return [r[0] for r in rows]

        return await self._r(q)

    def _wake(self) -> None:
        for fut in list(self._waiters):
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_set_true, fut)


def _set_true(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(True)


def _has_work(db: sqlite3.Connection, worker_names: list[str] | None) -> bool:
    """Whether a running board has a claimable invocation (of ``worker_names`` when given)."""
    where = SQLITE.claimable()
    params: list[Any] = [c.now()]
    if worker_names is not None:
        if not worker_names:
            return False
        where += f" AND i.worker IN ({', '.join('?' * len(worker_names))})"
        params.extend(worker_names)
    row = db.execute(
        f"SELECT 1 FROM invocations i JOIN boards b ON b.board_id = i.board_id WHERE {where}"
        " AND b.status = 'running' LIMIT 1",
        params,
    ).fetchone()
    return row is not None


def _push(db: sqlite3.Connection, board_id: str, rows: Sequence[tuple[Invocation, bytes]]) -> list[str]:
    added: list[str] = []
    for inv, blob in rows:
        row = db.execute(
            SQLITE.insert_invocation,
            (board_id, inv.id, inv.key, inv.worker, inv.priority, inv.order, inv.attempts, blob),
        ).fetchone()
        if row is not None:
            added.append(inv.id)
    return added


def _requeue_row(db: sqlite3.Connection, board_id: str, inv_id: str, blob: bytes | None, attempts: int | None) -> None:
    row = db.execute("SELECT key FROM invocations WHERE board_id = ? AND id = ?", (board_id, inv_id)).fetchone()
    clash = db.execute(
        "SELECT 1 FROM invocations WHERE board_id = ? AND key = ? AND status = 'pending' AND id != ?",
        (board_id, row[0], inv_id),
    ).fetchone()
    status = CANCELLED if clash else PENDING
    db.execute(SQLITE.requeue, (status, blob, attempts, board_id, inv_id))


def _apply_agenda(
    db: sqlite3.Connection,
    board_id: str,
    seq: int,
    changes: AgendaChanges,
    requeues: Sequence[tuple[Invocation, bytes]],
) -> None:
    for inv_id in changes.complete:
        # Complete a live invocation in one statement; only when none matched, read why.
        done = db.execute(
            "UPDATE invocations SET status = 'done', done_seq = ?, owner = NULL, lease_until = NULL"
            " WHERE board_id = ? AND id = ? AND status IN ('pending', 'claimed') RETURNING 1",
            (seq, board_id, inv_id),
        ).fetchone()
        if done is not None:
            continue
        row = db.execute(
            "SELECT status, done_seq FROM invocations WHERE board_id = ? AND id = ?", (board_id, inv_id)
        ).fetchone()
        status, done_seq = (None, None) if row is None else row
        shared.check_complete(board_id, inv_id, status, None if done_seq is None else int(done_seq))
    for inv_id in changes.cancel:
        row = db.execute("SELECT status FROM invocations WHERE board_id = ? AND id = ?", (board_id, inv_id)).fetchone()
        if shared.check_cancel(board_id, inv_id, None if row is None else row[0]):
            db.execute(SQLITE.cancel, (board_id, inv_id))
    for inv, blob in requeues:
        row = db.execute("SELECT status FROM invocations WHERE board_id = ? AND id = ?", (board_id, inv.id)).fetchone()
        shared.check_requeue(board_id, inv.id, None if row is None else row[0], changes)
        _requeue_row(db, board_id, inv.id, blob, inv.attempts)


def _agenda(db: sqlite3.Connection, board_id: str, statuses: tuple[str, ...], where: str) -> list[Invocation]:
    if not statuses:
        return []
    # Live statuses only: say so in the SQL, so the partial index of live invocations is used.
    live = " AND status IN ('pending', 'claimed')" if set(statuses) <= {PENDING, CLAIMED} else ""
    rows = db.execute(
        f"SELECT data, status, attempts FROM invocations WHERE board_id = ? AND status IN ({', '.join('?' * len(statuses))})"
        f"{live} ORDER BY priority DESC, ord, rowid",
        (board_id, *statuses),
    ).fetchall()
    return shared.invocations_from(rows, where)


def _store_snapshot(
    db: sqlite3.Connection, board_id: str, seq: int, version: int, last_hash: str, state_hash: str, blob: bytes
) -> None:
    """Store a snapshot unless the board already has one at ``seq`` or later."""
    if db.execute(SQLITE.advance_snapshot_seq, (seq, board_id, seq)).fetchone() is not None:
        db.execute(SQLITE.upsert_snapshot, (board_id, seq, version, last_hash, state_hash, blob))
