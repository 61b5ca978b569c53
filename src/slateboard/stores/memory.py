"""In-process store for tests and throwaway boards (``memory://``).

Same guarantees as the durable backends except durability: everything lives in this process.
Values are kept in their encoded form (canonical JSON bytes, not deflated: nothing persists), so
callers never share objects with the store. Every method runs without yielding to the event loop
while it reads or writes, and a thread lock guards the data, so each call is atomic; an append
validates everything before it changes anything, so a failing append leaves no trace.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from mypy_extensions import mypyc_attr

from ..kernel.canonical import JSON
from ..kernel.record import GENESIS, Record
from ..scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from ..vocabulary import BOARD_RUNNING, BoardStatus
from . import _common as c
from . import _tx as shared
from ._snapshots import SnapshotSource
from ._wake import set_done, wake
from .backend import NewBoard, NewRecord, StoreBackend, claim_time
from .base import (
    DEFAULT_SNAPSHOT_EVERY,
    AgendaChanges,
    BoardExists,
    BoardInfo,
    BoardNotFound,
    Claim,
    ClaimRequest,
    Conflict,
    Lease,
    LeaseLost,
    LoadedBoard,
    ServesManyRunners,
    Snapshot,
    StoreError,
)


@dataclass(slots=True)
class _Inv:
    data: bytes
    key: str
    worker: str
    priority: int
    order: int
    created: int
    status: str
    attempts: int
    owner: str | None = None
    lease_until: float | None = None
    claims: int = 0
    done_seq: int | None = None


@dataclass(slots=True)
class _Board:
    board_id: str
    name: str
    blueprint: bytes
    initial: bytes
    meta: dict[str, JSON]
    created: int
    created_at: float
    updated_at: float
    status: BoardStatus = BOARD_RUNNING
    reason: str | None = None
    version: int = 0
    seq: int = 0
    last_hash: str = GENESIS
    records: list[bytes] = field(default_factory=list)
    snapshot: tuple[bytes, int, int, str, str] | None = None
    invs: dict[str, _Inv] = field(default_factory=dict)
    live: dict[str, _Inv] = field(default_factory=dict)
    """The pending and claimed invocations (claims and agenda reads walk only these)."""
    pending_keys: dict[str, str] = field(default_factory=dict)
    """key -> id of the pending invocation with that key (at most one per key)."""

    def set_status(self, inv_id: str, row: _Inv, status: str) -> None:
        """Move an invocation to ``status``, keeping the live set and the pending keys."""
        if row.status == PENDING and self.pending_keys.get(row.key) == inv_id:
            del self.pending_keys[row.key]
        row.status = status
        if status in (PENDING, CLAIMED):
            self.live[inv_id] = row
            if status == PENDING:
                self.pending_keys[row.key] = inv_id
        else:
            self.live.pop(inv_id, None)
            row.owner, row.lease_until = None, None

    def info(self) -> BoardInfo:
        return BoardInfo(
            self.board_id,
            self.name,
            self.status,
            self.reason,
            self.created_at,
            self.updated_at,
            self.version,
            self.seq,
            self.last_hash,
            dict(self.meta),
        )


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it; compiled too (hatch_build.py)
class MemoryStore(StoreBackend, ServesManyRunners):
    """A Store kept in process memory (see module docstring)."""

    compresses = False  # nothing persists: deflating would only cost CPU
    _commit_yields = False

    def __init__(self, url: str = "memory://", *, snapshot_every: int = DEFAULT_SNAPSHOT_EVERY) -> None:
        self._init_backend()
        self.url = url
        self.snapshot_every = snapshot_every
        self._where = "memory"
        self._boards: dict[str, _Board] = {}
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._waiters: set[asyncio.Future[bool]] = set()
        self._status_waiters: set[asyncio.Future[None]] = set()

    @classmethod
    def from_url(cls, url: str) -> MemoryStore:
        """Open ``memory://[?snapshot_every=N]``."""
        from urllib.parse import parse_qsl, urlsplit

        opts = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
        unknown = set(opts) - {"snapshot_every"}
        if unknown:
            raise StoreError(f"unknown memory store options: {', '.join(sorted(unknown))}")
        return cls(url, snapshot_every=c.int_option(opts, "snapshot_every", DEFAULT_SNAPSHOT_EVERY))

    async def close(self) -> None:
        """Drop the waiters; the data stays until the object is garbage."""
        await self.settle_snapshots()
        self._closed = True
        self._wake()
        self._wake_status()

    # -- boards ---------------------------------------------------------------------------------
    def _board(self, board_id: str) -> _Board:
        board = self._boards.get(board_id)
        if board is None:
            raise BoardNotFound(board_id)
        return board

    async def _insert_board(self, new: NewBoard) -> BoardInfo:
        meta_copy = c.decode_json(new.meta, "meta")
        assert isinstance(meta_copy, dict)
        with self._lock:
            if new.board_id in self._boards:
                raise BoardExists(new.board_id)
            t = c.now()
            board = _Board(new.board_id, new.name, new.blueprint, new.initial, meta_copy, next(self._counter), t, t)
            self._push(board, new.agenda)
            self._boards[new.board_id] = board
            info = board.info()
        if new.agenda:
            self._wake()
        return info

    async def board_info(self, board_id: str) -> BoardInfo:
        """See Store.board_info."""
        with self._lock:
            return self._board(board_id).info()

    async def _list_boards(self, status: BoardStatus | None) -> list[BoardInfo]:
        with self._lock:
            boards = sorted(self._boards.values(), key=lambda b: b.created)
            return [b.info() for b in boards if status is None or b.status == status]

    async def _set_status(self, board_id: str, status: BoardStatus, reason: str | None) -> BoardInfo:
        with self._lock:
            board = self._board(board_id)
            board.status, board.reason, board.updated_at = status, reason, c.now()
            info = board.info()
        if status == BOARD_RUNNING:
            self._wake()
        self._wake_status()
        return info

    async def delete_board(self, board_id: str) -> None:
        """See Store.delete_board."""
        with self._lock:
            self._boards.pop(board_id, None)

    # -- log --------------------------------------------------------------------------------------
    async def _commit_append(self, job: NewRecord) -> tuple[int, Claim | None]:
        # Nothing here yields: the append is atomic under the lock (see ``_commit_yields``).
        board_id, record, changes = job.board_id, job.record, job.changes
        with self._lock:
            board = self._board(board_id)
            c.check_position(
                board_id,
                record,
                last_seq=board.seq,
                last_hash=board.last_hash,
                version=board.version,
                expected_version=job.expected_version,
            )
            self._check_agenda(board, changes)
            # Everything is validated: apply.
            board.records.append(job.data)
            board.seq, board.last_hash, board.version = record.seq, record.hash, record.version
            board.updated_at = c.now()
            for inv_id in changes.complete:
                row = board.invs[inv_id]
                board.set_status(inv_id, row, DONE)
                row.done_seq = record.seq
            for inv_id in changes.cancel:
                row = board.invs[inv_id]
                if row.status in (PENDING, CLAIMED):
                    board.set_status(inv_id, row, CANCELLED)
            for inv, blob in job.requeues:
                self._requeue(board, inv, blob)
            self._push(board, job.pushes)
            got = self._claim_in(board, job.claim) if job.claim is not None else None
            snap_seq = board.snapshot[2] if board.snapshot else 0
            self.count_flush(flushes=0)
        return snap_seq, got

    def _after_append(self, job: NewRecord) -> None:
        if job.pushes or job.requeues:
            self._wake()
        # Watchers (``wait_for_board(after_seq=...)``) see the record at once, not a poll later.
        self._wake_status()

    def _claim_in(self, board: _Board, req: ClaimRequest) -> Claim | None:
        t = claim_time(req)
        workers = set(req.worker_names) if req.worker_names is not None else None
        best = self._best(board, t, workers, req.invocation_id)
        return None if best is None else self._lease(board, best[1], best[2], req.owner, t + req.lease_s)

    async def _snapshot_source(self, board_id: str, seq: int) -> SnapshotSource | None:
        with self._lock:
            board = self._boards.get(board_id)
            if board is None or seq > board.seq:
                return None
            snap = board.snapshot
            start = snap[2] if snap else 0
            if start >= seq:
                return None
            blobs = board.records[start:seq]
            return SnapshotSource(snap, board.initial, [(start + i + 1, b) for i, b in enumerate(blobs)])

    async def _put_snapshot(self, board_id: str, snap: Snapshot, blob: bytes) -> None:
        with self._lock:
            board = self._boards.get(board_id)
            if board is not None and (board.snapshot is None or board.snapshot[2] < snap.seq):
                board.snapshot = (blob, snap.version, snap.seq, snap.last_hash, snap.state_hash)

    @staticmethod
    def _check_agenda(board: _Board, changes: AgendaChanges) -> None:
        bid = board.board_id
        for inv_id in changes.complete:
            row = board.invs.get(inv_id)
            if row is None:
                shared.check_complete(bid, inv_id, None, None)
            elif row.status not in shared.LIVE:
                shared.check_complete(bid, inv_id, row.status, row.done_seq)
        for inv_id in changes.cancel:
            row = board.invs.get(inv_id)
            shared.check_cancel(bid, inv_id, None if row is None else row.status)
        for inv in changes.requeue:
            row = board.invs.get(inv.id)
            shared.check_requeue(bid, inv.id, None if row is None else row.status, changes)

    def _requeue(self, board: _Board, inv: Invocation, blob: bytes) -> None:
        row = board.invs[inv.id]
        holder = board.pending_keys.get(row.key)
        clash = holder is not None and holder != inv.id
        row.data, row.attempts, row.owner, row.lease_until = blob, inv.attempts, None, None
        board.set_status(inv.id, row, CANCELLED if clash else PENDING)

    def _push(self, board: _Board, rows: Sequence[tuple[Invocation, bytes]]) -> list[str]:
        added: list[str] = []
        for inv, blob in rows:
            if inv.id in board.invs or inv.key in board.pending_keys:
                continue
            row = _Inv(blob, inv.key, inv.worker, inv.priority, inv.order, next(self._counter), PENDING, inv.attempts)
            board.invs[inv.id] = row
            board.set_status(inv.id, row, PENDING)
            added.append(inv.id)
        return added

    async def _read_records(self, board_id: str, from_seq: int, limit: int | None) -> list[Record]:
        with self._lock:
            board = self._board(board_id)
            start = max(from_seq, 1) - 1
            stop = len(board.records) if limit is None else min(len(board.records), start + max(limit, 0))
            blobs = board.records[start:stop]
        return [c.decode_record(b, f"memory board {board_id}", start + i + 1) for i, b in enumerate(blobs)]

    async def _load_board(self, board_id: str) -> LoadedBoard:
        with self._lock:
            board = self._board(board_id)
            info = board.info()
            snap = board.snapshot
            start = snap[2] if snap else 0
            self.note_snapshot_seq(board_id, start)
            blobs = board.records[start:]
            invs = [(o.data, o.status, o.attempts) for o in board.live.values()]
            bp, init = board.blueprint, board.initial
        where = f"memory board {board_id}"
        snapshot = None
        if snap is not None:
            snapshot = Snapshot(c.decode_json(snap[0], where), snap[1], snap[2], snap[3], snap[4])
        records = [c.decode_record(b, where, start + i + 1) for i, b in enumerate(blobs)]
        agenda = sorted(shared.invocations_from(invs, where), key=c.agenda_sort_key)
        return shared.loaded_board(info, bp, init, snapshot, records, agenda, where)

    async def _write_snapshot(self, board_id: str, at: Snapshot, blob: bytes) -> None:
        seq = at.seq
        with self._lock:
            board = self._board(board_id)
            if seq < 1 or seq > board.seq:
                raise Conflict(board_id, f"snapshot at record {seq}, but the log ends at {board.seq}")
            rec = c.decode_record(board.records[seq - 1], f"memory board {board_id}", seq)
            shared.check_logged(board_id, rec, version=at.version, last_hash=at.last_hash, state_hash=at.state_hash)
            if board.snapshot is None or board.snapshot[2] < seq:
                board.snapshot = (blob, at.version, seq, at.last_hash, at.state_hash)

    # -- agenda -----------------------------------------------------------------------------------
    async def _push_invocations(self, board_id: str, rows: list[tuple[Invocation, bytes]]) -> list[str]:
        with self._lock:
            added = self._push(self._board(board_id), rows)
        if added:
            self._wake()
        return added

    async def _read_agenda(self, board_id: str, statuses: tuple[str, ...]) -> list[Invocation]:
        with self._lock:
            board = self._board(board_id)
            # Live statuses only: walk the live set, not the board's whole history.
            source = board.live if set(statuses) <= {PENDING, CLAIMED} else board.invs
            rows = [
                (o.data, o.status, o.attempts, o.priority, o.order, o.created)
                for o in source.values()
                if o.status in statuses
            ]
        rows.sort(key=lambda r: (-r[3], r[4], r[5]))
        return [c.decode_invocation(d, s, a, f"memory board {board_id}") for d, s, a, *_ in rows]

    async def leases(self, board_id: str) -> list[Lease]:
        """See ReportsLeases.leases."""
        with self._lock:
            board = self._board(board_id)
            return [
                Lease(inv_id, o.owner, o.lease_until)
                for inv_id, o in board.live.items()
                if o.status == CLAIMED and o.owner is not None and o.lease_until is not None
            ]

    async def _claim(self, board_id: str | None, req: ClaimRequest) -> Claim | None:
        # Walks the live invocations of running boards only.
        t = claim_time(req)
        workers = set(req.worker_names) if req.worker_names is not None else None
        with self._lock:
            if board_id is not None:
                boards = [self._board(board_id)]
            else:
                boards = sorted((b for b in self._boards.values() if b.live), key=lambda b: b.created)
            best: tuple[tuple[int, int, int], str, _Inv, _Board] | None = None
            for board in boards:
                if board.status != BOARD_RUNNING:
                    continue
                got = self._best(board, t, workers, req.invocation_id)
                if got is not None and (best is None or got[0] < best[0]):
                    best = (*got, board)
            if best is None:
                return None
            _, inv_id, row, board = best
            return self._lease(board, inv_id, row, req.owner, t + req.lease_s)

    @staticmethod
    def _best(
        board: _Board, t: float, workers: set[str] | None, invocation_id: str | None
    ) -> tuple[tuple[int, int, int], str, _Inv] | None:
        if board.status != BOARD_RUNNING:
            return None
        if invocation_id is not None:
            row = board.live.get(invocation_id)
            candidates = [] if row is None else [(invocation_id, row)]
        else:
            candidates = list(board.live.items())
        best: tuple[tuple[int, int, int], str, _Inv] | None = None
        for inv_id, row in candidates:
            eligible = row.status == PENDING or (row.lease_until is not None and row.lease_until <= t)
            if not eligible or (workers is not None and row.worker not in workers):
                continue
            key = (-row.priority, row.order, row.created)
            if best is None or key < best[0]:
                best = (key, inv_id, row)
        return best

    @staticmethod
    def _lease(board: _Board, inv_id: str, row: _Inv, owner: str, until: float) -> Claim:
        board.set_status(inv_id, row, CLAIMED)
        row.owner, row.lease_until = owner, until
        row.claims += 1
        inv = c.decode_invocation(row.data, CLAIMED, row.attempts, f"memory board {board.board_id}")
        return Claim(board.board_id, inv, owner, until, row.claims)

    async def _heartbeat(self, board_id: str, invocation_id: str, owner: str, until: float) -> None:
        with self._lock:
            row = self._board(board_id).invs.get(invocation_id)
            if row is None or row.status != CLAIMED or row.owner != owner:
                raise LeaseLost(f"board {board_id}: invocation {invocation_id!r} is not claimed by {owner!r}")
            row.lease_until = until

    async def _release_expired(self, now: float) -> int:
        t = now
        count = 0
        with self._lock:
            for board in self._boards.values():
                for inv_id, row in list(board.live.items()):
                    if row.status == CLAIMED and row.lease_until is not None and row.lease_until <= t:
                        inv = c.decode_invocation(row.data, row.status, row.attempts, f"memory board {board.board_id}")
                        self._requeue(board, replace(inv, id=inv_id), row.data)
                        count += 1
        if count:
            self._wake()
        return count

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See WatchesWork.wait_for_work (woken by pushes in this process; returns at once when
        claimable work of ``worker_names`` is already there)."""
        if self._closed:
            return False
        if worker_names is not None and self._claimable(set(worker_names)):
            return True
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return False
        finally:
            self._waiters.discard(fut)

    def _claimable(self, workers: set[str]) -> bool:
        t = c.now()
        with self._lock:
            for board in self._boards.values():
                if board.status == BOARD_RUNNING and self._best(board, t, workers, None) is not None:
                    return True
        return False

    async def _watch_board(self, board_id: str, fut: asyncio.Future[None], appends: bool) -> Callable[[], None]:
        # Woken by ``set_status`` and ``append`` in this process (of any board: it reads again).
        self._status_waiters.add(fut)
        return lambda: self._status_waiters.discard(fut)

    async def stalled_boards(self) -> list[str]:
        """See ScansStalledBoards.stalled_boards."""
        with self._lock:
            boards = sorted(self._boards.values(), key=lambda b: b.created)
            return [b.board_id for b in boards if b.status == BOARD_RUNNING and not b.live]

    def _wake(self) -> None:
        wake(self._waiters)

    def _wake_status(self) -> None:
        wake(self._status_waiters, set_done)
