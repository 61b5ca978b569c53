"""Tenants: one store shared by customers who never see each other's boards (issue 44).

``open_store(url, tenant="acme")`` gives a ``TenantStore``: the shared store seen through one
tenant. Every surface (the CLI's ``--tenant``, MCP, the dashboard's per-tenant tokens, the
Python API) opens the store through it, so the check lives in one place:

- a board created through it records the tenant in its meta (``TENANT_META``), at creation,
  and no later call changes it;
- every call that names a board (``board_info``, ``load_board``, ``read_records``, ``append``,
  ``agenda``, ``claim``, ``heartbeat``, ``set_status``, ``delete_board``, ``wait_for_board``,
  snapshots, leases ...) first checks that the board is the tenant's, and raises the very
  ``BoardNotFound`` a missing board raises for another tenant's board: the same class, the same
  message, so no answer tells the two apart (no existence oracle);
- the calls that span boards (``list_boards``, ``stalled_boards``, ``claim(None)``,
  ``release_expired``) see the tenant's boards only, counts included.

A board's tenant never changes, so a board once checked is remembered by the scope object (a
step does not pay a second read); ``load_board`` and ``board_info`` check the fresh header every
time. Boards created without a tenant (every board before issue 44) belong to no tenant: only
the unscoped store (``open_store(url)``, the operator's view, which sees every board) reaches
them. Spend ledgers and memory are scoped the same way (``runtime.ledger.ledger_for`` and
``memory.open_memory(url, tenant=...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..scheduling.invocation import Invocation
from ..vocabulary import BOARD_RUNNING, INVOCATION_CLAIMED, INVOCATION_PENDING, InvocationStatus
from ._tenant_registry import TENANT_ID, TenantRegistry, UnknownTenant, check_tenant_id, tenant_registry
from .base import (
    DEFAULT_LEASE_S,
    AgendaChanges,
    AppendResult,
    BoardInfo,
    BoardNotFound,
    BoardStatus,
    Claim,
    ClaimRequest,
    CommitStats,
    KeepsLedgers,
    Lease,
    LedgerHome,
    LoadedBoard,
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    ServesManyRunners,
    Snapshot,
    Store,
    WatchesBoards,
    WatchesWork,
    supports,
)

TENANT_META = "tenant"
"""The board meta key holding the tenant a board was created in (absent: no tenant)."""

__all__ = [
    "TENANT_ID",
    "TENANT_META",
    "TenantRegistry",
    "TenantStore",
    "UnknownTenant",
    "board_tenant",
    "check_tenant_id",
    "tenant_of_store",
    "tenant_registry",
]


def board_tenant(info: BoardInfo) -> str | None:
    """The tenant a board belongs to (None: none)."""
    found = info.meta.get(TENANT_META)
    return found if isinstance(found, str) else None


def tenant_of_store(store: object) -> str | None:
    """The tenant ``store`` is scoped to (None: an unscoped store)."""
    return store.tenant if isinstance(store, TenantStore) else None


class TenantStore(
    Store,
    WatchesWork,
    WatchesBoards,
    ScansStalledBoards,
    ReportsCommits,
    ReportsLeases,
    ServesManyRunners,
    KeepsLedgers,
):
    """``shared_store`` seen through ``tenant`` (see the module docstring for the guarantees).

    It declares every capability; ``supports(scoped, X)`` is true only when the shared store has
    ``X`` too. With ``owns=True`` (what ``open_store`` gives) closing it closes the shared store;
    scopes made over a store that stays open (the dashboard's, one per tenant) pass False."""

    def __init__(self, shared_store: Store, tenant: str, *, owns: bool = False) -> None:
        if isinstance(shared_store, TenantStore):
            raise InvalidInput("a tenant scope is made over the shared store, not over another scope")
        self.shared_store = shared_store
        self.tenant = check_tenant_id(tenant)
        self.url = shared_store.url  # the shared store's: the tenant is not part of it
        self.snapshot_every = shared_store.snapshot_every
        self._owns = owns
        self._mine: set[str] = set()
        self._claim_order: list[str] = []

    @classmethod
    async def open(cls, shared_store: Store, tenant: str, *, owns: bool = False) -> TenantStore:
        """The scope of a registered ``tenant`` (``InvalidInput`` for a malformed id,
        ``UnknownTenant`` for one the store's registry does not have)."""
        await tenant_registry(shared_store).require(tenant)
        return cls(shared_store, tenant, owns=owns)

    # -- plain attributes -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"TenantStore({self.shared_store!r}, tenant={self.tenant!r})"

    async def close(self) -> None:
        """Close the shared store when this scope owns it (``open_store`` gives such a scope)."""
        if self._owns:
            await self.shared_store.close()

    async def __aenter__(self) -> Self:
        """``async with await open_store(url, tenant=...) as store:``."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _has(self, capability: type) -> bool:
        return supports(self.shared_store, capability)

    # -- the check ------------------------------------------------------------------------------
    def _own(self, info: BoardInfo) -> BoardInfo:
        """``info`` when the board is the tenant's; else the ``BoardNotFound`` of a missing one."""
        if board_tenant(info) != self.tenant:
            self._mine.discard(info.board_id)
            raise BoardNotFound(info.board_id)
        self._mine.add(info.board_id)
        return info

    async def _check(self, board_id: str) -> None:
        if board_id not in self._mine:
            self._own(await self.shared_store.board_info(board_id))

    # -- LogStore -------------------------------------------------------------------------------
    async def create_board(
        self,
        blueprint: dict[str, Any],
        initial_state: JSON,
        *,
        board_id: str | None = None,
        name: str | None = None,
        meta: dict[str, JSON] | None = None,
        agenda: Sequence[Invocation] = (),
    ) -> BoardInfo:
        """Create the board in this tenant (its meta records the tenant); a meta naming another
        tenant is refused (``InvalidInput``)."""
        given = (meta or {}).get(TENANT_META, self.tenant)
        if given != self.tenant:
            raise InvalidInput(f"board meta {TENANT_META!r} is {given!r}, but this store is scoped to {self.tenant!r}")
        info = await self.shared_store.create_board(
            blueprint,
            initial_state,
            board_id=board_id,
            name=name,
            meta={**(meta or {}), TENANT_META: self.tenant},
            agenda=agenda,
        )
        return self._own(info)

    async def append(
        self,
        board_id: str,
        record: Record,
        *,
        agenda: AgendaChanges | None = None,
        expected_version: int | None = None,
        state: JSON = None,
        claim: ClaimRequest | None = None,
    ) -> AppendResult:
        """``Store.append`` on the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.append(
            board_id, record, agenda=agenda, expected_version=expected_version, state=state, claim=claim
        )

    async def load_board(self, board_id: str) -> LoadedBoard:
        """``Store.load_board`` of the tenant's board (its fresh header is checked)."""
        await self._check(board_id)
        loaded = await self.shared_store.load_board(board_id)
        self._own(loaded.info)
        return loaded

    async def board_info(self, board_id: str) -> BoardInfo:
        """The tenant's board's header (``BoardNotFound`` for another tenant's, as for none)."""
        return self._own(await self.shared_store.board_info(board_id))

    async def list_boards(self, *, status: BoardStatus | None = None) -> list[BoardInfo]:
        """The tenant's boards (optionally only those in ``status``), oldest first."""
        return [b for b in await self.shared_store.list_boards(status=status) if board_tenant(b) == self.tenant]

    async def read_records(self, board_id: str, from_seq: int = 1, *, limit: int | None = None) -> list[Record]:
        """``Store.read_records`` of the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.read_records(board_id, from_seq, limit=limit)

    async def write_snapshot(
        self, board_id: str, state: JSON, *, version: int, seq: int, last_hash: str, state_hash: str
    ) -> None:
        """``Store.write_snapshot`` on the tenant's board."""
        await self._check(board_id)
        await self.shared_store.write_snapshot(
            board_id, state, version=version, seq=seq, last_hash=last_hash, state_hash=state_hash
        )

    async def compact(self, board_id: str) -> Snapshot | None:
        """``Store.compact`` of the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.compact(board_id)

    async def set_status(self, board_id: str, status: BoardStatus, reason: str | None = None) -> BoardInfo:
        """``Store.set_status`` of the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.set_status(board_id, status, reason)

    async def delete_board(self, board_id: str) -> None:
        """Delete the tenant's board; another tenant's is left alone, silently, as a missing
        one is."""
        try:
            await self._check(board_id)
        except BoardNotFound:
            return
        self._mine.discard(board_id)
        await self.shared_store.delete_board(board_id)

    # -- AgendaStore ----------------------------------------------------------------------------
    async def push_invocations(self, board_id: str, invocations: Sequence[Invocation]) -> list[str]:
        """``Store.push_invocations`` on the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.push_invocations(board_id, invocations)

    async def agenda(
        self, board_id: str, statuses: Sequence[InvocationStatus] = (INVOCATION_PENDING, INVOCATION_CLAIMED)
    ) -> list[Invocation]:
        """``Store.agenda`` of the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.agenda(board_id, statuses)

    async def claim(
        self,
        board_id: str | None,
        *,
        owner: str,
        lease_s: float = DEFAULT_LEASE_S,
        worker_names: Sequence[str] | None = None,
        now: float | None = None,
        invocation_id: str | None = None,
    ) -> Claim | None:
        """``Store.claim`` on the tenant's board; with ``board_id=None``, on the tenant's running
        boards only: each is tried in turn, starting after the board of the last claim (so one
        busy board does not starve the others), and the list is read again when they all come
        up empty. The priority order holds within a board, not across the tenant's boards."""
        if board_id is not None:
            await self._check(board_id)
            return await self.shared_store.claim(
                board_id, owner=owner, lease_s=lease_s, worker_names=worker_names, now=now, invocation_id=invocation_id
            )
        for fresh in (False, True):
            if fresh or not self._claim_order:
                self._claim_order = [b.board_id for b in await self.list_boards(status=BOARD_RUNNING)]
            for board in list(self._claim_order):
                got = await self.shared_store.claim(
                    board, owner=owner, lease_s=lease_s, worker_names=worker_names, now=now, invocation_id=invocation_id
                )
                if got is not None:
                    order = self._claim_order
                    at = order.index(board)
                    self._claim_order = order[at + 1 :] + order[: at + 1]
                    return got
        return None

    async def heartbeat(
        self, board_id: str, invocation_id: str, *, owner: str, lease_s: float, now: float | None = None
    ) -> float:
        """``Store.heartbeat`` on the tenant's board."""
        await self._check(board_id)
        return await self.shared_store.heartbeat(board_id, invocation_id, owner=owner, lease_s=lease_s, now=now)

    async def release_expired(self, now: float | None = None) -> int:
        """Put expired claims back to pending; returns how many of them were the tenant's (the
        shared store releases every tenant's: expired leases help nobody, and the count of the
        others' is not the tenant's to know). Counting needs ``ReportsLeases`` of the shared
        store; without it the count is 0."""
        import time

        at = time.time() if now is None else now
        mine = 0
        if self._has(ReportsLeases) and isinstance(self.shared_store, ReportsLeases):
            for board in await self.list_boards():
                leases = await self.shared_store.leases(board.board_id)
                mine += sum(1 for lease in leases if lease.lease_until <= at)
        await self.shared_store.release_expired(now)
        return mine

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """The shared store's wait (a wake-up for another tenant's work is a spurious one, which
        the protocol allows: the caller claims, and finds nothing of another tenant's)."""
        if worker_names is not None and self._has(WatchesWork) and isinstance(self.shared_store, WatchesWork):
            return await self.shared_store.wait_for_work(timeout, worker_names=worker_names)
        return await self.shared_store.wait_for_work(timeout)

    # -- optional capabilities --------------------------------------------------------------------
    def _need(self, capability: type) -> Any:
        if not self._has(capability):
            raise InvalidInput(f"the shared store {type(self.shared_store).__name__} has no {capability.__name__}")
        return self.shared_store

    async def wait_for_board(self, board_id: str, timeout: float, *, after_seq: int | None = None) -> BoardInfo:
        """``WatchesBoards.wait_for_board`` on the tenant's board."""
        await self._check(board_id)
        inner: WatchesBoards = self._need(WatchesBoards)
        return self._own(await inner.wait_for_board(board_id, timeout, after_seq=after_seq))

    async def stalled_boards(self) -> list[str]:
        """The tenant's running boards with nothing pending or claimed."""
        inner: ScansStalledBoards = self._need(ScansStalledBoards)
        found = await inner.stalled_boards()
        if not found:
            return []
        mine = {b.board_id for b in await self.list_boards(status=BOARD_RUNNING)}
        return [b for b in found if b in mine]

    def commit_stats(self) -> CommitStats:
        """The shared store object's counters (this process's appends, every scope's)."""
        inner: ReportsCommits = self._need(ReportsCommits)
        return inner.commit_stats()

    async def leases(self, board_id: str) -> list[Lease]:
        """``ReportsLeases.leases`` of the tenant's board."""
        await self._check(board_id)
        inner: ReportsLeases = self._need(ReportsLeases)
        return await inner.leases(board_id)

    def ledger_home(self) -> LedgerHome:
        """The shared store's ledger home (``ledger_for`` scopes the ledgers to the tenant)."""
        inner: KeepsLedgers = self._need(KeepsLedgers)
        return inner.ledger_home()


async def open_tenant(shared_store: Store, tenant: str, *, owns: bool) -> TenantStore:
    """``TenantStore.open``, closing the shared store it owns when the tenant is refused."""
    try:
        return await TenantStore.open(shared_store, tenant, owns=owns)
    except BaseException:
        if owns:
            await shared_store.close()
        raise
