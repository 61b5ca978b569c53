"""The tenants a store knows, and their dashboard tokens (issue 44).

A tenant exists when it is in its store's registry (``slateboard tenant add NAME``, or
``tenant_registry(store).add(NAME)``): ``open_store(url, tenant=NAME)`` refuses any other name.
The registry lives where the store keeps its spend ledgers (``KeepsLedgers``: the SQLite file,
the PostgreSQL database), in table ``slateboard_tenants`` (on PostgreSQL in the store's own
schema, so two stores of one database keep two registries); an in-memory store keeps it on the
store object. Tokens are stored as SHA-256 digests only: a token is shown once, when issued.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import secrets
import sqlite3
import time
import weakref
from typing import Any

from ..errors import InvalidInput, UnknownName
from .base import KeepsLedgers, StoreUnavailable, supports

TENANT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
"""A tenant id: lower-case letters, digits, ``_`` and ``-``, starting with a letter or digit, at
most 63 characters (it becomes part of ledger names and is shown in paths and URLs)."""

TABLE = "slateboard_tenants"


class UnknownTenant(UnknownName):
    """A tenant id that is not in the store's registry (``slateboard tenant add`` creates one)."""


def check_tenant_id(tenant: object) -> str:
    """``tenant`` when it is a well-formed tenant id (``TENANT_ID``), else ``InvalidInput``
    naming the value and the rule."""
    if not isinstance(tenant, str) or not TENANT_ID.match(tenant):
        shown = repr(tenant)[:80]
        raise InvalidInput(
            f"tenant id {shown} is malformed: use 1-63 lower-case letters, digits, '_' or '-',"
            " starting with a letter or digit"
        )
    return tenant


def token_digest(token: str) -> str:
    """The stored form of a token (SHA-256, hex): the token itself is never stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TenantRegistry:
    """The registry of one store: tenant ids and the digest of each one's current token.

    Every method is one statement or transaction; ``add`` of an existing id and ``issue_token``
    of an unknown one raise (``InvalidInput``, ``UnknownTenant``). Subclasses supply ``_rows``
    (read) and ``_write``."""

    async def _rows(self) -> list[tuple[str, str, float]]:
        raise NotImplementedError

    async def _write(self, tenant: str, digest: str, *, new: bool) -> bool:
        """Insert (``new``) or update the tenant's token digest; False when nothing changed
        (the id exists already / does not exist)."""
        raise NotImplementedError

    async def add(self, tenant: str) -> str:
        """Register ``tenant`` and return its first dashboard token (shown once)."""
        check_tenant_id(tenant)
        token = secrets.token_urlsafe(24)
        if not await self._write(tenant, token_digest(token), new=True):
            raise InvalidInput(f"tenant {tenant!r} already exists in this store")
        return token

    async def issue_token(self, tenant: str) -> str:
        """A new dashboard token for ``tenant``; the previous one stops working."""
        check_tenant_id(tenant)
        token = secrets.token_urlsafe(24)
        if not await self._write(tenant, token_digest(token), new=False):
            raise UnknownTenant(f"no tenant {tenant!r} in this store (add it with: slateboard tenant add {tenant})")
        return token

    async def names(self) -> list[str]:
        """Every registered tenant id, sorted."""
        return sorted(row[0] for row in await self._rows())

    async def require(self, tenant: str) -> str:
        """``tenant`` when it is well formed and registered; else ``InvalidInput`` /
        ``UnknownTenant`` (which names neither other tenants nor how many there are)."""
        check_tenant_id(tenant)
        if tenant not in await self.names():
            raise UnknownTenant(f"no tenant {tenant!r} in this store (add it with: slateboard tenant add {tenant})")
        return tenant

    async def tenant_of(self, token: str) -> str | None:
        """The tenant whose current token is ``token``, else None."""
        digest = token_digest(token)
        found = None
        for tenant, stored, _ in await self._rows():
            # every row is compared (constant work whichever row matches)
            if secrets.compare_digest(stored, digest):
                found = tenant
        return found


class _MemoryRegistry(TenantRegistry):
    def __init__(self) -> None:
        self._data: dict[str, tuple[str, float]] = {}

    async def _rows(self) -> list[tuple[str, str, float]]:
        return [(t, d, at) for t, (d, at) in self._data.items()]

    async def _write(self, tenant: str, digest: str, *, new: bool) -> bool:
        if (tenant in self._data) == new:
            return False
        self._data[tenant] = (digest, time.time())
        return True


class _SqliteRegistry(TenantRegistry):
    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        self.path = path
        self._timeout = busy_timeout_ms / 1000

    def _tx(self, sql: str, params: tuple[Any, ...], write: bool) -> list[tuple[Any, ...]]:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=self._timeout)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self.path}: cannot open the tenant registry ({exc})") from None
        try:
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                if write:
                    db.execute(
                        f"CREATE TABLE IF NOT EXISTS {TABLE} (tenant TEXT PRIMARY KEY, token TEXT NOT NULL, created REAL)"
                    )
                elif not db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)).fetchone():
                    db.execute("COMMIT")
                    return []  # a store without tenants: nothing is created by a read
                cur = db.execute(sql, params)
                rows = list(cur.fetchall()) if cur.description else [(cur.rowcount,)]
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            return rows
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self.path}: tenant registry: {exc}") from None
        finally:
            db.close()

    async def _rows(self) -> list[tuple[str, str, float]]:
        return await asyncio.to_thread(self._tx, f"SELECT tenant, token, created FROM {TABLE}", (), False)

    async def _write(self, tenant: str, digest: str, *, new: bool) -> bool:
        sql = (
            f"INSERT INTO {TABLE} (tenant, token, created) VALUES (?, ?, ?) ON CONFLICT (tenant) DO NOTHING"
            if new
            else f"UPDATE {TABLE} SET token = ? WHERE tenant = ?"
        )
        params: tuple[Any, ...] = (tenant, digest, time.time()) if new else (digest, tenant)
        rows = await asyncio.to_thread(self._tx, sql, params, True)
        return bool(rows and rows[0][0] == 1)


class _PostgresRegistry(TenantRegistry):
    def __init__(self, dsn: str, schema: str | None) -> None:
        self._dsn = dsn
        # The store's own schema (a checked identifier): each store keeps its own registry.
        self._table = f'"{schema}".{TABLE}' if schema and re.fullmatch(r"[a-z_][a-z0-9_]*", schema) else TABLE

    async def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        import psycopg

        try:
            async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._table} (tenant TEXT PRIMARY KEY, token TEXT NOT NULL,"
                    " created DOUBLE PRECISION)"
                )
                cur = await conn.execute(sql.replace("{table}", self._table), params)
                return list(await cur.fetchall()) if cur.description else [(cur.rowcount,)]
        except psycopg.Error as exc:
            raise StoreUnavailable(f"tenant registry: {type(exc).__name__}") from None

    async def _rows(self) -> list[tuple[str, str, float]]:
        return [
            (str(a), str(b), float(c or 0))
            for a, b, c in await self._run("SELECT tenant, token, created FROM {table}", ())
        ]

    async def _write(self, tenant: str, digest: str, *, new: bool) -> bool:
        sql = (
            "INSERT INTO {table} (tenant, token, created) VALUES (%s, %s, %s) ON CONFLICT (tenant) DO NOTHING"
            if new
            else "UPDATE {table} SET token = %s WHERE tenant = %s"
        )
        params: tuple[Any, ...] = (tenant, digest, time.time()) if new else (digest, tenant)
        rows = await self._run(sql, params)
        return bool(rows and rows[0][0] == 1)


_IN_MEMORY: weakref.WeakKeyDictionary[object, _MemoryRegistry] = weakref.WeakKeyDictionary()


def tenant_registry(store: object) -> TenantRegistry:
    """The registry of ``store`` (a tenant-scoped store's is its shared store's): in the store's
    database when it keeps ledgers there (SQLite, PostgreSQL), else on the store object."""
    inner = getattr(store, "shared_store", store)
    if supports(inner, KeepsLedgers) and isinstance(inner, KeepsLedgers):
        home = inner.ledger_home()
        if home.kind == "sqlite":
            return _SqliteRegistry(home.target, home.busy_timeout_ms)
        return _PostgresRegistry(home.target, getattr(inner, "schema", None))
    found = _IN_MEMORY.get(inner)
    if found is None:
        found = _IN_MEMORY[inner] = _MemoryRegistry()
    return found
