"""The store protocol: boards, blueprints, logs, snapshots and agendas behind one async API.

The protocol is layered by capability (like eventsourcing's recorders):

- ``LogStore``: boards and their logs (create, append with compare-and-set, load, read,
  snapshots, status). Required.
- ``AgendaStore``: the agenda and its claims (push, read, claim with a lease, heartbeat,
  release, wait for work). Required.
- ``Store`` = both: what the runtime needs from every backend.
- Shared-runner capabilities, optional, each a Protocol a backend declares by inheriting it:
  ``WatchesWork`` (``wait_for_work`` filtered by worker names), ``WatchesBoards``
  (``wait_for_board``: wake when a board leaves ``running``, or gets a new record), ``ScansStalledBoards``
  (``stalled_boards``), ``ReportsCommits`` (``commit_stats``: appends and durable flushes, for
  group commit), ``ReportsLeases`` (``leases``: who holds a board's claimed invocations, and
  until when), ``ServesManyRunners`` (many runner processes may share it), ``KeepsLedgers``
  (``ledger_home``: spend ledgers live in its database).
  ``supports(store, WatchesBoards)`` tells whether a store has one.

Every backend (memory, sqlite, postgresql) gives the same guarantees, checked by one conformance
suite shipped in the package (``slateboard.testing``; ``tests/stores/test_conformance.py`` runs it):

- **One writer per log position.** ``append`` is a compare-and-set on the board's log position:
  it succeeds only when ``record.seq`` is the board's last seq + 1 and ``record.prev`` is the
  stored last hash (and, when given, ``expected_version`` is the board's version). Two writers
  that prepared at the same position cannot both append: the loser gets ``Conflict``.
- **Atomic appends.** The record, the board's new position/version, the agenda changes the
  record causes (pushes, completions, re-queues, cancellations) and the optional claim of the
  next invocation (``claim=ClaimRequest(...)``) are written in one transaction; an append that
  fails leaves no trace. Appends of different boards may share one transaction and one flush
  (group commit), each still its own compare-and-set: one failing does not fail the others.
- **Durable appends.** When ``append`` returns, the record survives the death of the process
  (and, for sqlite with ``synchronous=full`` and postgresql with ``synchronous_commit=on``, of
  the machine).
- **Patches, not states.** Records are stored as they are (a record carries its patch as
  canonical text, never the state). A full state copy is written only as a snapshot, at most
  every ``snapshot_every`` records, and only the latest snapshot of a board is kept, so the
  persisted bytes per step stay flat as the board grows.
- **Snapshots off the commit path.** When an append passes ``state`` and a snapshot is due, the
  store builds it afterwards from its previous snapshot and the log (never from the caller's
  live state, which keeps changing) and writes it without delaying commits; every later read
  through the same store object sees it. A crash before it is written loses only the snapshot.
- **An invocation is committed once.** Completing an invocation (``AgendaChanges.complete``)
  records the completing record's seq; completing it again raises
  ``DuplicateInvocationCommit`` and the append leaves no trace.
- **Leases.** ``claim`` hands out the best eligible invocation (highest priority, then lowest
  ``order``) with a lease; an invocation whose lease expired is claimable again. Claims and
  agenda reads of live invocations cost O(live invocations), never O(the board's history).
- **Clear failures.** Driver errors never escape: a damaged database raises ``StoreCorrupt``
  naming the file (or board and seq) and the problem, an unreachable one ``StoreUnavailable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self, runtime_checkable

from ..errors import StoreError as StoreError  # re-exported: the stores raise it
from ..kernel.canonical import JSON
from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import Invocation

# A board's lifecycle (claims are only handed out for running boards): re-exported, its first home.
from ..vocabulary import BOARD_STATUSES as BOARD_STATUSES
from ..vocabulary import INVOCATION_CLAIMED, INVOCATION_PENDING, InvocationStatus
from ..vocabulary import BoardStatus as BoardStatus

DEFAULT_SNAPSHOT_EVERY = 100
"""Records between two snapshots unless the store URL says otherwise (``?snapshot_every=N``)."""

DEFAULT_LEASE_S = 30.0


# -- errors -------------------------------------------------------------------------------------
class Conflict(StoreError):
    """The board moved on: the record was prepared at a log position that is no longer the last.

    The caller must abort its decision, reload the board and decide again.
    """

    def __init__(
        self,
        board_id: str,
        message: str,
        *,
        expected_seq: int | None = None,
        actual_seq: int | None = None,
    ) -> None:
        super().__init__(f"board {board_id}: {message}")
        self.board_id = board_id
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq


class DuplicateInvocationCommit(Conflict):
    """The invocation was already completed by an earlier record (its idempotency key is spent)."""

    def __init__(self, board_id: str, invocation_id: str, done_seq: int | None) -> None:
        where = f" by record {done_seq}" if done_seq is not None else ""
        super().__init__(board_id, f"invocation {invocation_id!r} was already committed{where}")
        self.invocation_id = invocation_id
        self.done_seq = done_seq


class BoardNotFound(StoreError):
    """No board with this id."""

    def __init__(self, board_id: str) -> None:
        super().__init__(f"no board {board_id!r} in this store")
        self.board_id = board_id


class BoardExists(StoreError):
    """``create_board`` with an id that is already taken."""

    def __init__(self, board_id: str) -> None:
        super().__init__(f"a board {board_id!r} already exists")
        self.board_id = board_id


class AgendaError(StoreError):
    """An agenda change names an invocation the board does not have, or one in the wrong status."""


class StoreMissing(StoreError):
    """A read-only command named a store that does not exist (``open_store(create=False)``)."""


class StoreCorrupt(StoreError):
    """The stored data is damaged: not a database, truncated, malformed, or an unreadable row.

    ``where`` names the file (or the database and board/seq) and ``problem`` what is wrong.
    """

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


class StoreUnavailable(StoreError):
    """The database cannot be reached or opened right now (retrying later may help)."""


class SchemaTooNew(StoreError):
    """The store was written by a newer slateboard whose schema this version does not know."""


class LeaseLost(StoreError):
    """The invocation is no longer claimed by this owner (its lease expired and it moved on)."""


# -- data ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BoardInfo:
    """A board's header: identity, lifecycle and log position."""

    board_id: str
    name: str
    status: BoardStatus
    reason: str | None
    created_at: float
    updated_at: float
    version: int
    seq: int
    last_hash: str
    meta: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A full copy of a board's state after record ``seq`` (version, hashes included)."""

    state: JSON
    version: int
    seq: int
    last_hash: str
    state_hash: str


@dataclass(frozen=True, slots=True)
class LoadedBoard:
    """Everything needed to rebuild a board: blueprint, initial state, latest snapshot, the tail.

    Rebuild with ``Kernel(compiled, state=start_state, version=start_version, seq=start_seq,
    last_hash=start_hash)`` after replaying ``records`` with ``replay(..., start_*=...)``.
    """

    info: BoardInfo
    blueprint: dict[str, Any]
    initial_state: JSON
    snapshot: Snapshot | None
    records: list[Record]
    pending: list[Invocation]
    claimed: list[Invocation]

    @property
    def board_id(self) -> str:
        """The board's id."""
        return self.info.board_id

    @property
    def start_state(self) -> JSON:
        """The state the tail applies to (the snapshot's, else the initial state)."""
        return self.snapshot.state if self.snapshot is not None else self.initial_state

    @property
    def start_version(self) -> int:
        """Version at the start of ``records``."""
        return self.snapshot.version if self.snapshot is not None else 0

    @property
    def start_seq(self) -> int:
        """Seq of the record just before ``records`` (0 at genesis)."""
        return self.snapshot.seq if self.snapshot is not None else 0

    @property
    def start_hash(self) -> str:
        """Hash of the record just before ``records`` (GENESIS at the start)."""
        return self.snapshot.last_hash if self.snapshot is not None else GENESIS


@dataclass(frozen=True, slots=True)
class AgendaChanges:
    """Agenda changes caused by one record, written in the same transaction as the record.

    ``push``: new pending invocations (an id already on the board, or a key already pending on
    it, is skipped: pushes are idempotent). ``complete``: invocation ids this record completes
    (each at most once, ever). ``requeue``: claimed/pending invocations put back to pending with
    the given ``attempts``/``feedback``/``meta`` (e.g. a stale proposal re-queued once).
    ``cancel``: invocation ids cancelled.
    """

    push: Sequence[Invocation] = ()
    complete: Sequence[str] = ()
    requeue: Sequence[Invocation] = ()
    cancel: Sequence[str] = ()

    def __bool__(self) -> bool:
        return bool(self.push or self.complete or self.requeue or self.cancel)


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a claimed invocation (``owner``) and until when (``lease_until``, epoch seconds)."""

    invocation_id: str
    owner: str
    lease_until: float


@dataclass(frozen=True, slots=True)
class Claim:
    """A leased invocation: ``owner`` holds it until ``lease_until`` (epoch seconds)."""

    board_id: str
    invocation: Invocation
    owner: str
    lease_until: float
    claims: int
    """How many times this invocation has been claimed, this claim included."""


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """Claim the next invocation inside an append's transaction (``append(..., claim=...)``).

    After the record and its agenda changes are applied, the best eligible invocation of the
    board (as ``claim`` would pick it: of ``worker_names`` when given, or exactly
    ``invocation_id`` when given) is leased to ``owner`` in the same transaction, so a runner
    step costs one transaction: commit step n and lease step n+1 together.
    """

    owner: str
    lease_s: float = DEFAULT_LEASE_S
    worker_names: Sequence[str] | None = None
    invocation_id: str | None = None
    now: float | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append did: the new position, whether a snapshot was scheduled (written off the
    commit path, visible to later reads through this store) or is due (no ``state`` was given:
    the caller may ``write_snapshot`` or ``compact``), and the claim made with it, if asked."""

    seq: int
    version: int
    snapshot_written: bool
    snapshot_due: bool
    claim: Claim | None = None


@dataclass(frozen=True, slots=True)
class CommitStats:
    """Counters of a store object since it was opened: appends acknowledged, durable flushes
    (transaction commits that waited for the disk) and batches (transactions that carried at
    least one append). ``flushes / appends`` below 1 means group commit shared flushes."""

    appends: int = 0
    flushes: int = 0
    batches: int = 0


# -- the protocol, layer by layer ---------------------------------------------------------------
@runtime_checkable
class LogStore(Protocol):
    """Boards and their logs (see the module docstring for the guarantees)."""

    url: str
    snapshot_every: int

    async def close(self) -> None:
        """Release connections and threads; the store is unusable afterwards."""
        ...

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
        """Create a running board at version 0 / seq 0 with its start invocations; ``BoardExists``
        if ``board_id`` is taken. The id is a fresh uuid4 hex when not given."""
        ...

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
        """Append ``record`` and apply ``agenda`` atomically, or raise and leave no trace.

        CAS: ``Conflict`` unless ``record.seq == last seq + 1`` and ``record.prev == last hash``
        (and ``expected_version`` equals the board's version when given).
        ``DuplicateInvocationCommit`` when a completed invocation was committed before.
        ``state`` (the board state after the record) opts into snapshots kept by the store: when
        one is due the store writes it off the commit path (``snapshot_written``); the object
        itself is never read after the call. ``claim`` leases the next invocation in the same
        transaction (``AppendResult.claim``; None when nothing is eligible).
        """
        ...

    async def load_board(self, board_id: str) -> LoadedBoard:
        """The blueprint, initial state, latest snapshot, records after it and the live agenda."""
        ...

    async def board_info(self, board_id: str) -> BoardInfo:
        """The board's header (``BoardNotFound`` if absent)."""
        ...

    async def list_boards(self, *, status: BoardStatus | None = None) -> list[BoardInfo]:
        """Every board (optionally only those in ``status``), oldest first."""
        ...

    async def read_records(self, board_id: str, from_seq: int = 1, *, limit: int | None = None) -> list[Record]:
        """Records with ``seq >= from_seq`` in order (at most ``limit``)."""
        ...

    async def write_snapshot(
        self, board_id: str, state: JSON, *, version: int, seq: int, last_hash: str, state_hash: str
    ) -> None:
        """Store a snapshot of the state after record ``seq`` (must be a committed position whose
        hash is ``last_hash``; otherwise ``Conflict``). Replaces an older snapshot."""
        ...

    async def compact(self, board_id: str) -> Snapshot | None:
        """Build and store a snapshot at the last record from the stored snapshot and records
        (no kernel or blueprint needed); returns it, or None for an empty log."""
        ...

    async def set_status(self, board_id: str, status: BoardStatus, reason: str | None = None) -> BoardInfo:
        """Move the board to ``status`` (one of BOARD_STATUSES) with an optional end reason."""
        ...

    async def delete_board(self, board_id: str) -> None:
        """Remove the board with its log, snapshots and agenda (no error if absent)."""
        ...


@runtime_checkable
class AgendaStore(Protocol):
    """The agenda of every board and its leases (claims)."""

    async def push_invocations(self, board_id: str, invocations: Sequence[Invocation]) -> list[str]:
        """Push pending invocations outside an append (e.g. start rules); returns the ids added
        (ids already present, or keys already pending, are skipped)."""
        ...

    async def agenda(
        self, board_id: str, statuses: Sequence[InvocationStatus] = (INVOCATION_PENDING, INVOCATION_CLAIMED)
    ) -> list[Invocation]:
        """The board's invocations in these statuses, in agenda order."""
        ...

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
        """Lease the best eligible invocation of a running board (or of any running board when
        ``board_id`` is None): pending, or claimed with an expired lease; highest priority first,
        then lowest order (only ``invocation_id`` when given). None when nothing is eligible.
        Never hands one invocation to two owners with overlapping leases."""
        ...

    async def heartbeat(
        self, board_id: str, invocation_id: str, *, owner: str, lease_s: float, now: float | None = None
    ) -> float:
        """Extend the owner's lease; returns the new ``lease_until``. ``LeaseLost`` when the
        invocation is no longer claimed by ``owner``."""
        ...

    async def release_expired(self, now: float | None = None) -> int:
        """Put claimed invocations whose lease expired back to pending (cancelling any whose key
        is already pending again); returns how many were released or cancelled."""
        ...

    async def wait_for_work(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for new pending work; True if woken by a push (a
        spurious True is allowed, so callers must still claim)."""
        ...


@runtime_checkable
class Store(LogStore, AgendaStore, Protocol):
    """Async persistence of boards: the two required layers (see the module docstring)."""


class OpenedStore(Store, Protocol):
    """A store ``open_store`` gives: also an async context manager that closes it when the block
    ends (``async with await open_store(url) as store:``). A third-party store need not be one."""

    async def __aenter__(self) -> Self:
        """The store itself."""
        ...

    async def __aexit__(self, *exc: object) -> None:
        """Close the store (``close``), whether or not the block raised."""
        ...


# -- optional capabilities (shared runners) ---------------------------------------------------------
@runtime_checkable
class WatchesWork(Protocol):
    """``wait_for_work`` that wakes only for work some of ``worker_names`` can take, and returns
    at once when such work is already there (PostgreSQL: ``LISTEN/NOTIFY``)."""

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See AgendaStore.wait_for_work; ``worker_names`` filters what counts as work."""
        ...


@runtime_checkable
class WatchesBoards(Protocol):
    """Waiting for a board to leave ``running`` without polling its header in a loop."""

    async def wait_for_board(self, board_id: str, timeout: float, *, after_seq: int | None = None) -> BoardInfo:
        """The board's header once its status is no longer ``running``, or after ``timeout``
        seconds (then still running); with ``after_seq``, also as soon as the board's log has a
        record past ``after_seq`` (a watcher's wake-up on appends)."""
        ...


@runtime_checkable
class ScansStalledBoards(Protocol):
    """Finding running boards nothing will ever be claimed for, in one query."""

    async def stalled_boards(self) -> list[str]:
        """Ids of running boards with no pending or claimed invocation, oldest first."""
        ...


@runtime_checkable
class ReportsCommits(Protocol):
    """Counters of appends and durable flushes (how well group commit shares flushes)."""

    def commit_stats(self) -> CommitStats:
        """Counters since the store object was opened."""
        ...


@runtime_checkable
class ReportsLeases(Protocol):
    """Reading the leases on a board's claimed invocations (a runner waiting for one says whose
    lease it waits for, and can tell a lease of a dead process on its own host)."""

    async def leases(self, board_id: str) -> list[Lease]:
        """The board's claimed invocations: id, owner and lease end (expired ones included)."""
        ...


@runtime_checkable
class ServesManyRunners(Protocol):
    """Many runner processes may share the store (``RunnerProcess``): their claims never wait
    for each other (PostgreSQL: ``FOR UPDATE SKIP LOCKED``; memory: one event loop). A store
    without it serialises every claim behind one write lock (SQLite's file lock), so it serves
    one runner process: run its boards with ``Runner``. A marker: it adds no method."""


@dataclass(frozen=True, slots=True)
class LedgerHome:
    """Where a store keeps spend ledgers (``slateboard.runtime.ledger``): ``kind`` is ``sqlite``
    (``target`` the database file) or ``postgresql`` (``target`` the connection string)."""

    kind: Literal["sqlite", "postgresql"]
    target: str
    busy_timeout_ms: int = 30_000


@runtime_checkable
class KeepsLedgers(Protocol):
    """Spend ledgers shared by boards live in the store's own database, so processes that share
    the store share them (issue 33)."""

    def ledger_home(self) -> LedgerHome:
        """Where this store's ledgers live."""
        ...


def supports(store: object, capability: type) -> bool:
    """Whether ``store`` declares ``capability`` (an optional capability protocol: ``WatchesWork``,
    ``WatchesBoards``, ``ScansStalledBoards``, ``ReportsCommits``, ``ReportsLeases``,
    ``ServesManyRunners``, ``KeepsLedgers``): it inherits the protocol. A store that wraps a
    shared one (``shared_store``: a tenant's scope) has it only when the shared one has it too."""
    if capability not in type(store).__mro__:
        return False
    shared = getattr(store, "shared_store", None)
    return shared is None or supports(shared, capability)
