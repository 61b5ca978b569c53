"""The SQL only the PostgreSQL store runs (``%s`` parameters, a ``created`` bigserial as
insertion order); what it shares with SQLite is in ``stores._sql`` (``POSTGRES``).

Every query over live invocations spells out ``status IN ('pending', 'claimed')`` (``_sql.LIVE``)
so the planner can use the partial indexes over them (migrations 2 and 3).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._sql import LIVE, POSTGRES
from .migrations import SCHEMA_TABLE

NOTIFY = "SELECT pg_notify(%s, %s)"

APPEND = (
    # The CAS and the record insert in one statement: no row from the UPDATE, no insert.
    "WITH b AS (UPDATE boards SET version = %s, last_seq = %s, last_hash = %s, updated_at = %s"
    " WHERE board_id = %s AND last_seq = %s AND last_hash = %s AND version = %s"
    " RETURNING snapshot_seq)"
    " INSERT INTO records (board_id, seq, data) SELECT %s, %s, %s FROM b"
    " RETURNING (SELECT snapshot_seq FROM b)"
)
"""An append's compare-and-set and record insert (``NewRecord.cas_args``, then board id, seq
and data): a row back only when the record continues the stored log."""

COMPLETE = (
    "UPDATE invocations SET status = 'done', done_seq = %s, owner = NULL, lease_until = NULL"
    f" WHERE board_id = %s AND id = ANY(%s) AND {LIVE} RETURNING id"
)
"""Complete the live ones of a list of invocations (their ids come back)."""

WHY_INCOMPLETE = "SELECT id, status, done_seq FROM invocations WHERE board_id = %s AND id = ANY(%s)"
LOCK_INVOCATION_STATUS = POSTGRES.invocation_status + " FOR UPDATE"
KEY_PENDING_ELSEWHERE = (
    "SELECT 1 FROM invocations o, invocations i WHERE i.board_id = %s AND i.id = %s AND o.board_id = i.board_id"
    " AND o.key = i.key AND o.status = 'pending' AND o.id != i.id"
)
PUSH_AND_NOTIFY = f"WITH ins AS ({POSTGRES.insert_invocation}) SELECT id, pg_notify(%s, %s) FROM ins"
"""Insert a pending invocation and, when it is added, notify a channel (parameters: the
insert's, then the channel and its payload)."""

EXPIRED_CLAIMS = POSTGRES.expired_claims + " FOR UPDATE SKIP LOCKED"
LEASES = (
    "SELECT id, owner, lease_until FROM invocations WHERE board_id = %s AND status = 'claimed'"
    " AND owner IS NOT NULL AND lease_until IS NOT NULL ORDER BY id"
)

ADVISORY_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s))"
SCHEMA_TABLES = "SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
HAS_STORE = "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s"
SCHEMA_VERSION = f"SELECT MAX(version) FROM {SCHEMA_TABLE}"


def claim(terms: Sequence[str]) -> str:
    """Pick and lease the best invocation matching ``terms`` (alias ``i2``, boards ``b``) with
    ``FOR UPDATE SKIP LOCKED``: concurrent claimers never wait for each other nor get the same
    row. Parameters: owner, lease end, then the terms'."""
    return (
        "UPDATE invocations i SET status = 'claimed', owner = %s, lease_until = %s, claims = i.claims + 1"
        " FROM (SELECT i2.board_id, i2.id FROM invocations i2 JOIN boards b ON b.board_id = i2.board_id"
        f" WHERE {' AND '.join(terms)} ORDER BY i2.priority DESC, i2.ord, i2.created LIMIT 1"
        " FOR UPDATE OF i2 SKIP LOCKED) pick"
        " WHERE i.board_id = pick.board_id AND i.id = pick.id"
        " RETURNING i.board_id, i.data, i.attempts, i.claims"
    )


def has_work(terms: str) -> str:
    """Whether a running board has an invocation matching ``terms``."""
    return (
        "SELECT 1 FROM invocations i JOIN boards b ON b.board_id = i.board_id"
        f" WHERE {terms} AND b.status = 'running' LIMIT 1"
    )


def agenda(live: bool) -> str:
    """A board's invocations in the statuses of an array parameter, in agenda order; ``live``:
    they are all live statuses, said in the SQL so the partial index is used."""
    extra = f" AND {LIVE}" if live else ""
    return (
        "SELECT data, status, attempts FROM invocations WHERE board_id = %s AND status = ANY(%s)"
        f"{extra} ORDER BY priority DESC, ord, created"
    )
