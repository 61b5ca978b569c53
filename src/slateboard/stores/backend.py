"""The implementation base every backend shares: the public methods, their prologues, snapshots.

A backend (memory, sqlite, postgresql) subclasses ``StoreBackend`` and supplies the storage
steps; the parts that were once written three times live here once:

- ``prepare_board`` / ``prepare_append``: the prologue of ``create_board`` and ``append``
  (checks that need no database, encoding of the record and of the invocations it pushes or
  re-queues), done before the call yields, so the caller may change its objects afterwards;
- ``finish_append``: turns what the transaction saw into an ``AppendResult`` and, when a
  snapshot is due and the caller opted in (``state`` given), schedules it off the commit path;
- background snapshots (``_snapshots.SnapshotKeeper``);
- commit counters (``commit_stats``) for the group-commit benchmark;
- the protocol's public methods (``create_board``, ``append``, ``claim``, ``wait_for_board``
  ...): their signatures, defaults and argument checks are written here once, and each calls
  one storage hook (``_insert_board``, ``_commit_append``, ``_claim`` ...) that a backend
  supplies with its own SQL and connection handling. The hooks run where the public method
  runs: no thread hand-off or extra wait is added (``append`` awaits ``_commit_append``'s
  awaitable directly, so SQLite's commit loop stays on its connection thread).

``StoreBackend`` declares the capabilities every shipped backend has (``WatchesWork``,
``WatchesBoards``, ``ScansStalledBoards``, ``ReportsCommits``, ``ReportsLeases``); a backend
adds its own (``ServesManyRunners``, ``KeepsLedgers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from ..kernel.canonical import JSON
from ..kernel.record import GENESIS_META, Record, board_genesis
from ..scheduling.invocation import CLAIMED, PENDING, Invocation, InvocationStatus
from ..vocabulary import BOARD_RUNNING, OUTCOME_ACCEPTED, BoardStatus
from . import _common as c
from . import _tx as shared
from ._snapshots import SnapshotKeeper
from .base import (
    DEFAULT_LEASE_S,
    AgendaChanges,
    AppendResult,
    BoardInfo,
    Claim,
    ClaimRequest,
    CommitStats,
    LoadedBoard,
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    Snapshot,
    Store,
    WatchesBoards,
    WatchesWork,
)


@dataclass(frozen=True, slots=True)
class NewBoard:
    """A board ready to insert: its encoded blueprint, initial state, meta and start agenda."""

    board_id: str
    name: str
    blueprint: bytes
    initial: bytes
    meta: bytes
    agenda: list[tuple[Invocation, bytes]]


@dataclass(frozen=True, slots=True)
class NewRecord:
    """An append ready for its transaction: the record, its encoded form and agenda rows."""

    board_id: str
    record: Record
    data: bytes
    changes: AgendaChanges
    pushes: list[tuple[Invocation, bytes]]
    requeues: list[tuple[Invocation, bytes]]
    expected_version: int | None
    keeps_snapshots: bool
    claim: ClaimRequest | None

    @property
    def prev_version(self) -> int:
        """The board version this record was prepared at."""
        return self.record.version - 1 if self.record.outcome == OUTCOME_ACCEPTED else self.record.version

    def cas_args(self, now: float) -> tuple[Any, ...]:
        """The parameters of the SQL compare-and-set, in statement order: the board's new
        (version, last_seq, last_hash, updated_at), then what it must hold now (board_id,
        last_seq, last_hash, version)."""
        rec = self.record
        return (rec.version, rec.seq, rec.hash, now, self.board_id, rec.seq - 1, rec.prev, self.prev_version)


def claim_time(req: ClaimRequest) -> float:
    """The time a claim request is judged at: its own ``now``, else the clock."""
    return c.now() if req.now is None else req.now


class StoreBackend(
    SnapshotKeeper, Store, WatchesWork, WatchesBoards, ScansStalledBoards, ReportsCommits, ReportsLeases
):
    """Shared implementation of the Store protocol: its public methods, prologues and snapshot
    policy. A subclass calls ``_init_backend`` first, sets ``url``, ``snapshot_every`` and
    ``_where`` (the database, as errors name it), and supplies the hooks below."""

    _where: str
    _board_poll_s: float = math.inf
    """How often ``wait_for_board`` reads the header again when no note wakes it (a backend
    without notes across processes, such as SQLite, polls)."""
    _commit_yields: bool = True
    """Whether ``_commit_append`` yields to the event loop; when it does not (memory), an append
    that scheduled a snapshot yields once, so the snapshot task starts its worker thread now
    instead of at the next read."""

    def _init_backend(self) -> None:
        self._init_snapshots()
        self._stats = [0, 0, 0]  # appends, flushes, batches
        self._closed = False

    def _board_where(self, board_id: str) -> str:
        return f"{self._where} board {board_id}"

    async def __aenter__(self) -> Self:
        """``async with await open_store(url) as store:`` closes the store when the block ends."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- prologues --------------------------------------------------------------------------------
    def prepare_board(
        self,
        blueprint: dict[str, Any],
        initial_state: JSON,
        *,
        board_id: str | None,
        name: str | None,
        meta: dict[str, JSON] | None,
        agenda: Sequence[Invocation],
    ) -> NewBoard:
        """Encode a new board (``StoreError`` for values that are not JSON)."""
        return NewBoard(
            board_id or uuid.uuid4().hex,
            name if name is not None else str(blueprint.get("name", "board")),
            c.encode_json(blueprint, compress=self.compresses),
            c.encode_json(initial_state, compress=self.compresses),
            # The genesis binding (issue 29, R1): a board with no record yet is bound to its
            # blueprint and initial state, which verify, resume and anchor check.
            c.json_meta({**(meta or {}), GENESIS_META: board_genesis(blueprint, initial_state)}),
            self.encode_invocations(agenda),
        )

    def encode_invocations(self, invocations: Sequence[Invocation]) -> list[tuple[Invocation, bytes]]:
        """Each invocation with its stored form (``StoreError`` for values that are not JSON)."""
        zipped = self.compresses
        return [(inv, c.encode_invocation(inv, compress=zipped)) for inv in invocations]

    def prepare_append(
        self,
        board_id: str,
        record: Record,
        *,
        agenda: AgendaChanges | None,
        expected_version: int | None,
        state: JSON,
        claim: ClaimRequest | None,
    ) -> NewRecord:
        """Check and encode an append: a sealed record, no invocation completed twice."""
        raw = c.sealed_bytes(record)  # checks the seal with the same encoding it stores
        c.check_changes(board_id, agenda)
        changes = agenda or AgendaChanges()
        return NewRecord(
            board_id,
            record,
            c.pack_small(raw, c.DICT_RECORD) if self.compresses else raw,
            changes,
            self.encode_invocations(changes.push) if changes.push else [],
            self.encode_invocations(changes.requeue) if changes.requeue else [],
            expected_version,
            state is not None,
            claim,
        )

    def finish_append(self, job: NewRecord, stored_snapshot_seq: int, claim: Claim | None) -> AppendResult:
        """The result of a committed append; schedules its snapshot when one is due."""
        self._stats[0] += 1
        rec = job.record
        keeps = job.keeps_snapshots
        due = self.snapshot_after(job.board_id, rec.seq, len(job.data), stored_snapshot_seq, keeps)
        return AppendResult(rec.seq, rec.version, due and keeps, due and not keeps, claim)

    def count_flush(self, *, batches: int = 1, flushes: int = 1) -> None:
        """Count transactions that carried appends, and those that waited for the disk."""
        self._stats[1] += flushes
        self._stats[2] += batches

    def commit_stats(self) -> CommitStats:
        """See ReportsCommits.commit_stats."""
        return CommitStats(*self._stats)

    # -- the protocol, written once ---------------------------------------------------------------
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
        """See Store.create_board."""
        new = self.prepare_board(blueprint, initial_state, board_id=board_id, name=name, meta=meta, agenda=agenda)
        return await self._insert_board(new)

    async def list_boards(self, *, status: BoardStatus | None = None) -> list[BoardInfo]:
        """See Store.list_boards."""
        return await self._list_boards(status)

    async def set_status(self, board_id: str, status: BoardStatus, reason: str | None = None) -> BoardInfo:
        """See Store.set_status."""
        shared.check_status(status)
        return await self._set_status(board_id, status, reason)

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
        """See Store.append (the backend's ``_commit_append`` writes it)."""
        job = self.prepare_append(
            board_id, record, agenda=agenda, expected_version=expected_version, state=state, claim=claim
        )
        snap_seq, got = await self._commit_append(job)
        self._after_append(job)
        result = self.finish_append(job, snap_seq, got)
        if result.snapshot_written and not self._commit_yields:
            await asyncio.sleep(0)
        return result

    async def read_records(self, board_id: str, from_seq: int = 1, *, limit: int | None = None) -> list[Record]:
        """See Store.read_records."""
        return await self._read_records(board_id, from_seq, limit)

    async def load_board(self, board_id: str) -> LoadedBoard:
        """See Store.load_board (sees every snapshot scheduled before it)."""
        await self.settle_snapshots(board_id)
        return await self._load_board(board_id)

    async def write_snapshot(
        self, board_id: str, state: JSON, *, version: int, seq: int, last_hash: str, state_hash: str
    ) -> None:
        """See Store.write_snapshot."""
        blob = c.encode_json(state, compress=self.compresses)
        await self._write_snapshot(board_id, Snapshot(None, version, seq, last_hash, state_hash), blob)

    async def compact(self, board_id: str) -> Snapshot | None:
        """See Store.compact."""
        return await c.compact(self, board_id, self._where)

    async def push_invocations(self, board_id: str, invocations: Sequence[Invocation]) -> list[str]:
        """See Store.push_invocations."""
        return await self._push_invocations(board_id, self.encode_invocations(invocations))

    async def agenda(
        self, board_id: str, statuses: Sequence[InvocationStatus] = (PENDING, CLAIMED)
    ) -> list[Invocation]:
        """See Store.agenda."""
        return await self._read_agenda(board_id, tuple(statuses))

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
        """See Store.claim."""
        t = c.now() if now is None else now
        return await self._claim(board_id, ClaimRequest(owner, lease_s, worker_names, invocation_id, t))

    async def heartbeat(
        self, board_id: str, invocation_id: str, *, owner: str, lease_s: float, now: float | None = None
    ) -> float:
        """See Store.heartbeat."""
        until = (c.now() if now is None else now) + lease_s
        await self._heartbeat(board_id, invocation_id, owner, until)
        return until

    async def release_expired(self, now: float | None = None) -> int:
        """See Store.release_expired."""
        return await self._release_expired(c.now() if now is None else now)

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See WatchesWork.wait_for_work (each backend waits its own way)."""
        raise NotImplementedError

    async def wait_for_board(self, board_id: str, timeout: float, *, after_seq: int | None = None) -> BoardInfo:
        """See WatchesBoards.wait_for_board: woken by the backend's notes of status changes and
        appends (``_watch_board``; a waiter registers before it reads the header, so no change
        is missed), and where a backend has none across processes, by reading the header
        every ``_board_poll_s`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            fut: asyncio.Future[None] = loop.create_future()
            unwatch = await self._watch_board(board_id, fut, after_seq is not None)
            try:
                info = await self.board_info(board_id)
                left = deadline - loop.time()
                if info.status != BOARD_RUNNING or left <= 0 or self._closed:
                    return info
                if after_seq is not None and info.seq > after_seq:
                    return info
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, min(left, self._board_poll_s))
            finally:
                unwatch()

    # -- the hooks a backend supplies -------------------------------------------------------------
    async def _insert_board(self, new: NewBoard) -> BoardInfo:
        """Insert a prepared board and its start agenda (``BoardExists`` if the id is taken)."""
        raise NotImplementedError

    async def _list_boards(self, status: BoardStatus | None) -> list[BoardInfo]:
        """Every board (in ``status`` when given), oldest first."""
        raise NotImplementedError

    async def _set_status(self, board_id: str, status: BoardStatus, reason: str | None) -> BoardInfo:
        """Set a board's (checked) status and reason."""
        raise NotImplementedError

    def _commit_append(self, job: NewRecord) -> Awaitable[tuple[int, Claim | None]]:
        """Write a prepared append in one transaction: the stored snapshot seq and the claim made
        with it. A plain method returning the awaitable, so the step path awaits the backend's
        commit directly, through no coroutine of its own."""
        raise NotImplementedError

    def _after_append(self, job: NewRecord) -> None:
        """Wake whoever the committed append concerns in this process (default: nobody)."""

    async def _read_records(self, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        """See Store.read_records."""
        raise NotImplementedError

    async def _load_board(self, board_id: str) -> LoadedBoard:
        """See Store.load_board (snapshots already settled)."""
        raise NotImplementedError

    async def _write_snapshot(self, board_id: str, at: Snapshot, blob: bytes) -> None:
        """Store ``blob`` as the snapshot at ``at``'s position (its ``state`` is not set) after
        checking that position against the logged record (``shared.check_logged``)."""
        raise NotImplementedError

    async def _push_invocations(self, board_id: str, rows: list[tuple[Invocation, bytes]]) -> list[str]:
        """See Store.push_invocations, the invocations encoded."""
        raise NotImplementedError

    async def _read_agenda(self, board_id: str, statuses: tuple[str, ...]) -> list[Invocation]:
        """See Store.agenda."""
        raise NotImplementedError

    async def _claim(self, board_id: str | None, req: ClaimRequest) -> Claim | None:
        """See Store.claim (``req.now`` is set)."""
        raise NotImplementedError

    async def _heartbeat(self, board_id: str, invocation_id: str, owner: str, until: float) -> None:
        """Extend the owner's lease to ``until`` (``LeaseLost`` when it is not the owner's)."""
        raise NotImplementedError

    async def _release_expired(self, now: float) -> int:
        """See Store.release_expired."""
        raise NotImplementedError

    async def _watch_board(self, board_id: str, fut: asyncio.Future[None], appends: bool) -> Callable[[], None]:
        """Have ``fut`` set when the board's status changes (and, with ``appends``, when it gets
        a record); returns what unregisters it. Default: no notes (``_board_poll_s`` polls)."""
        return _nothing


def _nothing() -> None:
    pass
