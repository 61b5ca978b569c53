"""Spend ledgers: caps in dollars that concurrent boards can never jointly exceed.

A caller reserves the worst case of a model call (prompt tokens + max_tokens, priced) before
making it; ``reserve`` returns False, and nothing changes, when the reservation does not fit under
the cap (``spent + reserved + amount <= cap``). After the call ``settle`` releases the reservation
and adds what the call really cost. Amounts are kept in integer micro-dollars so sums are exact.

``PostgresLedger`` makes the check and the reservation one ``UPDATE ... WHERE`` statement: the row
lock it takes serializes reservations from every process, so boards sharing one ledger name
cannot overshoot it together. ``SqliteLedger`` (the default store's file) does the same in one
``BEGIN IMMEDIATE`` transaction; ``ledger_for(store)`` is the one of an open store. ``SpendGuard``
is what every model call (LLM workers, a team's agents, coordinator and decider, a coordinator
control unit) reserves through, via ``workers.llm.guarded_call``.

Reservations are owned (issue 45): a guard reserves with an ``owner`` (its board's id), each held
amount is a row of a ``<table>_held`` table written in the reservation's own transaction, and
``release(owner)`` gives back everything an owner still holds. A run that starts or resumes a
board releases what a dead run of it left held: a call whose process died before ``settle`` is
not in the log (a logged call was settled before its record was written), so its reservation is
released, never booked, and a retried call never holds two.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import InvalidInput, UnknownName
from ..models.pricing import PriceTable, SpendRefused

MICRO = 1_000_000


def to_micro(dollars: float) -> int:
    """Dollars as integer micro-dollars, rounded up (a reservation never undercounts)."""
    if isinstance(dollars, bool) or not isinstance(dollars, (int, float)) or not math.isfinite(dollars):
        raise InvalidInput(f"ledger amount must be a finite number of dollars, got {dollars!r}")
    if dollars < 0:
        raise InvalidInput(f"ledger amount must be >= 0, got {dollars!r}")
    return math.ceil(dollars * MICRO - 1e-9)


@dataclass(frozen=True, slots=True)
class LedgerState:
    """A ledger's row: its cap (None: uncapped), what was spent and what is reserved, in dollars."""

    name: str
    cap: float | None
    spent: float
    reserved: float

    def line(self) -> str:
        """One line for a log or the CLI."""
        cap = "none" if self.cap is None else f"${self.cap:.4f}"
        return f"ledger {self.name}: cap {cap}, spent ${self.spent:.4f}, reserved ${self.reserved:.4f}"


@dataclass(frozen=True, slots=True)
class LedgerReset:
    """One ``reset`` of a ledger: what it had spent (and held reserved) just before, in dollars,
    and when (Unix seconds). A reset zeroes the counters but never erases spend from view."""

    name: str
    spent: float
    reserved: float
    at: float

    def line(self) -> str:
        """One line for the CLI."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.at))
        return f"ledger {self.name}: reset {when} UTC after spent ${self.spent:.4f}, reserved ${self.reserved:.4f}"


class Ledger(Protocol):
    """What a worker needs of a ledger store."""

    async def set_cap(self, name: str, cap: float | None) -> None: ...
    async def reserve(self, name: str, amount: float, *, owner: str | None = None) -> bool: ...
    async def settle(self, name: str, reserved: float, actual: float, *, owner: str | None = None) -> None: ...
    async def release(self, owner: str) -> None: ...
    async def holders(self, name: str) -> dict[str, float]: ...
    async def state(self, name: str) -> LedgerState: ...
    async def names(self) -> list[str]: ...
    async def reset(self, name: str) -> None: ...
    async def history(self, name: str) -> list[LedgerReset]: ...


class MemoryLedger:
    """Ledgers of one process (an asyncio lock makes check-and-reserve atomic)."""

    def __init__(self) -> None:
        self._rows: dict[str, list[int | None]] = {}
        self._resets: dict[str, list[LedgerReset]] = {}
        self._held: dict[str, list[tuple[str, int]]] = {}  # owner: (ledger, micro-dollars) held
        self._lock = asyncio.Lock()

    async def set_cap(self, name: str, cap: float | None) -> None:
        """Create the ledger or change its cap (spent and reserved are kept)."""
        micro = None if cap is None else to_micro(cap)
        async with self._lock:
            row = self._rows.setdefault(name, [None, 0, 0])
            row[0] = micro

    async def reserve(self, name: str, amount: float, *, owner: str | None = None) -> bool:
        """Reserve ``amount`` if it fits under the cap (held by ``owner``, when given); False
        (and no change) if not."""
        micro = to_micro(amount)
        async with self._lock:
            cap, spent, reserved = self._row(name)
            if cap is not None and spent + reserved + micro > cap:
                return False
            self._rows[name][2] = reserved + micro
            if owner is not None:
                self._held.setdefault(owner, []).append((name, micro))
            return True

    async def settle(self, name: str, reserved: float, actual: float, *, owner: str | None = None) -> None:
        """Release ``reserved`` (one of ``owner``'s holdings, when given) and add ``actual`` to
        what was spent."""
        r, a = to_micro(reserved), to_micro(actual)
        async with self._lock:
            _, spent, held = self._row(name)
            self._rows[name][1:] = [spent + a, max(held - r, 0)]
            mine = self._held.get(owner or "", [])
            if (name, r) in mine:
                mine.remove((name, r))

    async def holders(self, name: str) -> dict[str, float]:
        """What each owner (a board) holds reserved on the ledger, in dollars, by owner."""
        self._row(name)
        held: dict[str, int] = {}
        for owner, rows in self._held.items():
            for ledger, micro in rows:
                if ledger == name:
                    held[owner] = held.get(owner, 0) + micro
        return {owner: micro / MICRO for owner, micro in sorted(held.items())}

    async def release(self, owner: str) -> None:
        """Give back everything ``owner`` still holds reserved (a dead run's reservations)."""
        async with self._lock:
            for name, micro in self._held.pop(owner, []):
                row = self._rows.get(name)
                if row is not None:
                    row[2] = max((row[2] or 0) - micro, 0)

    async def state(self, name: str) -> LedgerState:
        """The ledger's row; ``UnknownName`` if it was never created."""
        cap, spent, reserved = self._row(name)
        return LedgerState(name, None if cap is None else cap / MICRO, spent / MICRO, reserved / MICRO)

    async def names(self) -> list[str]:
        """Every ledger's name, sorted."""
        return sorted(self._rows)

    async def reset(self, name: str) -> None:
        """Zero what was spent and reserved (the cap is kept), recording what they were in the
        ledger's history; ``UnknownName`` if never created."""
        async with self._lock:
            _, spent, reserved = self._row(name)
            self._resets.setdefault(name, []).append(LedgerReset(name, spent / MICRO, reserved / MICRO, time.time()))
            self._rows[name][1:] = [0, 0]

    async def history(self, name: str) -> list[LedgerReset]:
        """Every reset of the ledger, oldest first; ``UnknownName`` if never created."""
        self._row(name)
        return list(self._resets.get(name, []))

    def _row(self, name: str) -> tuple[int | None, int, int]:
        row = self._rows.get(name)
        if row is None:
            raise UnknownName(f"unknown ledger {name!r} (known: {', '.join(sorted(self._rows)) or 'none'})")
        cap, spent, reserved = row
        assert spent is not None and reserved is not None
        return cap, spent, reserved


_TABLE = "slateboard_ledger"


class _SqlLedger:
    """The ledger statements both SQL backends run (written with ``?`` placeholders and the
    table as ``{t}``); a backend supplies ``_query``, which runs one statement in a transaction of
    its own, creating the table on a write."""

    _greatest = "MAX"
    """The two-argument maximum of the backend's SQL (SQLite's ``MAX``, PostgreSQL's ``GREATEST``)."""

    def __init__(self, table: str) -> None:
        if not table.replace("_", "").isalnum():
            raise InvalidInput(f"ledger table name must be letters, digits and '_', got {table!r}")
        self._table = table

    async def _query(self, sql: str, params: tuple[Any, ...], *, write: bool = True) -> list[tuple[Any, ...]]:
        return await self._batch([(sql, params)], write=write)

    async def _batch(
        self, statements: Sequence[tuple[str, tuple[Any, ...]]], *, write: bool = True, chain: bool = False
    ) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction (``{h}`` names the history table, ``{r}`` the
        held reservations); the rows of the last one run. With ``chain``, a statement that
        returns no rows ends the batch (the later ones depend on it)."""
        raise NotImplementedError

    async def set_cap(self, name: str, cap: float | None) -> None:
        """Create the ledger or change its cap (spent and reserved are kept)."""
        micro = None if cap is None else to_micro(cap)
        await self._query(
            "INSERT INTO {t} (name, cap) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET cap = EXCLUDED.cap",
            (name, micro),
        )

    async def reserve(self, name: str, amount: float, *, owner: str | None = None) -> bool:
        """One atomic statement: reserve only if ``spent + reserved + amount <= cap``; with an
        ``owner``, the holding is recorded in the same transaction."""
        micro = to_micro(amount)
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (
                "UPDATE {t} SET reserved = reserved + ? WHERE name = ? "
                "AND (cap IS NULL OR spent + reserved + ? <= cap) RETURNING name",
                (micro, name, micro),
            )
        ]
        if owner is not None:
            statements.append(
                ("INSERT INTO {r} (owner, name, amount) VALUES (?, ?, ?) RETURNING name", (owner, name, micro))
            )
        rows = await self._batch(statements, chain=True)
        if rows:
            return True
        await self.state(name)  # UnknownName for a ledger that does not exist
        return False

    async def settle(self, name: str, reserved: float, actual: float, *, owner: str | None = None) -> None:
        """Release ``reserved`` (one of ``owner``'s holdings, when given) and add ``actual`` to
        what was spent, in one transaction."""
        r = to_micro(reserved)
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (
                f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - ?, 0), spent = spent + ? WHERE name = ?",
                (r, to_micro(actual), name),
            )
        ]
        if owner is not None:
            statements.append(
                (
                    "DELETE FROM {r} WHERE seq = (SELECT MIN(seq) FROM {r} WHERE owner = ? AND name = ? AND amount = ?)",
                    (owner, name, r),
                )
            )
        await self._batch(statements)

    async def holders(self, name: str) -> dict[str, float]:
        """What each owner (a board) holds reserved on the ledger, in dollars, by owner;
        ``UnknownName`` if never created."""
        await self.state(name)
        rows = await self._batch(
            [("SELECT owner, SUM(amount) FROM {r} WHERE name = ? GROUP BY owner ORDER BY owner", (name,))], write=False
        )
        return {str(owner): int(micro) / MICRO for owner, micro in rows}

    async def release(self, owner: str) -> None:
        """Give back everything ``owner`` still holds reserved (a dead run's reservations), in
        one transaction."""
        await self._batch(
            [
                (
                    f"UPDATE {{t}} SET reserved = {self._greatest}(reserved - (SELECT SUM(amount) FROM {{r}} "
                    "WHERE {r}.owner = ? AND {r}.name = {t}.name), 0) "
                    "WHERE name IN (SELECT name FROM {r} WHERE owner = ?)",
                    (owner, owner),
                ),
                ("DELETE FROM {r} WHERE owner = ?", (owner,)),
            ]
        )

    async def state(self, name: str) -> LedgerState:
        """The ledger's row; ``UnknownName`` if it was never created."""
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
        """Zero what was spent and reserved (the cap is kept); what they were goes into the
        ledger's history in the same transaction. ``UnknownName`` if never created."""
        rows = await self._batch(
            [
                (
                    "INSERT INTO {h} (name, spent, reserved, at) SELECT name, spent, reserved, ? FROM {t} WHERE name = ?",
                    (time.time(), name),
                ),
                ("UPDATE {t} SET spent = 0, reserved = 0 WHERE name = ? RETURNING name", (name,)),
            ]
        )
        if not rows:
            await self.state(name)

    async def history(self, name: str) -> list[LedgerReset]:
        """Every reset of the ledger, oldest first; ``UnknownName`` if never created."""
        await self.state(name)
        rows = await self._batch(
            [("SELECT spent, reserved, at FROM {h} WHERE name = ? ORDER BY at, seq", (name,))], write=False
        )
        return [LedgerReset(name, spent / MICRO, reserved / MICRO, float(at)) for spent, reserved, at in rows]


class PostgresLedger(_SqlLedger):
    """Ledgers in PostgreSQL, shared by every process that connects to ``dsn``."""

    _greatest = "GREATEST"

    def __init__(self, dsn: str, *, table: str = _TABLE) -> None:
        super().__init__(table)
        self._dsn = dsn

    async def _batch(
        self, statements: Sequence[tuple[str, tuple[Any, ...]]], *, write: bool = True, chain: bool = False
    ) -> list[tuple[Any, ...]]:
        import psycopg

        history, held = f"{self._table}_history", f"{self._table}_held"
        async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
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
                "name TEXT NOT NULL, amount BIGINT NOT NULL)"
            )
            rows: list[tuple[Any, ...]] = []
            async with conn.transaction():
                for sql, params in statements:
                    # psycopg's placeholder is %s; the shared statements hold no other '?'
                    text = sql.replace("?", "%s").format(t=self._table, h=history, r=held)
                    cur = await conn.execute(text, params)
                    rows = list(await cur.fetchall()) if cur.description else []
                    if chain and not rows:
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

    def _tx(
        self, statements: Sequence[tuple[str, tuple[Any, ...]]], *, write: bool, chain: bool = False
    ) -> list[tuple[Any, ...]]:
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
                exists = db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self._table,)
                ).fetchone()
                if not exists and not write:
                    db.execute("ROLLBACK")
                    return []
                if not exists:
                    db.execute(
                        f"CREATE TABLE {self._table} (name TEXT PRIMARY KEY, cap INTEGER, "
                        "spent INTEGER NOT NULL DEFAULT 0, reserved INTEGER NOT NULL DEFAULT 0)"
                    )
                history, held = f"{self._table}_history", f"{self._table}_held"
                if write:  # a file from before ledger history gains the tables on its first write
                    db.execute(
                        f"CREATE TABLE IF NOT EXISTS {history} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                        "name TEXT NOT NULL, spent INTEGER NOT NULL, reserved INTEGER NOT NULL, at REAL NOT NULL)"
                    )
                    db.execute(
                        f"CREATE TABLE IF NOT EXISTS {held} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                        "owner TEXT NOT NULL, name TEXT NOT NULL, amount INTEGER NOT NULL)"
                    )
                else:  # a read of a table an older file lacks reads nothing
                    for table, mark in ((history, "{h}"), (held, "{r}")):
                        if not db.execute(
                            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                        ).fetchone():
                            statements = [st for st in statements if mark not in st[0]]
                rows: list[tuple[Any, ...]] = []
                for sql, params in statements:
                    rows = list(db.execute(sql.format(t=self._table, h=history, r=held), params).fetchall())
                    if chain and not rows:
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

    async def _batch(
        self, statements: Sequence[tuple[str, tuple[Any, ...]]], *, write: bool = True, chain: bool = False
    ) -> list[tuple[Any, ...]]:
        return await asyncio.to_thread(self._tx, statements, write=write, chain=chain)


def ledger_for(store: object) -> Ledger:
    """The ledgers that live in ``store``: an ``SqliteLedger`` on an SQLite store's file, a
    ``PostgresLedger`` on a PostgreSQL store's database. ``InvalidInput`` for any other store
    (an in-memory store lives in one process: use a ``MemoryLedger`` there)."""
    from ..stores.base import KeepsLedgers, supports

    if supports(store, KeepsLedgers) and isinstance(store, KeepsLedgers):  # isinstance: for the type
        home = store.ledger_home()
        if home.kind == "sqlite":
            return SqliteLedger(home.target, busy_timeout_ms=home.busy_timeout_ms)
        return PostgresLedger(home.target)
    raise InvalidInput(
        f"spend ledgers live in an SQLite or PostgreSQL store, not in a {type(store).__name__} "
        "(use a MemoryLedger in this process)"
    )


class SpendGuard:
    """Reserves each model call's worst case (prompt-token bound + ``max_tokens``, priced with
    ``table``) against every ``(ledger, name)`` covering a board, before the call; a call that
    does not fit raises ``SpendRefused`` (nothing reserved stays held) and sets ``exhausted`` to
    the ledger's name, which ends the board ``budget:<name>``. ``settle`` books the real cost, or
    the worst case when the provider reported no usage. A model without a price is refused: a
    cap cannot hold over a cost nobody knows."""

    def __init__(self, table: PriceTable, ledgers: Sequence[tuple[Ledger, str]], *, owner: str | None = None) -> None:
        if not ledgers:
            raise InvalidInput("a spend guard needs at least one ledger")
        self.table = table
        self.ledgers = list(ledgers)
        self.owner = owner
        """Who holds the guard's reservations (a board's id): ``release`` frees them if it dies."""
        self.exhausted: str | None = None

    async def reserve(self, model: str, prompt_tokens: int, max_tokens: int) -> float:
        """Reserve the call's worst case on every ledger, or raise ``SpendRefused``."""
        worst = self.table.cost(model, prompt_tokens, max_tokens)
        if worst is None:
            self.exhausted = self.ledgers[0][1]
            raise SpendRefused(model, self.exhausted, "the model has no price, so no spend cap can bound its calls")
        held: list[tuple[Ledger, str]] = []
        for ledger, name in self.ledgers:
            if not await ledger.reserve(name, worst, owner=self.owner):
                for other, other_name in held:
                    await other.settle(other_name, worst, 0.0, owner=self.owner)
                self.exhausted = name
                state = await ledger.state(name)
                raise SpendRefused(model, name, f"the call's worst case ${worst:.6f} does not fit ({state.line()})")
            held.append((ledger, name))
        return worst

    async def lines(self) -> list[str]:
        """Every covering ledger's state, one line each (for the run-end record)."""
        return [(await ledger.state(name)).line() for ledger, name in self.ledgers]

    async def settle(self, model: str, reserved: float, usage: tuple[int, int] | None) -> float:
        """Release ``reserved`` and book the call's cost from ``usage`` (tokens in, out); with
        ``None`` (no usage reported, or the call failed) the worst case is booked. Returns it."""
        actual = None if usage is None else self.table.cost(model, usage[0], usage[1])
        booked = reserved if actual is None else actual
        for ledger, name in self.ledgers:
            await ledger.settle(name, reserved, booked, owner=self.owner)
        return booked


BOARD_LEDGER = "board"
"""The name of the in-memory ledger a ``max_cost`` cap creates for one run."""


@dataclass(frozen=True, slots=True)
class SpendLimits:
    """A run's spend cap (``max_cost`` dollars, on a fresh ``MemoryLedger`` named ``board``)
    and any shared ledgers (``(ledger, name)``, caps already set) that also cover it."""

    max_cost: float | None
    ledgers: tuple[tuple[Ledger, str], ...] = ()

    async def guard(self, table: PriceTable, *, spent: float = 0.0, owner: str | None = None) -> SpendGuard:
        """The guard the run's model calls reserve against; ``spent`` (what the board's log
        already cost, for a resumed run) is booked on the ``board`` ledger first, so the cap
        covers the whole board and not each run of it. With an ``owner`` (the board's id) its
        reservations are owned, and whatever a dead run of that owner still held is released
        first: the run that opens a board is the only one holding for it."""
        if owner is not None:
            for ledger in {id(ledger): ledger for ledger, _ in self.ledgers}.values():
                await ledger.release(owner)
        ledgers = list(self.ledgers)
        if self.max_cost is not None:
            board = MemoryLedger()
            await board.set_cap(BOARD_LEDGER, self.max_cost)
            if spent > 0:
                await board.settle(BOARD_LEDGER, 0.0, spent)
            ledgers.insert(0, (board, BOARD_LEDGER))
        return SpendGuard(table, ledgers, owner=owner)


def spend_limits(max_cost: object, ledgers: Sequence[tuple[Ledger, str]] = ()) -> SpendLimits | None:
    """Checked limits, or None when there are none (then no reservation work is done at all).
    A cap that is not a finite number > 0 raises ``InvalidInput`` naming it."""
    if max_cost is None and not ledgers:
        return None
    if max_cost is not None and (
        isinstance(max_cost, bool)
        or not isinstance(max_cost, (int, float))
        or not math.isfinite(max_cost)
        or max_cost <= 0
    ):
        raise InvalidInput(f"max_cost must be a finite number of dollars > 0, got {max_cost!r}")
    return SpendLimits(None if max_cost is None else float(max_cost), tuple(ledgers))


SPEND_META = "spend"
"""The board meta key holding the spend limits the board was started with (issue 45):
``{"max_cost": dollars or null, "ledgers": [names of the store's ledgers]}``. Every path that runs
the board (``Runner``, so ``run`` and ``resume``; runner processes) reserves against them."""


def spend_meta(max_cost: float | None, ledger_names: Sequence[str]) -> dict[str, Any]:
    """The board meta entry recording a board's spend limits (empty when there are none), to
    pass to ``create_board(meta=...)``: the limits become part of the board."""
    if max_cost is None and not ledger_names:
        return {}
    checked = spend_limits(max_cost)  # raises for a bad cap
    return {SPEND_META: {"max_cost": None if checked is None else checked.max_cost, "ledgers": list(ledger_names)}}


def recorded_spend(meta: Mapping[str, Any]) -> tuple[float | None, list[str]]:
    """The ``max_cost`` and ledger names a board's meta records (None and none for a board
    started without limits); ``InvalidInput`` naming the entry when it is malformed."""
    entry = meta.get(SPEND_META)
    if entry is None:
        return None, []
    names = entry.get("ledgers", []) if isinstance(entry, dict) else None
    cap = entry.get("max_cost") if isinstance(entry, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidInput(f"board meta {SPEND_META!r} is malformed: {entry!r}")
    checked = spend_limits(cap)
    return (None if checked is None else checked.max_cost), list(names)


async def board_spend_limits(store: object, meta: Mapping[str, Any], given: SpendLimits | None) -> SpendLimits | None:
    """The limits a run of a board holds: ``given`` (the caller's) joined with the ones the
    board recorded at creation (``SPEND_META``). A recorded ledger is never dropped (it is
    looked up in ``store``), and with two ``max_cost`` caps the lower one holds."""
    recorded_cap, names = recorded_spend(meta)
    if recorded_cap is None and not names:
        return given
    pairs = list(given.ledgers) if given is not None else []
    have = {name for _, name in pairs}
    missing = [name for name in names if name not in have]
    if missing:
        shared = ledger_for(store)
        pairs += [(shared, name) for name in missing]
    caps = [c for c in (recorded_cap, None if given is None else given.max_cost) if c is not None]
    return SpendLimits(min(caps) if caps else None, tuple(pairs))
