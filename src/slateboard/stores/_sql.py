"""The SQL the two SQL backends share, written once and rendered per dialect.

SQLite (``?`` parameters, ``rowid`` as insertion order) and PostgreSQL (``%s`` parameters, a
``created`` bigserial) run the same statements for everything but their transaction plumbing,
claims (PostgreSQL adds ``FOR UPDATE SKIP LOCKED``) and the few places a driver differs.
``LIVE`` is the predicate that lets both planners use the partial indexes over live
invocations (migration 3): it must appear literally in any query that walks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary import BoardStatus
from .migrations import SCHEMA_TABLE

LIVE = "status IN ('pending', 'claimed')"
"""Live invocations: the only ones claims and agenda reads walk."""

BOARD_COLS = "board_id, name, status, reason, created_at, updated_at, version, last_seq, last_hash, meta"
SNAPSHOT_COLS = "seq, version, last_hash, state_hash, state"
BOARD_TABLES = ("records", "snapshots", "invocations", "boards")
"""Every table holding a board's rows (deleted in this order)."""


@dataclass(frozen=True)
class Dialect:
    """The statements for one SQL backend (``param``: its placeholder; ``order``: the column
    that breaks ties in insertion order)."""

    param: str
    order: str

    def q(self, sql: str) -> str:
        """``sql`` written with ``?`` placeholders, in this dialect."""
        return sql if self.param == "?" else sql.replace("?", self.param)

    @property
    def select_board(self) -> str:
        return self.q(f"SELECT {BOARD_COLS} FROM boards WHERE board_id = ?")

    @property
    def list_boards(self) -> str:
        return f"SELECT {BOARD_COLS} FROM boards ORDER BY created_at, {self.order}"

    @property
    def list_boards_in(self) -> str:
        return self.q(f"SELECT {BOARD_COLS} FROM boards WHERE status = ? ORDER BY created_at, {self.order}")

    @property
    def insert_board(self) -> str:
        return self.q(
            "INSERT INTO boards (board_id, name, blueprint, initial_state, meta, status, reason, created_at,"
            " updated_at, version, last_seq, last_hash, snapshot_seq)"
            " VALUES (?, ?, ?, ?, ?, 'running', NULL, ?, ?, 0, 0, ?, 0)"
            " ON CONFLICT (board_id) DO NOTHING RETURNING board_id"
        )

    @property
    def set_status(self) -> str:
        return self.q("UPDATE boards SET status = ?, reason = ?, updated_at = ? WHERE board_id = ?")

    def delete_from(self, table: str) -> str:
        """Delete a board's rows from one of BOARD_TABLES."""
        assert table in BOARD_TABLES
        return self.q(f"DELETE FROM {table} WHERE board_id = ?")

    @property
    def select_blueprint(self) -> str:
        return self.q("SELECT blueprint, initial_state FROM boards WHERE board_id = ?")

    @property
    def select_initial_and_seq(self) -> str:
        return self.q("SELECT initial_state, last_seq FROM boards WHERE board_id = ?")

    @property
    def select_snapshot(self) -> str:
        return self.q(f"SELECT {SNAPSHOT_COLS} FROM snapshots WHERE board_id = ?")

    @property
    def records_between(self) -> str:
        return self.q("SELECT seq, data FROM records WHERE board_id = ? AND seq > ? AND seq <= ? ORDER BY seq")

    @property
    def records_from(self) -> str:
        return self.q("SELECT seq, data FROM records WHERE board_id = ? AND seq >= ? ORDER BY seq LIMIT ?")

    @property
    def record_at(self) -> str:
        return self.q("SELECT data FROM records WHERE board_id = ? AND seq = ?")

    @property
    def advance_snapshot_seq(self) -> str:
        """Move the board's snapshot position forward only (a row back: this snapshot is newer)."""
        return self.q("UPDATE boards SET snapshot_seq = ? WHERE board_id = ? AND snapshot_seq < ? RETURNING 1")

    @property
    def upsert_snapshot(self) -> str:
        return self.q(
            "INSERT INTO snapshots (board_id, seq, version, last_hash, state_hash, state)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (board_id) DO UPDATE SET seq = excluded.seq,"
            " version = excluded.version, last_hash = excluded.last_hash,"
            " state_hash = excluded.state_hash, state = excluded.state"
        )

    @property
    def insert_invocation(self) -> str:
        """A pending invocation, skipped (no row back) when its id is taken or its key pending."""
        return self.q(
            "INSERT INTO invocations (board_id, id, key, worker, priority, ord, status, attempts, data)"
            " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT DO NOTHING RETURNING id"
        )

    @property
    def heartbeat(self) -> str:
        return self.q(
            "UPDATE invocations SET lease_until = ? WHERE board_id = ? AND id = ? AND status = 'claimed' AND owner = ?"
        )

    @property
    def requeue(self) -> str:
        return self.q(
            "UPDATE invocations SET status = ?, owner = NULL, lease_until = NULL, data = COALESCE(?, data),"
            " attempts = COALESCE(?, attempts) WHERE board_id = ? AND id = ?"
        )

    @property
    def cancel(self) -> str:
        return self.q(
            "UPDATE invocations SET status = 'cancelled', owner = NULL, lease_until = NULL"
            " WHERE board_id = ? AND id = ?"
        )

    @property
    def stalled_boards(self) -> str:
        return (
            "SELECT b.board_id FROM boards b WHERE b.status = 'running' AND NOT EXISTS (SELECT 1 FROM"
            f" invocations i WHERE i.board_id = b.board_id AND i.{LIVE})"
            f" ORDER BY b.created_at, b.{self.order}"
        )

    @property
    def schema_version(self) -> str:
        return f"SELECT MAX(version) FROM {SCHEMA_TABLE}"

    @property
    def record_migration(self) -> str:
        return self.q(f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (?, ?)")

    @property
    def invocation_status(self) -> str:
        return self.q("SELECT status FROM invocations WHERE board_id = ? AND id = ?")

    @property
    def expired_claims(self) -> str:
        """Claimed invocations whose lease ended by time ``?``, in insertion order."""
        return self.q(
            f"SELECT board_id, id FROM invocations WHERE status = 'claimed' AND lease_until <= ? ORDER BY {self.order}"
        )

    def list_boards_query(self, status: BoardStatus | None) -> tuple[str, tuple[str, ...]]:
        """Every board, or those in ``status``, oldest first: the statement and its parameters."""
        return (self.list_boards, ()) if status is None else (self.list_boards_in, (status,))

    def claimable(self, alias: str = "i") -> str:
        """The WHERE terms of an invocation (table alias ``alias``) a claim may take at time ``?``."""
        return self.q(f"{alias}.{LIVE} AND ({alias}.status = 'pending' OR {alias}.lease_until <= ?)")


SQLITE = Dialect("?", "rowid")
POSTGRES = Dialect("%s", "created")
