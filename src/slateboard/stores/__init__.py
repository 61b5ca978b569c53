"""Stores: boards, blueprints, logs, snapshots and agendas behind one async protocol.

``open_store(url)`` picks the backend from the URL:

- ``memory://`` : in process, for tests;
- ``sqlite:///relative/path.db`` (relative to the working directory) and
  ``sqlite:////absolute/path.db``: SQLAlchemy's slash convention; ``sqlite://`` is
  ``<user data dir>/slateboard/slateboard.db``; a bare path ending in ``.db``/``.sqlite``/
  ``.sqlite3`` works too. The default: one file, WAL. ``sqlite:///:memory:`` (and ``sqlite://:memory:``)
  is an in-memory store, as in SQLAlchemy: nothing is written to disk and the boards are gone
  when the store is closed (it is the ``memory://`` store);
- ``postgresql://user@host:port/db?schema=NAME``: shared by many runner processes and machines.

Every backend accepts ``?snapshot_every=N``. See ``slateboard.stores.base`` for the guarantees
and the capability layers, ``slateboard.testing`` for the conformance suite a backend must pass.
``open_store(url, create=False)`` is for read-only commands: it refuses a SQLite store that does
not exist yet (no file, an empty file, or an SQLite file without slateboard's tables) instead of
creating one.
"""

from __future__ import annotations

from pathlib import Path

from .base import (
    BOARD_STATUSES,
    AgendaChanges,
    AgendaError,
    AppendResult,
    BoardExists,
    BoardInfo,
    BoardNotFound,
    Claim,
    ClaimRequest,
    CommitStats,
    Conflict,
    DuplicateInvocationCommit,
    Lease,
    LeaseLost,
    LoadedBoard,
    OpenedStore,
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    SchemaTooNew,
    ServesManyRunners,
    Snapshot,
    Store,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreUnavailable,
    WatchesBoards,
    WatchesWork,
    supports,
)
from .memory import MemoryStore

DEFAULT_URL = "sqlite://"
"""The default store: SQLite in the user's data directory."""


def sqlite_path(url: str) -> Path:
    """The absolute database file a ``sqlite:`` URL names, by SQLAlchemy's slash convention:
    ``sqlite:///rel.db`` is relative to the working directory, ``sqlite:////abs.db`` absolute,
    ``sqlite://`` (or ``sqlite:///``) the default file; ``sqlite:rel.db`` and ``sqlite://rel.db``
    are relative too. The query string is not part of the path."""
    from urllib.parse import unquote

    from .sqlite import default_path

    rest = url.partition(":")[2].split("?", 1)[0].split("#", 1)[0]
    raw = rest[3:] if rest.startswith("///") else rest[2:] if rest.startswith("//") else rest
    raw = unquote(raw)
    if raw == "":
        return default_path()
    return Path(raw).expanduser().absolute()


def _sqlite_url(url: str) -> tuple[str, Path]:
    """``url`` rewritten with an absolute path (``sqlite:////abs.db?query``), read the same by
    every sqlite URL reader, and that path."""
    path = sqlite_path(url)
    query = url.split("?", 1)[1] if "?" in url else ""
    return f"sqlite:///{path.as_posix()}" + (f"?{query}" if query else ""), path


def _refuse_missing(path: Path, url: str) -> None:
    """Raise ``StoreMissing`` unless ``path`` already holds a slateboard store (checked through
    a read-only connection, so nothing is created or changed)."""
    import sqlite3

    from .migrations import SCHEMA_TABLE

    if not path.exists():
        raise StoreMissing(f"no store at {path} ({url}): nothing to read (a run creates it)")
    if path.is_file() and path.stat().st_size == 0:
        raise StoreMissing(f"{path} is an empty file, not a slateboard store: nothing to read")
    if not path.is_file():
        return  # a directory or device: let the backend report it
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SCHEMA_TABLE,)
            ).fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return  # not SQLite, or damaged: the backend's checks name the problem
    if row is None:
        raise StoreMissing(f"{path} holds no slateboard store (no {SCHEMA_TABLE} table): nothing to read")


def _sqlite_in_memory(url: str) -> str | None:
    """The query of a ``sqlite:`` URL naming SQLite's in-memory database (``:memory:``, as
    SQLAlchemy reads ``sqlite:///:memory:`` and ``sqlite://:memory:``), else None."""
    rest, _, query = url.split(":", 1)[1].partition("?")
    return query if rest.lstrip("/") == ":memory:" else None


def in_memory_url(url: str) -> bool:
    """Whether ``open_store(url)`` gives a store held in this process's memory (``memory://``,
    SQLite's ``:memory:``), which no other process or later command can open again."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    return scheme == "memory" or (scheme == "sqlite" and _sqlite_in_memory(url) is not None)


async def open_store(url: str | None = None, *, create: bool = True, tenant: str | None = None) -> OpenedStore:
    """Open the store a URL names (None: the default SQLite file); raises ``StoreError`` for an
    unknown scheme, ``StoreUnavailable``/``StoreCorrupt`` when it cannot be opened.

    With ``create=False`` (read-only commands) a store that does not exist yet raises
    ``StoreMissing`` and nothing is written: no file, no directory, no schema (SQLite), no
    schema or tables (PostgreSQL).

    With ``tenant`` the store is seen through that tenant (a ``TenantStore``, see
    ``slateboard.stores.tenancy``): its boards only. A malformed id raises ``InvalidInput``, one
    the store's registry does not have ``UnknownTenant``; closing the scope closes the store.
    """
    if tenant is not None:
        from .tenancy import check_tenant_id, open_tenant

        check_tenant_id(tenant)  # before anything is opened or created
        return await open_tenant(await open_store(url, create=create), tenant, owns=True)
    url = url or DEFAULT_URL
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "memory":
        return MemoryStore.from_url(url)
    in_memory = _sqlite_in_memory(url) if scheme == "sqlite" else None
    if in_memory is not None:
        return MemoryStore.from_url("memory://" + (f"?{in_memory}" if in_memory else ""))
    if scheme == "sqlite" or (not scheme and url.lower().endswith((".db", ".sqlite", ".sqlite3"))):
        from .sqlite import SqliteStore

        if not scheme:
            url = f"sqlite:///{Path(url).expanduser().absolute().as_posix()}"
        absolute, path = _sqlite_url(url)
        if not create:
            _refuse_missing(path, url)
        return await SqliteStore.open(absolute)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise StoreError(
                f"the postgresql store needs psycopg 3 with its pool: pip install 'slateboard[postgres]' ({exc})"
            ) from None
        return await PostgresStore.open(url, create=create)
    raise StoreError(
        f"unknown store URL {url!r}: use memory://, sqlite:///relative.db, sqlite:////absolute.db or postgresql://..."
    )


__all__ = [
    "BOARD_STATUSES",
    "AgendaChanges",
    "AgendaError",
    "AppendResult",
    "BoardExists",
    "BoardInfo",
    "BoardNotFound",
    "Claim",
    "ClaimRequest",
    "CommitStats",
    "Conflict",
    "DuplicateInvocationCommit",
    "Lease",
    "LeaseLost",
    "LoadedBoard",
    "MemoryStore",
    "OpenedStore",
    "ReportsCommits",
    "ReportsLeases",
    "ScansStalledBoards",
    "SchemaTooNew",
    "ServesManyRunners",
    "Snapshot",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreMissing",
    "StoreUnavailable",
    "WatchesBoards",
    "WatchesWork",
    "in_memory_url",
    "open_store",
    "sqlite_path",
    "supports",
]
