"""The SQL only the SQLite store runs (``?`` parameters, ``rowid`` as insertion order); what it
shares with PostgreSQL is in ``stores._sql`` (``SQLITE``).

Every query over live invocations spells out ``status IN ('pending', 'claimed')`` (``_sql.LIVE``)
so the planner uses the partial indexes over them (migration 3), whatever a board's history.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._sql import LIVE

APPEND_CAS = (
    "UPDATE boards SET version = ?, last_seq = ?, last_hash = ?, updated_at = ?"
    " WHERE board_id = ? AND last_seq = ? AND last_hash = ? AND version = ?"
    " RETURNING snapshot_seq, status"
)
"""The compare-and-set of an append as one statement (``NewRecord.cas_args``): it matches only
when the record continues the stored log, so the common case needs no SELECT first."""

BOARD_POSITION = "SELECT version, last_seq, last_hash FROM boards WHERE board_id = ?"
BOARD_STATUS = "SELECT status FROM boards WHERE board_id = ?"
INSERT_RECORD = "INSERT INTO records (board_id, seq, data) VALUES (?, ?, ?)"

COMPLETE = (
    "UPDATE invocations SET status = 'done', done_seq = ?, owner = NULL, lease_until = NULL"
    f" WHERE board_id = ? AND id = ? AND {LIVE} RETURNING 1"
)
"""Complete one live invocation (a row back when it was live)."""

WHY_INCOMPLETE = "SELECT status, done_seq FROM invocations WHERE board_id = ? AND id = ?"
INVOCATION_KEY = "SELECT key FROM invocations WHERE board_id = ? AND id = ?"
KEY_PENDING_ELSEWHERE = "SELECT 1 FROM invocations WHERE board_id = ? AND key = ? AND status = 'pending' AND id != ?"

LEASES = (
    "SELECT id, owner, lease_until FROM invocations WHERE board_id = ? AND status = 'claimed'"
    " AND owner IS NOT NULL AND lease_until IS NOT NULL ORDER BY rowid"
)

TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
INTEGRITY_CHECK = "PRAGMA integrity_check(5)"


def workers_in(count: int, alias: str = "i") -> str:
    """The term keeping invocations of ``count`` worker names (as parameters)."""
    return f"{alias}.worker IN ({', '.join('?' * count)})"


def claim(board: bool, terms: Sequence[str]) -> str:
    """Pick and lease the best invocation matching ``terms`` (of the board ``?`` when
    ``board``, else of any running board) in one statement; parameters: owner, lease end, then
    the board id when ``board``, then the terms'. The connection holds the write lock, so
    nobody can take the row between the pick and the update."""
    where = " AND ".join(terms)
    if board:
        pick = f"SELECT i.rowid FROM invocations i WHERE i.board_id = ? AND {where}"
    else:
        pick = f"SELECT i.rowid FROM invocations i JOIN boards b ON b.board_id = i.board_id WHERE b.status = 'running' AND {where}"
    return (
        "UPDATE invocations SET status = 'claimed', owner = ?, lease_until = ?, claims = claims + 1"
        f" WHERE rowid = ({pick} ORDER BY i.priority DESC, i.ord, i.rowid LIMIT 1)"
        " RETURNING board_id, data, attempts, claims"
    )


def has_work(terms: str) -> str:
    """Whether a running board has an invocation matching ``terms``."""
    return (
        f"SELECT 1 FROM invocations i JOIN boards b ON b.board_id = i.board_id WHERE {terms}"
        " AND b.status = 'running' LIMIT 1"
    )


def agenda(statuses: int, live: bool) -> str:
    """A board's invocations in ``statuses`` statuses (parameters), in agenda order; ``live``:
    they are all live statuses, said in the SQL so the partial index is used."""
    extra = f" AND {LIVE}" if live else ""
    return (
        "SELECT data, status, attempts FROM invocations"
        f" WHERE board_id = ? AND status IN ({', '.join('?' * statuses)}){extra} ORDER BY priority DESC, ord, rowid"
    )
