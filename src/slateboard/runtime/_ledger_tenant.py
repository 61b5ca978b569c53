"""A tenant's spend ledgers: the shared store's ledgers whose names carry the tenant (issue 44).

``ledger_for(scoped_store)`` gives a ``TenantLedger``: ledger ``team`` of tenant ``acme`` is the
shared table's row ``acme/team``. The tenant sees and names its ledgers without the prefix,
cannot name another tenant's (every name it gives is prefixed with its own id), and no list,
state, history or error it gets names another tenant's ledger or counts it. The owners a ledger
lists (``holders``) are boards that reserved on it: only the tenant's boards can.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInput, UnknownName
from ._ledger_types import Ledger, LedgerReset, LedgerState

SEPARATOR = "/"
"""Between the tenant id and the ledger's own name (a tenant id never holds it)."""


class TenantLedger:
    """The ``Ledger`` protocol over ``shared`` (a ``SqliteLedger``/``PostgresLedger``/
    ``MemoryLedger``), limited to ``tenant``'s ledgers; the same guarantees (one transaction per
    call, caps never jointly exceeded) since every call is one call of ``shared``."""

    def __init__(self, shared: Ledger, tenant: str) -> None:
        self.shared = shared
        self.tenant = tenant
        self._prefix = tenant + SEPARATOR

    def _name(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"a ledger name must be a non-empty string, got {name!r}")
        return self._prefix + name

    def _own(self, name: str) -> str:
        return name[len(self._prefix) :]

    async def _unknown(self, name: str) -> UnknownName:
        known = await self.names()
        return UnknownName(f"unknown ledger {name!r} (known: {', '.join(known) or 'none'})")

    async def set_cap(self, name: str, cap: float | None) -> None:
        """Create the tenant's ledger ``name`` or change its cap."""
        await self.shared.set_cap(self._name(name), cap)

    async def reserve(
        self,
        name: str,
        amount: float,
        *,
        owner: str | None = None,
        holder: str | None = None,
        lease_s: float | None = None,
    ) -> bool:
        """``Ledger.reserve`` on the tenant's ledger ``name``."""
        try:
            fits = await self.shared.reserve(self._name(name), amount, owner=owner, holder=holder, lease_s=lease_s)
        except UnknownName:
            raise await self._unknown(name) from None
        return fits

    async def settle(
        self, name: str, reserved: float, actual: float, *, owner: str | None = None, holder: str | None = None
    ) -> None:
        """``Ledger.settle`` on the tenant's ledger ``name``."""
        await self.shared.settle(self._name(name), reserved, actual, owner=owner, holder=holder)

    async def renew(self, holder: str, lease_s: float | None = None) -> int:
        """``Ledger.renew``: a holder is one run, so its holds are on this tenant's ledgers."""
        count = await self.shared.renew(holder, lease_s)
        return count

    async def release(self, owner: str, *, holders: Sequence[str] | None = None) -> None:
        """``Ledger.release`` of a board's holds (an owner is a board of this tenant)."""
        await self.shared.release(owner, holders=holders)

    async def holds(self, owner: str) -> list[str]:
        """``Ledger.holds`` of one of the tenant's boards."""
        found = await self.shared.holds(owner)
        return found

    async def holders(self, name: str) -> dict[str, float]:
        """What each of the tenant's boards holds on its ledger ``name``."""
        try:
            found = await self.shared.holders(self._name(name))
        except UnknownName:
            raise await self._unknown(name) from None
        return found

    async def state(self, name: str) -> LedgerState:
        """The tenant's ledger ``name`` (named without the prefix); ``UnknownName`` listing only
        the tenant's ledgers."""
        try:
            got = await self.shared.state(self._name(name))
        except UnknownName:
            raise await self._unknown(name) from None
        return LedgerState(name, got.cap, got.spent, got.reserved)

    async def names(self) -> list[str]:
        """The tenant's ledgers, sorted, without the prefix."""
        every = await self.shared.names()
        return sorted(self._own(n) for n in every if n.startswith(self._prefix))

    async def reset(self, name: str) -> None:
        """``Ledger.reset`` of the tenant's ledger ``name``."""
        try:
            await self.shared.reset(self._name(name))
        except UnknownName:
            raise await self._unknown(name) from None

    async def delete(self, name: str) -> None:
        """``Ledger.delete`` of the tenant's ledger ``name``."""
        try:
            await self.shared.delete(self._name(name))
        except UnknownName:
            raise await self._unknown(name) from None

    async def history(self, name: str) -> list[LedgerReset]:
        """The resets of the tenant's ledger ``name``."""
        try:
            got = await self.shared.history(self._name(name))
        except UnknownName:
            raise await self._unknown(name) from None
        return [LedgerReset(name, r.spent, r.reserved, r.at) for r in got]
