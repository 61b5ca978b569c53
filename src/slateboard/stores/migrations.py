"""Versioned store schemas: the DDL of each version and the steps from one to the next.

A store keeps its schema version in the ``slateboard_schema`` table (one row per applied
version). Opening a store applies every missing step in one transaction, so a store written by
an older slateboard opens (and is upgraded); one written by a newer slateboard is refused with
``SchemaTooNew`` rather than misread.

History:
  1. boards, records (one row per record: its canonical bytes), snapshots (latest per board),
     invocations.
  2. invocations gain ``claims`` (how often claimed) and ``done_seq`` (the record that completed
     it: the idempotency key of an invocation commit), a unique index that keeps one pending
     invocation per (board, key) (older duplicates are cancelled by the upgrade), and the
     index claims walk.
  3. claims and agenda reads in O(1) of a board's history: partial indexes over the live
     (pending or claimed) invocations only, per board and across boards, in agenda order; the
     v2 claim index (over every invocation ever pushed) is dropped on SQLite.
"""

from __future__ import annotations

SCHEMA_VERSION = 3
"""The schema version this code writes."""

SCHEMA_TABLE = "slateboard_schema"

# -- sqlite -------------------------------------------------------------------------------------
SQLITE_V1 = [
    f"CREATE TABLE {SCHEMA_TABLE} (version INTEGER NOT NULL PRIMARY KEY, applied_at REAL NOT NULL)",
    """CREATE TABLE boards (
        board_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        blueprint BLOB NOT NULL,
        initial_state BLOB NOT NULL,
        meta BLOB NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        version INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        last_hash TEXT NOT NULL,
        snapshot_seq INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE records (
        board_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (board_id, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE snapshots (
        board_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        version INTEGER NOT NULL,
        last_hash TEXT NOT NULL,
        state_hash TEXT NOT NULL,
        state BLOB NOT NULL
    )""",
    """CREATE TABLE invocations (
        board_id TEXT NOT NULL,
        id TEXT NOT NULL,
        key TEXT NOT NULL,
        worker TEXT NOT NULL,
        priority INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        owner TEXT,
        lease_until REAL,
        data BLOB NOT NULL,
        UNIQUE (board_id, id)
    )""",
]

SQLITE_V2 = [
    "ALTER TABLE invocations ADD COLUMN claims INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE invocations ADD COLUMN done_seq INTEGER",
    """UPDATE invocations SET status = 'cancelled'
       WHERE status = 'pending' AND rowid NOT IN (
           SELECT MIN(rowid) FROM invocations WHERE status = 'pending' GROUP BY board_id, key)""",
    "CREATE UNIQUE INDEX invocations_pending_key ON invocations (board_id, key) WHERE status = 'pending'",
    "CREATE INDEX invocations_claimable ON invocations (status, priority DESC, ord)",
]

# A live invocation is pending or claimed; done and cancelled rows are history, which these
# indexes leave out, so a claim walks only the live rows of a board (in agenda order: SQLite's
# index entries end with the rowid, the insertion order the agenda breaks ties with).
SQLITE_V3 = [
    "DROP INDEX IF EXISTS invocations_claimable",
    "CREATE INDEX invocations_live ON invocations (board_id, priority DESC, ord) WHERE status IN ('pending', 'claimed')",
    "CREATE INDEX invocations_live_all ON invocations (priority DESC, ord) WHERE status IN ('pending', 'claimed')",
]

SQLITE_MIGRATIONS: list[tuple[int, list[str]]] = [(1, SQLITE_V1), (2, SQLITE_V2), (3, SQLITE_V3)]
"""(version, statements) in order; a store at version v runs every step above v."""

SQLITE_TABLES = ("boards", "records", "snapshots", "invocations")

# -- postgresql -----------------------------------------------------------------------------------
POSTGRES_V1 = [
    f"CREATE TABLE {SCHEMA_TABLE} (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
    """CREATE TABLE boards (
        board_id text PRIMARY KEY,
        name text NOT NULL,
        blueprint bytea NOT NULL,
        initial_state bytea NOT NULL,
        meta bytea NOT NULL,
        status text NOT NULL,
        reason text,
        created bigserial,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        version bigint NOT NULL,
        last_seq bigint NOT NULL,
        last_hash text NOT NULL,
        snapshot_seq bigint NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE records (
        board_id text NOT NULL,
        seq bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (board_id, seq)
    )""",
    """CREATE TABLE snapshots (
        board_id text PRIMARY KEY,
        seq bigint NOT NULL,
        version bigint NOT NULL,
        last_hash text NOT NULL,
        state_hash text NOT NULL,
        state bytea NOT NULL
    )""",
    """CREATE TABLE invocations (
        board_id text NOT NULL,
        id text NOT NULL,
        key text NOT NULL,
        worker text NOT NULL,
        priority integer NOT NULL,
        ord bigint NOT NULL,
        created bigserial,
        status text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        owner text,
        lease_until double precision,
        data bytea NOT NULL,
        PRIMARY KEY (board_id, id)
    )""",
]

POSTGRES_V2 = [
    "ALTER TABLE invocations ADD COLUMN claims integer NOT NULL DEFAULT 0",
    "ALTER TABLE invocations ADD COLUMN done_seq bigint",
    """UPDATE invocations AS i SET status = 'cancelled'
       WHERE i.status = 'pending' AND EXISTS (
           SELECT 1 FROM invocations o WHERE o.board_id = i.board_id AND o.key = i.key
           AND o.status = 'pending' AND o.created < i.created)""",
    "CREATE UNIQUE INDEX invocations_pending_key ON invocations (board_id, key) WHERE status = 'pending'",
    "CREATE INDEX invocations_claimable ON invocations (priority DESC, ord, created) WHERE status IN ('pending', 'claimed')",
]

POSTGRES_V3 = [
    "CREATE INDEX invocations_live ON invocations (board_id, priority DESC, ord, created)"
    " WHERE status IN ('pending', 'claimed')",
]

POSTGRES_MIGRATIONS: list[tuple[int, list[str]]] = [(1, POSTGRES_V1), (2, POSTGRES_V2), (3, POSTGRES_V3)]
