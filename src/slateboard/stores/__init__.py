"""Stores: boards, blueprints, logs, snapshots and agendas behind one async protocol.

``open_store(url)`` picks the backend from the URL:

- ``memory://`` : in process, for tests;
- ``sqlite:///abs/path.db`` (or ``sqlite://`` for ``<user data dir>/slateboard/slateboard.db``;
  a bare path ending in ``.db``/``.sqlite``/``.sqlite3`` works too): the default, one file, WAL;
- ``postgresql://user@host:port/db?schema=NAME``: shared by many runner processes and machines.

Every backend accepts ``?snapshot_every=N``. See ``slateboard.stores.base`` for the guarantees
and the capability layers, ``slateboard.testing`` for the conformance suite a backend must pass.
"""

from __future__ import annotations

from .base import (
    BOARD_STATUSES,
    CAPABILITIES,
    DEFAULT_LEASE_S,
    DEFAULT_SNAPSHOT_EVERY,
    AgendaChanges,
    AgendaError,
    AgendaStore,
    AppendResult,
    BoardExists,
    BoardInfo,
    BoardNotFound,
    Claim,
    ClaimRequest,
    CommitStats,
    Conflict,
    DuplicateInvocationCommit,
    LeaseLost,
    LoadedBoard,
    LogStore,
    ReportsCommits,
    ScansStalledBoards,
    SchemaTooNew,
    Snapshot,
    Store,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    WatchesBoards,
    WatchesWork,
    supports,
)
from .memory import MemoryStore

DEFAULT_URL = "sqlite://"
"""The default store: SQLite in the user's data directory."""


async def open_store(url: str | None = None) -> Store:
    """Open the store a URL names (None: the default SQLite file); raises ``StoreError`` for an
    unknown scheme, ``StoreUnavailable``/``StoreCorrupt`` when it cannot be opened."""
    url = url or DEFAULT_URL
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "memory":
        return MemoryStore.from_url(url)
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        return await SqliteStore.open(url)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise StoreError(
                f"the postgresql store needs psycopg 3 with its pool: pip install 'slateboard[postgres]' ({exc})"
            ) from None
        return await PostgresStore.open(url)
    if not scheme and url.lower().endswith((".db", ".sqlite", ".sqlite3")):
        from pathlib import Path

        from .sqlite import SqliteStore

        return await SqliteStore.open(f"sqlite:///{Path(url).expanduser().resolve()}")
    raise StoreError(f"unknown store URL {url!r}: use memory://, sqlite:///path.db or postgresql://...")


__all__ = [
    "BOARD_STATUSES",
    "CAPABILITIES",
    "DEFAULT_LEASE_S",
    "DEFAULT_SNAPSHOT_EVERY",
    "DEFAULT_URL",
    "AgendaChanges",
    "AgendaError",
    "AgendaStore",
    "AppendResult",
    "BoardExists",
    "BoardInfo",
    "BoardNotFound",
    "Claim",
    "ClaimRequest",
    "CommitStats",
    "Conflict",
    "DuplicateInvocationCommit",
    "LeaseLost",
    "LoadedBoard",
    "LogStore",
    "MemoryStore",
    "ReportsCommits",
    "ScansStalledBoards",
    "SchemaTooNew",
    "Snapshot",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreUnavailable",
    "WatchesBoards",
    "WatchesWork",
    "open_store",
    "supports",
]
