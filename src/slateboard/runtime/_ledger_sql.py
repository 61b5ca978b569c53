"""The SQL ledger stores: ``SqliteLedger`` (the default store's file) and ``PostgresLedger``.

Import them from ``slateboard.runtime.ledger`` (this module is that one's SQL half; it is
imported at the end of it). Each operation is one transaction. The tables, ``{t}`` the ledger
table (default ``slateboard_ledger``):

- ``{t}``: one row per ledger: ``name``, ``cap``, ``spent``, ``reserved`` (micro-dollars);
- ``{t}_history``: one row per reset or deletion (what the ledger had spent and held);
- ``{t}_held``: one row per owned reservation: ``owner`` (the board), ``holder`` (the run that
  made it: ``spend-<id>@<host>:<pid>``), ``name``, ``amount`` and ``expires`` (Unix seconds, the
  store's clock). An expired row stops counting against the cap: the next reservation on the
  ledger (or ``holders``) releases it in its own transaction. A live run renews its rows.

Lease times are the database's clock on PostgreSQL (``now()``, one instant per transaction, so
every host that shares the database agrees) and this host's on SQLite (one file, one host).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, UnknownName
from ._ledger_tenant import TenantLedger
from ._ledger_types import MICRO, LedgerReset, LedgerState, check_lease, to_micro

_TABLE = "slateboard_ledger"
Statements = Sequence[tuple[str, tuple[Any, ...]]]


class _SqlLedger:
    """The ledger statements both SQL backends run (written with ``?`` placeholders, the tables
    as ``{t}``, ``{h}``, ``{r}`` and the transaction's time as ``{now}``); a backend supplies
    ``_batch``, which runs statements in one transaction, creating the tables on a write."""

    _greatest = "MAX"
    """The two-argument maximum of the backend's SQL (SQLite's ``MAX``, PostgreSQL's ``GREATEST``)."""

    def __init__(self, table: str) -> None:
        if not table.replace("_", "").isalnum():
            raise InvalidInput(f"ledger table name must be letters, digits and '_', got {table!r}")
        self._table = table

    async def _query(self, sql: str, params: tuple[Any, ...], *, write: bool = True) -> list[tuple[Any, ...]]:
        return await self._batch([(sql, params)], write=write)

    async def _batch(self, statements: Statements, *, write: bool = True, chain: bool = False) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the rows of the last one run. With ``chain``,
        a statement that returns a result without rows ends the batch (the later ones depend
        on it); statements that return no result (no ``RETURNING``) never do."""
        raise NotImplementedError

    def _sweep(self, name: str) -> list[tuple[str, tuple[Any, ...]]]:
        """The statements that release the ledger's expired holds (any board's): subtracted from
        ``reserved`` and deleted, at one instant (the transaction's ``{now}``)."""
        return [
            (
                f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - (SELECT COALESCE(SUM(amount), 0) "
                "FROM {r} WHERE {r}.name = {t}.name AND {r}.expires < {now}), 0) WHERE name = ?",
                (name,),
            ),
            ("DELETE FROM {r} WHERE name = ? AND expires < {now}", (name,)),
        ]

    async def set_cap(self, name: str, cap: float | None) -> None:
        """Create the ledger or change its cap (spent and reserved are kept)."""
        micro = None if cap is None else to_micro(cap)
        await self._query(
            "INSERT INTO {t} (name, cap) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET cap = EXCLUDED.cap",
            (name, micro),
        )

    async def reserve(
        self,
        name: str,
        amount: float,
        *,
        owner: str | None = None,
        holder: str | None = None,
        lease_s: float | None = None,
    ) -> bool:
        """One transaction: release the ledger's expired holds, then reserve only if
        ``spent + reserved + amount <= cap``; with an ``owner`` the holding is a row of the held
        table (``holder``, default the owner), expiring ``lease_s`` seconds from now (None: the
        default lease, ``lease_seconds()``)."""
        micro = to_micro(amount)
        statements = self._sweep(name)
        statements.append(
            (
                "UPDATE {t} SET reserved = reserved + ? WHERE name = ? "
                "AND (cap IS NULL OR spent + reserved + ? <= cap) RETURNING name",
                (micro, name, micro),
            )
        )
        if owner is not None:
            statements.append(
                (
                    "INSERT INTO {r} (owner, holder, name, amount, expires) VALUES (?, ?, ?, ?, {now} + ?) RETURNING name",
                    (owner, holder or owner, name, micro, check_lease(lease_s)),
                )
            )
        rows = await self._batch(statements, chain=True)
        if rows:
            return True
        await self.state(name)  # UnknownName for a ledger that does not exist
        return False

    async def settle(
        self, name: str, reserved: float, actual: float, *, owner: str | None = None, holder: str | None = None
    ) -> None:
        """Add ``actual`` to what was spent and release ``reserved``, in one transaction. With
        an ``owner``, only what its hold (of ``holder``, default the owner) still holds is
        released: a hold already released (its lease lapsed, or the ledger was reset or
        deleted) is never released twice."""
        r, a = to_micro(reserved), to_micro(actual)
        if owner is None:
            sql = f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - ?, 0), spent = spent + ? WHERE name = ?"
            await self._query(sql, (r, a, name))
            return
        one = "SELECT MIN(seq) FROM {r} WHERE holder = ? AND name = ? AND amount = ?"
        key = (holder or owner, name, r)
        await self._batch(
            [
                (
                    f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - COALESCE((SELECT amount FROM {{r}} "
                    f"WHERE seq = ({one})), 0), 0), spent = spent + ? WHERE name = ?",
                    (*key, a, name),
                ),
                (f"DELETE FROM {{r}} WHERE seq = ({one})", key),
            ]
        )

    async def renew(self, holder: str, lease_s: float | None = None) -> int:
        """Extend every hold of ``holder`` to ``lease_s`` seconds from now (None: the
        default lease); how many it still has (0: they were released meanwhile)."""
        rows = await self._query(
            "UPDATE {r} SET expires = {now} + ? WHERE holder = ? RETURNING seq", (check_lease(lease_s), holder)
        )
        return len(rows)

    async def holders(self, name: str) -> dict[str, float]:
        """What each owner (a board; ``""``: a run without one) holds reserved on the ledger,
        in dollars, by owner, after releasing its expired holds; ``UnknownName`` if never
        created."""
        await self.state(name)
        query = ("SELECT owner, SUM(amount) FROM {r} WHERE name = ? GROUP BY owner ORDER BY owner", (name,))
        rows = await self._batch([*self._sweep(name), query])
        return {str(owner): int(micro) / MICRO for owner, micro in rows}

    async def holds(self, owner: str) -> list[str]:
        """The holders (runs) still holding reservations for ``owner`` on any ledger, after
        releasing expired holds of the ledgers it holds on; ``""`` stands for holds made before
        holds had a holder."""
        names = await self._query("SELECT DISTINCT name FROM {r} WHERE owner = ?", (owner,))
        sweeps = [st for (name,) in names for st in self._sweep(str(name))]
        query = ("SELECT DISTINCT COALESCE(holder, '') FROM {r} WHERE owner = ?", (owner,))
        return sorted(str(h) for (h,) in await self._batch([*sweeps, query]))

    async def release(self, owner: str, *, holders: Sequence[str] | None = None) -> None:
        """Give back everything ``owner`` still holds reserved (only the holds of ``holders``
        when given: dead runs'), in one transaction."""
        which = "owner = ?"
        params: tuple[str, ...] = (owner,)
        if holders is not None:
            if not holders:
                return
            which += f" AND COALESCE(holder, '') IN ({', '.join('?' for _ in holders)})"
            params = (owner, *holders)
        await self._batch(
            [
                (
                    f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - (SELECT COALESCE(SUM(amount), 0) "
                    f"FROM {{r}} WHERE {{r}}.name = {{t}}.name AND {which}), 0) "
                    f"WHERE name IN (SELECT name FROM {{r}} WHERE {which})",
                    params + params,
                ),
                (f"DELETE FROM {{r}} WHERE {which}", params),
            ]
        )

    async def state(self, name: str) -> LedgerState:
        """The ledger's row; ``UnknownName`` if it was never created (or was deleted)."""
        rows = await self._query("SELECT cap, spent, reserved FROM {t} WHERE name = ?", (name,), write=False)
        if not rows:
            known = await self.names()
            raise UnknownName(f"unknown ledger {name!r} (known: {', '.join(known) or 'none'})")
        cap, spent, reserved = rows[0]
        return LedgerState(name, None if cap is None else cap / MICRO, spent / MICRO, reserved / MICRO)

    async def names(self) -> list[str]:
        """Every ledger's name, sorted."""
        return [r[0] for r in await self._query("SELECT name FROM {t} ORDER BY name", (), write=False)]

    async def reset(self, name: str) -> None:
        """Zero what was spent (the cap is kept) and what is reserved beyond the live holds
        (their calls still settle); what it had spent and held goes into the ledger's history
        in the same transaction. ``UnknownName`` if never created."""
        rows = await self._batch(
            [
                (
                    "INSERT INTO {h} (name, spent, reserved, at) SELECT name, spent, reserved, ? FROM {t} WHERE name = ?",
                    (time.time(), name),
                ),
                (
                    "UPDATE {t} SET spent = 0, reserved = (SELECT COALESCE(SUM(amount), 0) FROM {r} "
                    "WHERE {r}.name = {t}.name) WHERE name = ? RETURNING name",
                    (name,),
                ),
            ]
        )
        if not rows:
            await self.state(name)

    async def delete(self, name: str) -> None:
        """Remove the ledger and its holds; what it had spent and held goes into its history
        (``history`` still lists it). Runs still holding reservations on it are refused their
        next one. ``UnknownName`` if it does not exist."""
        rows = await self._batch(
            [
                (
                    "INSERT INTO {h} (name, spent, reserved, at) SELECT name, spent, reserved, ? FROM {t} WHERE name = ?",
                    (time.time(), name),
                ),
                ("DELETE FROM {r} WHERE name = ?", (name,)),
                ("DELETE FROM {t} WHERE name = ? RETURNING name", (name,)),
            ]
        )
        if not rows:
            await self.state(name)

    async def history(self, name: str) -> list[LedgerReset]:
        """Every reset (and the deletion) of the ledger, oldest first; ``UnknownName`` if it
        neither exists nor has any."""
        rows = await self._batch(
            [("SELECT spent, reserved, at FROM {h} WHERE name = ? ORDER BY at, seq", (name,))], write=False
        )
        if not rows:
            await self.state(name)
        return [LedgerReset(name, spent / MICRO, reserved / MICRO, float(at)) for spent, reserved, at in rows]


class PostgresLedger(_SqlLedger):
    """Ledgers in PostgreSQL, shared by every process that connects to ``dsn``."""

    _greatest = "GREATEST"

    def __init__(self, dsn: str, *, table: str = _TABLE) -> None:
        super().__init__(table)
        self._dsn = dsn
        self._ready = False  # the tables were created (or found) by this object

    async def _batch(self, statements: Statements, *, write: bool = True, chain: bool = False) -> list[tuple[Any, ...]]:
        import psycopg

        history, held = f"{self._table}_history", f"{self._table}_held"
        async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
            if not self._ready:
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._table} (name TEXT PRIMARY KEY, cap BIGINT, "
                    "spent BIGINT NOT NULL DEFAULT 0, reserved BIGINT NOT NULL DEFAULT 0)"
                )
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {history} (seq BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, "
                    "spent BIGINT NOT NULL, reserved BIGINT NOT NULL, at DOUBLE PRECISION NOT NULL)"
                )
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {held} (seq BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, "
                    "name TEXT NOT NULL, amount BIGINT NOT NULL, holder TEXT, expires DOUBLE PRECISION)"
                )
                # a held table from before leases gains their columns (its rows never expire)
                await conn.execute(
                    f"ALTER TABLE {held} ADD COLUMN IF NOT EXISTS holder TEXT, "
                    "ADD COLUMN IF NOT EXISTS expires DOUBLE PRECISION"
                )
                self._ready = True
            rows: list[tuple[Any, ...]] = []
            async with conn.transaction():
                for sql, params in statements:
                    # psycopg's placeholder is %s; the shared statements hold no other '?'
                    text = sql.replace("?", "%s").format(
                        t=self._table, h=history, r=held, now="EXTRACT(EPOCH FROM now())::float8"
                    )
                    cur = await conn.execute(text, params)
                    rows = list(await cur.fetchall()) if cur.description else []
                    if chain and cur.description and not rows:
                        break
            return rows


class SqliteLedger(_SqlLedger):
    """Ledgers in an SQLite file (the default store's), shared by every process that opens it.

    Each operation is one ``BEGIN IMMEDIATE`` transaction on its own connection: the write lock
    is taken before the row is read, so the check and the reservation of two processes (or
    threads) serialise and they cannot overshoot a cap together. Reads create nothing: a file
    without the ledger table simply has no ledgers."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000, table: str = _TABLE) -> None:
        super().__init__(table)
        self.path = Path(path)
        self._timeout_ms = busy_timeout_ms

    def _tables(self, db: Any, statements: Statements, *, write: bool) -> Statements | None:
        """Create (on a write) or check (on a read) the tables inside the open transaction; the
        statements to run (a read skips those of tables an older file lacks), None for none."""
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self._table,)).fetchone()
        if not exists and not write:
            return None
        history, held = f"{self._table}_history", f"{self._table}_held"
        if not write:  # a read of a table an older file lacks reads nothing
            for table, mark in ((history, "{h}"), (held, "{r}")):
                if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
                    statements = [st for st in statements if mark not in st[0]]
            return statements
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (name TEXT PRIMARY KEY, cap INTEGER, "
            "spent INTEGER NOT NULL DEFAULT 0, reserved INTEGER NOT NULL DEFAULT 0)"
        )
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {history} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "name TEXT NOT NULL, spent INTEGER NOT NULL, reserved INTEGER NOT NULL, at REAL NOT NULL)"
        )
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {held} (seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, "
            "name TEXT NOT NULL, amount INTEGER NOT NULL, holder TEXT, expires REAL)"
        )
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({held})")}
        for column, kind in (("holder", "TEXT"), ("expires", "REAL")):
            if column not in columns:  # a held table from before leases (its rows never expire)
                db.execute(f"ALTER TABLE {held} ADD COLUMN {column} {kind}")
        return statements

    def _tx(self, statements: Statements, *, write: bool, chain: bool = False) -> list[tuple[Any, ...]]:
        import sqlite3

        from ..stores.base import StoreUnavailable

        try:
            db = sqlite3.connect(str(self.path), isolation_level=None, timeout=self._timeout_ms / 1000)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self.path}: cannot open the ledger table ({exc})") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._timeout_ms)}")
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                todo = self._tables(db, statements, write=write)
                rows: list[tuple[Any, ...]] = []
                now = repr(time.time())  # one instant for the whole transaction, as PostgreSQL's now()
                tables = {"t": self._table, "h": f"{self._table}_history", "r": f"{self._table}_held", "now": now}
                for sql, params in todo or ():
                    cur = db.execute(sql.format(**tables), params)
                    rows = list(cur.fetchall())
                    if chain and cur.description is not None and not rows:
                        break
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            return rows
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self.path}: ledger table: {exc}") from None
        finally:
            db.close()

    async def _batch(self, statements: Statements, *, write: bool = True, chain: bool = False) -> list[tuple[Any, ...]]:
        return await asyncio.to_thread(self._tx, statements, write=write, chain=chain)


def ledger_for(store: object) -> PostgresLedger | SqliteLedger | TenantLedger:
    """The ledgers that live in ``store``: an ``SqliteLedger`` on an SQLite store's file, a
    ``PostgresLedger`` on a PostgreSQL store's database; on a tenant's scope of one of them
    (``stores.tenancy.TenantStore``) the tenant's ledgers only (a ``TenantLedger``).
    ``InvalidInput`` for any other store (an in-memory store lives in one process: use a
    ``MemoryLedger`` there)."""
    from ..stores.base import KeepsLedgers, supports

    tenant = getattr(store, "tenant", None)
    shared_store = getattr(store, "shared_store", None)
    if isinstance(tenant, str) and shared_store is not None:
        return TenantLedger(ledger_for(shared_store), tenant)

    if supports(store, KeepsLedgers) and isinstance(store, KeepsLedgers):  # isinstance: for the type
        home = store.ledger_home()
        if home.kind == "sqlite":
            return SqliteLedger(home.target, busy_timeout_ms=home.busy_timeout_ms)
        return PostgresLedger(home.target)
    raise InvalidInput(
        f"spend ledgers live in an SQLite or PostgreSQL store, not in a {type(store).__name__} "
        "(use a MemoryLedger in this process)"
    )
