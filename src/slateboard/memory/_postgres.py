"""Semantic memory in the board store's PostgreSQL database and schema (full-text search)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import orjson
import psycopg
from psycopg import sql

from ..errors import InvalidInput
from ._model import COLUMNS, Fact, NewFact, fact_from_row, prune_where, query_terms, tenant_where

__all__ = ["PostgresMemory"]

_OPTIONS = {"schema", "snapshot_every", "pool_min", "pool_max", "connect_timeout_s"}
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
"""A schema name the board store accepts (the same rule): the only names memory opens."""
INDEXED_CHARS = 100_000
"""How much of a fact's text is indexed for search. PostgreSQL refuses a ``tsvector`` over 1 MB,
and a refused row would abort its whole batch; the first 100,000 characters stay far below that
(at most ~6 bytes of ``tsvector`` per character), and the text itself is stored whole."""


def _split_options(url: str) -> tuple[str, dict[str, str]]:
    """The libpq URL without the store's own query parameters (``schema``, ...), and those."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    mine: dict[str, str] = {}
    rest: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in _OPTIONS:
            mine[key] = value
        else:
            rest.append((key, value))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment)), mine


_TSV = f"to_tsvector('english', left(text, {INDEXED_CHARS}))"


async def _bound_index(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """A table made before the index was bounded (``to_tsvector('english', text)``) gets the
    bounded column: one rewrite, in a transaction, the index rebuilt after."""
    cur = await conn.execute(
        "SELECT generation_expression FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = 'memory_facts' AND column_name = 'tsv'",
        (schema,),
    )
    row = await cur.fetchone()
    if row is None or "left(" in str(row[0]):
        return
    async with conn.transaction():
        await conn.execute("ALTER TABLE memory_facts DROP COLUMN tsv")
        await conn.execute(f"ALTER TABLE memory_facts ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({_TSV}) STORED")


class PostgresMemory:
    """Facts in table ``memory_facts`` of the store's schema; a generated ``tsvector`` column
    (over the first ``INDEXED_CHARS`` of each text) with a GIN index; ranking by ``ts_rank_cd``
    over an OR of the query's words. The schema is a checked identifier (``_IDENT``)."""

    def __init__(self, url: str, conn: psycopg.AsyncConnection[Any], tenant: str | None = None) -> None:
        self.url = url
        self._conn = conn
        self.tenant = tenant
        """The tenant whose facts this object reads and writes (None: every fact)."""
        self._scope = tenant_where("%s", tenant)

    @classmethod
    async def open(cls, url: str, tenant: str | None = None) -> PostgresMemory:
        """Connect to the store's database and schema; create the table if needed."""
        dsn, opts = _split_options(url)
        dsn = "postgresql" + dsn[dsn.index(":") :] if dsn.startswith("postgres:") else dsn
        schema = opts.get("schema", "slateboard")
        if not _IDENT.match(schema):
            # validated before it reaches any SQL or connection option (issue 29, R5)
            raise InvalidInput(
                f"memory schema {schema!r}: use lowercase letters, digits and _ (at most 51), as for the board store"
            )
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, options=f"-c search_path={schema}")
        try:
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS memory_facts ("
                " id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL, board TEXT NOT NULL, seq BIGINT, worker TEXT,"
                " created DOUBLE PRECISION NOT NULL, last_used DOUBLE PRECISION, meta TEXT,"
                f" tsv tsvector GENERATED ALWAYS AS ({_TSV}) STORED)"
            )
            await _bound_index(conn, schema)
            # a table from before tenants gains the column: its facts belong to no tenant ('')
            await conn.execute("ALTER TABLE memory_facts ADD COLUMN IF NOT EXISTS tenant TEXT NOT NULL DEFAULT ''")
            await conn.execute("CREATE INDEX IF NOT EXISTS memory_facts_tenant ON memory_facts (tenant, id)")
            await conn.execute("CREATE INDEX IF NOT EXISTS memory_facts_tsv ON memory_facts USING GIN (tsv)")
        except BaseException:
            await conn.close()
            raise
        return cls(url, conn, tenant)

    async def add(self, facts: Sequence[NewFact], *, now: float | None = None) -> list[int]:
        """Store ``facts`` in one transaction; their ids."""
        at = time.time() if now is None else now
        ids: list[int] = []
        async with self._conn.transaction():
            for f in facts:
                cur = await self._conn.execute(
                    "INSERT INTO memory_facts (text, board, seq, worker, created, meta, tenant)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                    (f.text, f.board, f.seq, f.worker, at, orjson.dumps(f.meta).decode(), self.tenant or ""),
                )
                row = await cur.fetchone()
                assert row is not None
                ids.append(int(row[0]))
        return ids

    async def search(self, query: str, *, k: int = 5, now: float | None = None) -> list[Fact]:
        """Full-text search: facts matching any query word, ranked by ``ts_rank_cd``."""
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        cur = await self._conn.execute(
            f"WITH q AS (SELECT to_tsquery('english', %s) AS q) SELECT {COLUMNS}, ts_rank_cd(tsv, q.q) AS rank"
            f" FROM memory_facts, q WHERE tsv @@ q.q AND {self._scope[0]} ORDER BY rank DESC, id LIMIT %s",
            (" | ".join(terms), *self._scope[1], k),
        )
        rows = await cur.fetchall()
        found = [fact_from_row(r, float(r[8])) for r in rows]
        if found:
            at = time.time() if now is None else now
            await self._conn.execute(
                "UPDATE memory_facts SET last_used = %s WHERE id = ANY(%s)", (at, [f.id for f in found])
            )
        return found

    async def facts(self, *, board: str | None = None) -> list[Fact]:
        """Every fact (of ``board``), oldest first."""
        scope, args = self._scope
        if board is None:
            cur = await self._conn.execute(f"SELECT {COLUMNS} FROM memory_facts WHERE {scope} ORDER BY id", args)
        else:
            cur = await self._conn.execute(
                f"SELECT {COLUMNS} FROM memory_facts WHERE board = %s AND {scope} ORDER BY id", (board, *args)
            )
        return [fact_from_row(r) for r in await cur.fetchall()]

    async def touch(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Mark facts ``ids`` as retrieved at ``now``."""
        at = time.time() if now is None else now
        scope, args = self._scope
        await self._conn.execute(
            f"UPDATE memory_facts SET last_used = %s WHERE id = ANY(%s) AND {scope}", (at, list(ids), *args)
        )

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        unused_for_s: float | None = None,
        keep_last: int | None = None,
        now: float | None = None,
    ) -> int:
        """Apply the retention rules (see ``FactStore.prune``)."""
        at = time.time() if now is None else now
        where = prune_where(
            "%s", at=at, older_than_s=older_than_s, unused_for_s=unused_for_s, keep_last=keep_last, tenant=self.tenant
        )
        if where is None:
            return 0
        clause, args = where
        cur = await self._conn.execute(f"DELETE FROM memory_facts WHERE {clause}", args)
        return int(cur.rowcount)

    async def close(self) -> None:
        """Close the connection."""
        await self._conn.close()
