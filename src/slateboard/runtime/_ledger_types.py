"""The ledger's vocabulary shared by ``runtime.ledger`` and its SQL stores (``_ledger_sql``):
amounts in micro-dollars, reservation leases, and the rows a ledger reports. Kept apart so the
SQL stores need not import ``ledger`` (which re-exports them), and no import cycle forms."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import InvalidInput

__all__ = [
    "DEFAULT_LEASE_S",
    "LEASE_ENV",
    "MICRO",
    "Ledger",
    "LedgerReset",
    "LedgerState",
    "check_lease",
    "lease_seconds",
    "to_micro",
]

MICRO = 1_000_000

DEFAULT_LEASE_S = 300.0
"""How long a reservation outlives a run that stopped renewing it (died), in seconds: long
enough that a slow model call of a live run (renewed every third of it) is never released under
it, short enough that a dead run's hold is back within minutes without a resume."""

LEASE_ENV = "SLATEBOARD_SPEND_LEASE_S"
"""The environment variable that sets the lease (seconds > 0) of this process's reservations."""


def to_micro(dollars: float) -> int:
    """Dollars as integer micro-dollars, rounded up (a reservation never undercounts)."""
    if isinstance(dollars, bool) or not isinstance(dollars, (int, float)) or not math.isfinite(dollars):
        raise InvalidInput(f"ledger amount must be a finite number of dollars, got {dollars!r}")
    if dollars < 0:
        raise InvalidInput(f"ledger amount must be >= 0, got {dollars!r}")
    return math.ceil(dollars * MICRO - 1e-9)


def lease_seconds() -> float:
    """The lease of this process's reservations: ``SLATEBOARD_SPEND_LEASE_S`` when set, else
    ``DEFAULT_LEASE_S``; ``InvalidInput`` naming the variable when it is not a number > 0."""
    text = os.environ.get(LEASE_ENV)
    if text is None or not text.strip():
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InvalidInput(f"{LEASE_ENV} must be a number of seconds > 0, got {text!r}")
    return value


def check_lease(lease_s: float | None) -> float:
    """A reservation's lease in seconds: ``lease_s`` (a finite number > 0, else ``InvalidInput``
    naming it), or ``lease_seconds()`` for None."""
    if lease_s is None:
        return lease_seconds()
    if isinstance(lease_s, bool) or not isinstance(lease_s, (int, float)) or not (0 < lease_s < math.inf):
        raise InvalidInput(f"a reservation lease must be a finite number of seconds > 0, got {lease_s!r}")
    return float(lease_s)


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
    """One ``reset`` (or the deletion) of a ledger: what it had spent (and held reserved) just
    before, in dollars, and when (Unix seconds). A reset zeroes the counters but never erases
    spend from view."""

    name: str
    spent: float
    reserved: float
    at: float

    def line(self) -> str:
        """One line for the CLI."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.at))
        return f"ledger {self.name}: reset {when} UTC after spent ${self.spent:.4f}, reserved ${self.reserved:.4f}"


class Ledger(Protocol):
    """What a worker needs of a ledger store (``MemoryLedger``, ``SqliteLedger``,
    ``PostgresLedger``: each behaves alike)."""

    async def set_cap(self, name: str, cap: float | None) -> None: ...
    async def reserve(
        self,
        name: str,
        amount: float,
        *,
        owner: str | None = None,
        holder: str | None = None,
        lease_s: float | None = None,
    ) -> bool: ...
    async def settle(
        self, name: str, reserved: float, actual: float, *, owner: str | None = None, holder: str | None = None
    ) -> None: ...
    async def renew(self, holder: str, lease_s: float | None = None) -> int: ...
    async def release(self, owner: str, *, holders: Sequence[str] | None = None) -> None: ...
    async def holds(self, owner: str) -> list[str]: ...
    async def holders(self, name: str) -> dict[str, float]: ...
    async def state(self, name: str) -> LedgerState: ...
    async def names(self) -> list[str]: ...
    async def reset(self, name: str) -> None: ...
    async def delete(self, name: str) -> None: ...
    async def history(self, name: str) -> list[LedgerReset]: ...
