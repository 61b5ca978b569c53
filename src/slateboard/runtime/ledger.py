"""Spend ledgers: caps in dollars that concurrent boards can never jointly exceed.

A caller reserves the worst case of a model call (prompt tokens + max_tokens, priced) before
making it; ``reserve`` returns False, and nothing changes, when the reservation does not fit under
the cap (``spent + reserved + amount <= cap``). After the call ``settle`` releases the reservation
and adds what the call really cost. Amounts are kept in integer micro-dollars so sums are exact.

``PostgresLedger`` makes the check and the reservation one ``UPDATE ... WHERE`` statement: the row
lock it takes serializes reservations from every process, so boards sharing one ledger name
cannot overshoot it together. ``SqliteLedger`` (the default store's file) does the same in one
``BEGIN IMMEDIATE`` transaction; ``ledger_for(store)`` is the one of an open store (both live in
``_ledger_sql``). ``SpendGuard`` is what every model call (LLM workers, a team's agents,
coordinator and decider, a coordinator control unit) reserves through, via
``workers.llm.guarded_call``.

Reservations are owned and leased (issue 45). A guard reserves in its board's name (``owner``)
and its own (``holder``: ``spend-<id>@<host>:<pid>``, one per run); each held amount is a row
written in the reservation's own transaction, expiring ``lease_seconds()`` after it was made
(default ``DEFAULT_LEASE_S``; ``SLATEBOARD_SPEND_LEASE_S`` sets it), and the guard renews its
rows while it holds any. So a reservation of a run that died is released:

- when the board is opened again (``SpendLimits.guard``): the holds of holders that are gone
  (a process of this host that no longer exists) are released at once; a call that died is not
  in the log (a logged call was settled before its record was written), so its reservation is
  released, never booked, and a retried call never holds two;
- when its lease lapses, even if the board is never resumed: the next reservation on the ledger
  (or ``ledger show``) releases it, and it stops counting against the cap.

A live run's holds are never released by another run of its board (two resumes at once), and a
settle only releases what its hold still holds: nothing is released twice.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput, UnknownName
from ..models.pricing import PriceTable, SpendRefused
from .owners import dead_on_this_host, runner_owner

log = logging.getLogger("slateboard.runtime")

from ._ledger_types import (  # noqa: E402  (re-exported: the ledger's vocabulary lives in one small module)
    DEFAULT_LEASE_S,
    LEASE_ENV,
    MICRO,
    Ledger,
    LedgerReset,
    LedgerState,
    check_lease,
    lease_seconds,
    to_micro,
)


@dataclass(slots=True)
class _Hold:
    owner: str
    holder: str
    name: str
    micro: int
    expires: float


class MemoryLedger:
    """Ledgers of one process (an asyncio lock makes check-and-reserve atomic); the same
    guarantees as the SQL ledgers, leases included."""

    def __init__(self) -> None:
        self._rows: dict[str, list[int | None]] = {}
        self._resets: dict[str, list[LedgerReset]] = {}
        self._held: list[_Hold] = []
        self._lock = asyncio.Lock()

    async def set_cap(self, name: str, cap: float | None) -> None:
        """Create the ledger or change its cap (spent and reserved are kept)."""
        micro = None if cap is None else to_micro(cap)
        async with self._lock:
            row = self._rows.setdefault(name, [None, 0, 0])
            row[0] = micro

    def _give_back(self, holds: list[_Hold]) -> None:
        for hold in holds:
            self._held.remove(hold)
            row = self._rows.get(hold.name)
            if row is not None:
                row[2] = max((row[2] or 0) - hold.micro, 0)

    def _sweep(self, name: str) -> None:
        now = time.time()
        self._give_back([h for h in self._held if h.name == name and h.expires < now])

    async def reserve(
        self,
        name: str,
        amount: float,
        *,
        owner: str | None = None,
        holder: str | None = None,
        lease_s: float | None = None,
    ) -> bool:
        """Release the ledger's expired holds, then reserve ``amount`` if it fits under the cap
        (held by ``owner``, when given, as ``holder``'s for ``lease_s`` seconds); False (and
        no change) if not."""
        micro, lease = to_micro(amount), check_lease(lease_s)
        async with self._lock:
            self._row(name)
            self._sweep(name)
            cap, spent, reserved = self._row(name)
            if cap is not None and spent + reserved + micro > cap:
                return False
            self._rows[name][2] = reserved + micro
            if owner is not None:
                self._held.append(_Hold(owner, holder or owner, name, micro, time.time() + lease))
            return True

    async def settle(
        self, name: str, reserved: float, actual: float, *, owner: str | None = None, holder: str | None = None
    ) -> None:
        """Add ``actual`` to what was spent and release ``reserved`` (with an ``owner``: only
        what its hold still holds, so nothing is released twice)."""
        r, a = to_micro(reserved), to_micro(actual)
        async with self._lock:
            row = self._rows.get(name)
            if row is None:
                return  # deleted meanwhile: nothing to book on
            row[1] = (row[1] or 0) + a
            if owner is None:
                row[2] = max((row[2] or 0) - r, 0)
                return
            who = holder or owner
            mine = next((h for h in self._held if h.holder == who and h.name == name and h.micro == r), None)
            if mine is not None:
                self._give_back([mine])

    async def renew(self, holder: str, lease_s: float | None = None) -> int:
        """Extend every hold of ``holder`` to ``lease_s`` seconds from now; how many it has."""
        until = time.time() + check_lease(lease_s)
        async with self._lock:
            mine = [h for h in self._held if h.holder == holder]
            for hold in mine:
                hold.expires = until
            return len(mine)

    async def holders(self, name: str) -> dict[str, float]:
        """What each owner (a board; ``""``: a run without one) holds reserved on the ledger,
        in dollars, by owner, after releasing its expired holds."""
        async with self._lock:
            self._row(name)
            self._sweep(name)
            held: dict[str, int] = {}
            for hold in self._held:
                if hold.name == name:
                    held[hold.owner] = held.get(hold.owner, 0) + hold.micro
        return {owner: micro / MICRO for owner, micro in sorted(held.items())}

    async def holds(self, owner: str) -> list[str]:
        """The holders (runs) still holding reservations for ``owner``, after releasing expired
        holds of the ledgers it holds on."""
        async with self._lock:
            for name in {h.name for h in self._held if h.owner == owner}:
                self._sweep(name)
            return sorted({h.holder for h in self._held if h.owner == owner})

    async def release(self, owner: str, *, holders: Sequence[str] | None = None) -> None:
        """Give back everything ``owner`` still holds reserved (only the holds of ``holders``
        when given: dead runs')."""
        async with self._lock:
            self._give_back([h for h in self._held if h.owner == owner and (holders is None or h.holder in holders)])

    async def state(self, name: str) -> LedgerState:
        """The ledger's row; ``UnknownName`` if it was never created (or was deleted)."""
        cap, spent, reserved = self._row(name)
        return LedgerState(name, None if cap is None else cap / MICRO, spent / MICRO, reserved / MICRO)

    async def names(self) -> list[str]:
        """Every ledger's name, sorted."""
        return sorted(self._rows)

    async def reset(self, name: str) -> None:
        """Zero what was spent (the cap is kept) and what is reserved beyond the live holds,
        recording what they were in the ledger's history; ``UnknownName`` if never created."""
        async with self._lock:
            _, spent, reserved = self._row(name)
            self._resets.setdefault(name, []).append(LedgerReset(name, spent / MICRO, reserved / MICRO, time.time()))
            self._rows[name][1:] = [0, sum(h.micro for h in self._held if h.name == name)]

    async def delete(self, name: str) -> None:
        """Remove the ledger and its holds, recording what it had spent in its history."""
        async with self._lock:
            _, spent, reserved = self._row(name)
            self._resets.setdefault(name, []).append(LedgerReset(name, spent / MICRO, reserved / MICRO, time.time()))
            self._held = [h for h in self._held if h.name != name]
            del self._rows[name]

    async def history(self, name: str) -> list[LedgerReset]:
        """Every reset (and the deletion) of the ledger, oldest first; ``UnknownName`` if it
        neither exists nor has any."""
        if name not in self._resets:
            self._row(name)
        return list(self._resets.get(name, []))

    def _row(self, name: str) -> tuple[int | None, int, int]:
        row = self._rows.get(name)
        if row is None:
            raise UnknownName(f"unknown ledger {name!r} (known: {', '.join(sorted(self._rows)) or 'none'})")
        cap, spent, reserved = row
        assert spent is not None and reserved is not None
        return cap, spent, reserved


class SpendGuard:
    """Reserves each model call's worst case (prompt-token bound + ``max_tokens``, priced with
    ``table``) against every ``(ledger, name)`` covering a board, before the call; a call that
    does not fit raises ``SpendRefused`` (nothing reserved stays held) and sets ``exhausted`` to
    the ledger's name, which ends the board ``budget:<name>``. The refusal is one line a user can
    act on: it names the ledger, its cap and what it spent, and what to do (a ledger deleted or
    re-capped below its spend while the board ran is refused the same way). ``settle`` books the
    real cost, or the worst case when the provider reported no usage. A model without a price
    is refused: a cap cannot hold over a cost nobody knows.

    Every reservation is held by ``holder`` (this guard: one run) for ``owner`` (the board's
    id; ``""`` when none is given) and leased for ``lease_s`` seconds (default
    ``lease_seconds()``); while it holds any, the guard renews them every third of the lease."""

    def __init__(
        self,
        table: PriceTable,
        ledgers: Sequence[tuple[Ledger, str]],
        *,
        owner: str | None = None,
        lease_s: float | None = None,
    ) -> None:
        if not ledgers:
            raise InvalidInput("a spend guard needs at least one ledger")
        self.table = table
        self.ledgers = list(ledgers)
        self.owner = owner
        """The board the guard's reservations are held for (``ledger show`` names it)."""
        self.holder = runner_owner("spend")
        """This guard's name on its holds: a resume releases them at once if its process is gone."""
        self.lease_s = check_lease(lease_s)
        self.exhausted: str | None = None
        self._live = 0  # calls holding reservations now
        self._renewing: asyncio.Task[None] | None = None

    async def reserve(self, model: str, prompt_tokens: int, max_tokens: int) -> float:
        """Reserve the call's worst case on every ledger, or raise ``SpendRefused``."""
        worst = self.table.cost(model, prompt_tokens, max_tokens)
        if worst is None:
            self.exhausted = self.ledgers[0][1]
            raise SpendRefused(model, self.exhausted, "the model has no price, so no spend cap can bound its calls")
        held: list[tuple[Ledger, str]] = []
        owner = self.owner or ""
        for ledger, name in self.ledgers:
            try:
                fits: bool | None = await ledger.reserve(
                    name, worst, owner=owner, holder=self.holder, lease_s=self.lease_s
                )
            except UnknownName:
                fits = None  # the ledger was deleted while the board ran
            if not fits:
                for other, other_name in held:
                    await other.settle(other_name, worst, 0.0, owner=owner, holder=self.holder)
                self.exhausted = name
                raise SpendRefused(model, name, await self._refusal(ledger, name, worst))
            held.append((ledger, name))
        self._live += 1
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.get_running_loop().create_task(self._renew())
        return worst

    async def _refusal(self, ledger: Ledger, name: str, worst: float) -> str:
        """Why a reservation on ``name`` was refused, and what the user can do about it."""
        try:
            state = await ledger.state(name)
        except UnknownName:
            return (
                f"ledger {name} no longer exists in the store (deleted while the board ran); create it"
                f" again (slateboard ledger set {name} USD), then resume the board"
            )
        if name == BOARD_LEDGER and isinstance(ledger, MemoryLedger):
            return (
                f"the call's worst case ${worst:.6f} does not fit the board's cap, --max-cost/max_cost ({state.line()})"
            )
        act = f"raise its cap (slateboard ledger set {name} USD) or reset it (slateboard ledger reset {name})"
        if state.cap is not None and state.spent >= state.cap:
            return f"ledger {name} has spent ${state.spent:.4f}, at or over its cap ${state.cap:.4f}: {act}"
        return f"the call's worst case ${worst:.6f} does not fit ({state.line()}): {act}"

    async def _renew(self) -> None:
        """Renew this guard's holds every third of the lease while a call holds any."""
        ledgers = {id(ledger): ledger for ledger, _ in self.ledgers}.values()
        while True:
            await asyncio.sleep(self.lease_s / 3)
            for ledger in ledgers:
                try:
                    await ledger.renew(self.holder, self.lease_s)
                except Exception as exc:  # a store hiccup: the next renewal tries again
                    log.warning("spend guard %s: renewing its reservations failed: %s", self.holder, exc)

    async def lines(self) -> list[str]:
        """Every covering ledger's state, one line each (for the run-end record)."""
        out = []
        for ledger, name in self.ledgers:
            try:
                out.append((await ledger.state(name)).line())
            except UnknownName:
                out.append(f"ledger {name}: deleted")
        return out

    async def settle(self, model: str, reserved: float, usage: tuple[int, int] | None) -> float:
        """Release ``reserved`` and book the call's cost from ``usage`` (tokens in, out); with
        ``None`` (no usage reported, or the call failed) the worst case is booked. Returns it."""
        actual = None if usage is None else self.table.cost(model, usage[0], usage[1])
        booked = reserved if actual is None else actual
        try:
            for ledger, name in self.ledgers:
                await ledger.settle(name, reserved, booked, owner=self.owner or "", holder=self.holder)
        finally:
            self._live -= 1
            if self._live <= 0 and self._renewing is not None:
                self._renewing.cancel()
                self._renewing = None
        return booked


BOARD_LEDGER = "board"
"""The name of the in-memory ledger a ``max_cost`` cap creates for one run."""


@dataclass(frozen=True, slots=True)
class SpendLimits:
    """A run's spend cap (``max_cost`` dollars, on a fresh ``MemoryLedger`` named ``board``)
    and any shared ledgers (``(ledger, name)``, caps already set) that also cover it."""

    max_cost: float | None
    ledgers: tuple[tuple[Ledger, str], ...] = ()

    async def guard(
        self, table: PriceTable, *, spent: float = 0.0, owner: str | None = None, lease_s: float | None = None
    ) -> SpendGuard:
        """The guard the run's model calls reserve against; ``spent`` (what the board's log
        already cost, for a resumed run) is booked on the ``board`` ledger first, so the cap
        covers the whole board and not each run of it. With an ``owner`` (the board's id), what
        dead runs of the board still hold is released first: holds of a process of this host
        that is gone, holds from before holders were recorded, and lapsed ones. A live run's
        holds (another resume of the board running now, another host's) are left to it and to
        their lease."""
        if owner is not None:
            for ledger in {id(ledger): ledger for ledger, _ in self.ledgers}.values():
                dead = [h for h in await ledger.holds(owner) if h == "" or dead_on_this_host(h)]
                await ledger.release(owner, holders=dead)
        ledgers = list(self.ledgers)
        if self.max_cost is not None:
            board = MemoryLedger()
            await board.set_cap(BOARD_LEDGER, self.max_cost)
            if spent > 0:
                await board.settle(BOARD_LEDGER, 0.0, spent)
            ledgers.insert(0, (board, BOARD_LEDGER))
        return SpendGuard(table, ledgers, owner=owner, lease_s=lease_s)


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


# The SQL stores live in their own module, which reads this one's names: imported last.
from ._ledger_sql import PostgresLedger, SqliteLedger, ledger_for  # noqa: E402

__all__ = [
    "BOARD_LEDGER",
    "DEFAULT_LEASE_S",
    "LEASE_ENV",
    "SPEND_META",
    "Ledger",
    "LedgerReset",
    "LedgerState",
    "MemoryLedger",
    "PostgresLedger",
    "SpendGuard",
    "SpendLimits",
    "SqliteLedger",
    "board_spend_limits",
    "check_lease",
    "lease_seconds",
    "ledger_for",
    "recorded_spend",
    "spend_limits",
    "spend_meta",
    "to_micro",
]
