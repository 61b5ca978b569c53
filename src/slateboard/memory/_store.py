"""Semantic memory: distilled facts with provenance, beside the board store, searched by BM25.

``open_memory(url)`` takes the board store's URL: with ``sqlite:`` the facts live in the same
SQLite file (table ``memory_facts`` and its FTS5 index ``memory_facts_fts``, ranked with FTS5's
``bm25()``); with ``postgresql:`` in the same database and schema (table ``memory_facts`` with a
generated ``tsvector`` column and a GIN index, ranked with ``ts_rank_cd``); ``memory://`` keeps
them in process (a plain term-overlap ranking, for tests).

A fact is text plus provenance: the board, the record seq and the worker it was distilled from,
the distiller's name, when it was written and when a retrieval last returned it. ``prune``
applies retention rules. Memory is never read by replay: what a board retrieves enters it as a
logged proposal (``slateboard.memory.RecallWorker``).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from typing import Protocol

import orjson

from ..errors import InvalidInput
from ._model import COLUMNS, Fact, NewFact, fact_from_row, prune_where, query_terms, query_terms_all, tenant_where

__all__ = ["FactStore", "InProcessMemory", "SqliteMemory", "open_memory"]


class FactStore(Protocol):
    """Where distilled facts live (long-term memory; the board store is ``slateboard.stores``).

    Guarantees: ``add`` returns the new facts' ids in order;
    ``search`` returns at most ``k`` facts, best first, any of whose words match the query
    (BM25-style ranking), and marks them used at ``now``; ``prune`` deletes exactly the facts
    its rules select and returns how many."""

    url: str

    async def add(self, facts: Sequence[NewFact], *, now: float | None = None) -> list[int]:
        """Store ``facts``; their ids."""
        ...

    async def search(self, query: str, *, k: int = 5, now: float | None = None) -> list[Fact]:
        """The ``k`` best facts for ``query``."""
        ...

    async def facts(self, *, board: str | None = None) -> list[Fact]:
        """Every fact (of ``board``), oldest first."""
        ...

    async def touch(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Mark facts ``ids`` as retrieved at ``now`` (retention's "unused for" rule)."""
        ...

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        unused_for_s: float | None = None,
        keep_last: int | None = None,
        now: float | None = None,
    ) -> int:
        """Delete facts created more than ``older_than_s`` ago, not retrieved (nor created) for
        ``unused_for_s``, or beyond the newest ``keep_last``; how many were deleted."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


class SqliteMemory:
    """Facts in the board store's SQLite file, indexed with FTS5 (external-content table)."""

    def __init__(self, path: str, url: str, tenant: str | None = None) -> None:
        self.url = url
        self.tenant = tenant
        """The tenant whose facts this object reads and writes (None: every fact; added ones
        belong to no tenant)."""
        self._scope = tenant_where("?", tenant)
        self._conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._lock = asyncio.Lock()
        self._conn.executescript(
            """
            PRAGMA journal_mode=WAL;
            CREATE TABLE IF NOT EXISTS memory_facts (
                id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, board TEXT NOT NULL,
                seq INTEGER, worker TEXT, created REAL NOT NULL, last_used REAL, meta TEXT);
            CREATE VIRTUAL TABLE IF NOT EXISTS memory_facts_fts USING fts5(
                text, content='memory_facts', content_rowid='id', tokenize='porter unicode61');
            CREATE TRIGGER IF NOT EXISTS memory_facts_ai AFTER INSERT ON memory_facts BEGIN
                INSERT INTO memory_facts_fts(rowid, text) VALUES (new.id, new.text); END;
            CREATE TRIGGER IF NOT EXISTS memory_facts_ad AFTER DELETE ON memory_facts BEGIN
                INSERT INTO memory_facts_fts(memory_facts_fts, rowid, text) VALUES ('delete', old.id, old.text); END;
            """
        )
        # A file from before tenants gains the column: its facts belong to no tenant ('').
        if "tenant" not in {row[1] for row in self._conn.execute("PRAGMA table_info(memory_facts)")}:
            self._conn.execute("ALTER TABLE memory_facts ADD COLUMN tenant TEXT NOT NULL DEFAULT ''")
        self._conn.execute("CREATE INDEX IF NOT EXISTS memory_facts_tenant ON memory_facts (tenant, id)")

    async def add(self, facts: Sequence[NewFact], *, now: float | None = None) -> list[int]:
        """Store ``facts`` in one transaction; their ids."""
        at = time.time() if now is None else now
        async with self._lock:
            ids: list[int] = []
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                for f in facts:
                    cur = self._conn.execute(
                        "INSERT INTO memory_facts (text, board, seq, worker, created, meta, tenant) VALUES (?,?,?,?,?,?,?)",
                        (f.text, f.board, f.seq, f.worker, at, orjson.dumps(f.meta).decode(), self.tenant or ""),
                    )
                    ids.append(int(cur.lastrowid or 0))
            return ids

    async def search(self, query: str, *, k: int = 5, now: float | None = None) -> list[Fact]:
        """BM25 (FTS5 ``bm25()``; lower is better there, so the score is its negation)."""
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        scope, args = tenant_where("?", self.tenant, "f.tenant")
        async with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join('f.' + c for c in COLUMNS.split(', '))}, bm25(memory_facts_fts) AS rank "
                "FROM memory_facts_fts JOIN memory_facts f ON f.id = memory_facts_fts.rowid "
                f"WHERE memory_facts_fts MATCH ? AND {scope} ORDER BY rank, f.id LIMIT ?",
                (match, *args, k),
            ).fetchall()
            found = [fact_from_row(r, -float(r[8])) for r in rows]
            if found:
                at = time.time() if now is None else now
                self._conn.executemany(
                    "UPDATE memory_facts SET last_used = ? WHERE id = ?", [(at, f.id) for f in found]
                )
        return found

    async def facts(self, *, board: str | None = None) -> list[Fact]:
        """Every fact (of ``board``), oldest first."""
        async with self._lock:
            scope, args = self._scope
            if board is None:
                rows = self._conn.execute(
                    f"SELECT {COLUMNS} FROM memory_facts WHERE {scope} ORDER BY id", args
                ).fetchall()
            else:
                rows = self._conn.execute(
                    f"SELECT {COLUMNS} FROM memory_facts WHERE board = ? AND {scope} ORDER BY id", (board, *args)
                ).fetchall()
        return [fact_from_row(r) for r in rows]

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
            "?", at=at, older_than_s=older_than_s, unused_for_s=unused_for_s, keep_last=keep_last, tenant=self.tenant
        )
        if where is None:
            return 0
        clause, args = where
        async with self._lock:
            cur = self._conn.execute(f"DELETE FROM memory_facts WHERE {clause}", args)
            return int(cur.rowcount)

    async def touch(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Mark facts ``ids`` as retrieved at ``now``."""
        at = time.time() if now is None else now
        async with self._lock:
            scope, args = self._scope
            self._conn.executemany(
                f"UPDATE memory_facts SET last_used = ? WHERE id = ? AND {scope}", [(at, i, *args) for i in ids]
            )

    async def drop(self) -> None:
        """Remove the memory tables from the file (tests: boards must not need them)."""
        async with self._lock:
            self._conn.executescript(
                "DROP TRIGGER IF EXISTS memory_facts_ai; DROP TRIGGER IF EXISTS memory_facts_ad;"
                "DROP TABLE IF EXISTS memory_facts_fts; DROP TABLE IF EXISTS memory_facts;"
            )

    async def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class InProcessMemory:
    """Facts in a list, ranked by BM25 over the facts held (tests and ``memory://`` boards)."""

    def __init__(
        self, url: str = "memory://", tenant: str | None = None, *, shared: InProcessMemory | None = None
    ) -> None:
        self.url = url
        self.tenant = tenant
        """The tenant whose facts this object reads and writes (None: every fact)."""
        # A tenant's view of another object's facts (``scoped``) shares its list and counter.
        self._pool: list[tuple[str, Fact]] = shared._pool if shared is not None else []
        self._counter: list[int] = shared._counter if shared is not None else [1]

    def scoped(self, tenant: str | None) -> InProcessMemory:
        """The same facts seen by ``tenant`` (None: every fact)."""
        return InProcessMemory(self.url, tenant, shared=self)

    def _mine(self, tenant: str) -> bool:
        return self.tenant is None or tenant == self.tenant

    @property
    def _facts(self) -> list[Fact]:
        return [f for t, f in self._pool if self._mine(t)]

    async def add(self, facts: Sequence[NewFact], *, now: float | None = None) -> list[int]:
        """Store ``facts`` (in this object's tenant); their ids."""
        at = time.time() if now is None else now
        ids = []
        for f in facts:
            ident = self._counter[0]
            self._pool.append(
                (self.tenant or "", Fact(ident, f.text, f.board, f.seq, f.worker, at, None, dict(f.meta)))
            )
            ids.append(ident)
            self._counter[0] += 1
        return ids

    async def search(self, query: str, *, k: int = 5, now: float | None = None) -> list[Fact]:
        """Okapi BM25 (k1=1.2, b=0.75) over the held facts (the tenant's only: its statistics too)."""
        import math

        terms = query_terms(query)
        docs = [(f, query_terms_all(f.text)) for f in self._facts]
        if not terms or not docs or k <= 0:
            return []
        avg = sum(len(d) for _, d in docs) / len(docs)
        scored = []
        for f, words in docs:
            score = 0.0
            for t in terms:
                tf = words.count(t)
                if not tf:
                    continue
                df = sum(1 for _, d in docs if t in d)
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / max(avg, 1e-9)))
            if score > 0:
                scored.append((score, f))
        scored.sort(key=lambda p: (-p[0], p[1].id))
        at = time.time() if now is None else now
        top = scored[:k]
        await self.touch([f.id for _, f in top], now=at)
        return [Fact(f.id, f.text, f.board, f.seq, f.worker, f.created, at, f.meta, score) for score, f in top]

    async def facts(self, *, board: str | None = None) -> list[Fact]:
        """Every fact (of ``board``), oldest first."""
        return [f for f in self._facts if board is None or f.board == board]

    async def touch(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Mark facts ``ids`` (of this tenant) as retrieved at ``now``."""
        at = time.time() if now is None else now
        wanted = set(ids)
        self._pool[:] = [
            (t, Fact(f.id, f.text, f.board, f.seq, f.worker, f.created, at, f.meta))
            if f.id in wanted and self._mine(t)
            else (t, f)
            for t, f in self._pool
        ]

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        unused_for_s: float | None = None,
        keep_last: int | None = None,
        now: float | None = None,
    ) -> int:
        """Apply the retention rules (see ``FactStore.prune``) to this tenant's facts."""
        at = time.time() if now is None else now
        keep_ids = {f.id for f in sorted(self._facts, key=lambda f: -f.id)[: max(0, keep_last)]} if keep_last else set()

        def stale(t: str, f: Fact) -> bool:
            return self._mine(t) and (
                (older_than_s is not None and f.created < at - older_than_s)
                or (unused_for_s is not None and (f.last_used or f.created) < at - unused_for_s)
                or (keep_last is not None and f.id not in keep_ids)
            )

        before = len(self._pool)
        self._pool[:] = [(t, f) for t, f in self._pool if not stale(t, f)]
        return before - len(self._pool)

    async def close(self) -> None:
        """Nothing to release."""


async def open_memory(url: str, *, tenant: str | None = None) -> FactStore:
    """The memory beside the board store at ``url`` (see the module docstring). A ``sqlite:``
    URL names the file the board store reads (``stores.sqlite_path``, the one parser:
    ``sqlite:///rel.db`` is relative); a folder that does not exist raises ``StoreMissing``
    naming it, never a driver error.

    With ``tenant`` (a well-formed id, ``InvalidInput`` otherwise) every statement is limited
    to that tenant's facts: what it adds is the tenant's, and searches, listings, retention and
    counts see the tenant's facts only. Without one every fact is seen (the operator's view)."""
    if tenant is not None:
        from ..stores.tenancy import check_tenant_id

        check_tenant_id(tenant)
    if url.startswith("sqlite:"):
        from ..stores import sqlite_path
        from ..stores.base import StoreMissing

        path = sqlite_path(url)
        if not path.parent.is_dir():
            raise StoreMissing(f"no memory store at {path} ({url}): the folder {path.parent} does not exist")
        return SqliteMemory(str(path), url, tenant)
    if url.startswith(("postgresql:", "postgres:")):
        from ._postgres import PostgresMemory

        return await PostgresMemory.open(url, tenant)
    if url.startswith("memory:"):
        return InProcessMemory(url, tenant)
    raise InvalidInput(f"no memory store for {url!r}: use sqlite:, postgresql: or memory:")
