"""The implementation base every backend shares: append/create prologues and snapshots.

A backend (memory, sqlite, postgresql) subclasses ``StoreBackend`` and supplies the storage
steps; the parts that were once written three times live here once:

- ``prepare_board`` / ``prepare_append``: the prologue of ``create_board`` and ``append``
  (checks that need no database, encoding of the record and of the invocations it pushes or
  re-queues), done before the call yields, so the caller may change its objects afterwards;
- ``finish_append``: turns what the transaction saw into an ``AppendResult`` and, when a
  snapshot is due and the caller opted in (``state`` given), schedules it off the commit path;
- background snapshots: built from the store's own previous snapshot and the log (raw blobs
  read by ``_snapshot_source``, decoded, replayed and encoded in a worker thread, stored by
  ``_put_snapshot`` without a flush of its own), one at a time per board; ``settle_snapshots``
  lets reads see every snapshot scheduled before them;
- commit counters (``commit_stats``) for the group-commit benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.record import GENESIS_META, Record, board_genesis
from ..scheduling.invocation import Invocation
from . import _common as c
from .base import AgendaChanges, AppendResult, Claim, ClaimRequest, CommitStats, Snapshot

log = logging.getLogger("slateboard.stores")


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
        return self.record.version - 1 if self.record.outcome == "accepted" else self.record.version

    def cas_args(self, now: float) -> tuple[Any, ...]:
        """The parameters of the SQL compare-and-set, in statement order: the board's new
        (version, last_seq, last_hash, updated_at), then what it must hold now (board_id,
        last_seq, last_hash, version)."""
        rec = self.record
        return (rec.version, rec.seq, rec.hash, now, self.board_id, rec.seq - 1, rec.prev, self.prev_version)


@dataclass(frozen=True, slots=True)
class SnapshotSource:
    """Raw material of a snapshot: the stored one (blob, version, seq, last hash, state hash) or
    None, the initial state's blob, and the record blobs after it up to the target seq."""

    snapshot: tuple[bytes, int, int, str, str] | None
    initial: bytes
    records: list[tuple[int, bytes]]


def build_snapshot_blob(where: str, src: SnapshotSource, compress: bool = True) -> tuple[Snapshot, bytes] | None:
    """Decode ``src``, replay its records and encode the result, compressed when ``compress``
    (CPU only: run in a thread)."""
    start = None
    if src.snapshot is not None:
        blob, version, seq, last_hash, state_hash = src.snapshot
        start = Snapshot(c.decode_json(blob, where), version, seq, last_hash, state_hash)
    initial = c.decode_json(src.initial, where) if start is None else None
    records = [c.decode_record(data, where, seq) for seq, data in src.records]
    snap = c.build_snapshot(where, start, initial, records, owned=True)  # both decoded just above
    if snap is None or snap is start:
        return None
    return snap, c.encode_json(snap.state, compress=compress)


SNAPSHOT_TAIL_RATIO = 1.0
"""A snapshot is due only once the log written since the board's last snapshot weighs at least
this fraction of that snapshot (stored bytes), besides ``snapshot_every`` records. Building a
snapshot costs O(state); with the log's weight as the trigger its cost per appended byte stays
constant however large the state grows (a fixed record count made it grow with the state), and
a load still replays no more log than about one snapshot's worth."""


class StoreBackend:
    """Shared implementation of the Store protocol's prologues and snapshot policy."""

    url: str
    snapshot_every: int
    compresses: bool = True
    """Whether blobs are deflated before they are stored. A durable store trades CPU for bytes
    on disk; the memory store keeps canonical JSON as is (nothing persists, and the bytes it
    returns on reads are the same either way: ``unpack`` leaves plain JSON alone)."""

    def _init_backend(self) -> None:
        self._snap_hint: dict[str, int] = {}
        # Per board: stored bytes of the last snapshot this process built, and of the records
        # appended since (the size-aware part of the snapshot policy; unknown after a restart,
        # when the record count alone decides until the next snapshot is built).
        self._snap_bytes: dict[str, int] = {}
        self._tail_bytes: dict[str, int] = {}
        self._snap_tasks: dict[str, asyncio.Task[None]] = {}
        self._snap_wanted: dict[str, int] = {}
        self._stats = [0, 0, 0]  # appends, flushes, batches

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
            [(inv, c.encode_invocation(inv, compress=self.compresses)) for inv in agenda],
        )

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
        zipped = self.compresses
        return NewRecord(
            board_id,
            record,
            c.pack_small(raw, c.DICT_RECORD) if zipped else raw,
            changes,
            [(inv, c.encode_invocation(inv, compress=zipped)) for inv in changes.push] if changes.push else [],
            [(inv, c.encode_invocation(inv, compress=zipped)) for inv in changes.requeue] if changes.requeue else [],
            expected_version,
            state is not None,
            claim,
        )

    def finish_append(self, job: NewRecord, stored_snapshot_seq: int, claim: Claim | None) -> AppendResult:
        """The result of a committed append; schedules its snapshot when one is due."""
        self._stats[0] += 1
        rec = job.record
        board = job.board_id
        last = max(stored_snapshot_seq, self._snap_hint.get(board, 0))
        tail = self._tail_bytes[board] = self._tail_bytes.get(board, 0) + len(job.data)
        outweighs = tail >= SNAPSHOT_TAIL_RATIO * self._snap_bytes.get(board, 0)
        due = outweighs and c.snapshot_due(rec.seq, last, self.snapshot_every)
        if due and job.keeps_snapshots:
            self._snap_hint[board] = rec.seq
            self._tail_bytes[board] = 0
            self._schedule_snapshot(board, rec.seq)
            return AppendResult(rec.seq, rec.version, True, False, claim)
        return AppendResult(rec.seq, rec.version, False, due, claim)

    def note_snapshot_seq(self, board_id: str, seq: int) -> None:
        """Remember the stored snapshot position of a board (read by a load)."""
        self._snap_hint[board_id] = max(seq, self._snap_hint.get(board_id, 0))

    def count_flush(self, *, batches: int = 1, flushes: int = 1) -> None:
        """Count transactions that carried appends, and those that waited for the disk."""
        self._stats[1] += flushes
        self._stats[2] += batches

    def commit_stats(self) -> CommitStats:
        """See ReportsCommits.commit_stats."""
        return CommitStats(*self._stats)

    # -- snapshots off the commit path -----------------------------------------------------------
    def _snapshot_where(self, board_id: str) -> str:
        return f"{c.redact(self.url)} board {board_id}"

    async def _snapshot_source(self, board_id: str, seq: int) -> SnapshotSource | None:
        """The stored snapshot and the record blobs after it up to ``seq`` (None: the board is
        gone, or its snapshot is already at ``seq`` or later)."""
        raise NotImplementedError

    async def _put_snapshot(self, board_id: str, snap: Snapshot, blob: bytes) -> None:
        """Store ``blob`` as the board's snapshot unless a newer one is stored (no flush needed:
        a snapshot lost to a crash is rebuilt from the log)."""
        raise NotImplementedError

    def _schedule_snapshot(self, board_id: str, seq: int) -> None:
        # One task per board builds up to the latest wanted position: snapshots scheduled while
        # one is being built collapse into the next one (only the latest is kept anyway).
        self._snap_wanted[board_id] = max(seq, self._snap_wanted.get(board_id, 0))
        if board_id in self._snap_tasks:
            return
        task = asyncio.get_running_loop().create_task(self._snapshot_job(board_id))
        self._snap_tasks[board_id] = task

    async def _snapshot_job(self, board_id: str) -> None:
        done = 0
        try:
            while (seq := self._snap_wanted.get(board_id, 0)) > done:
                done = seq
                try:
                    src = await self._snapshot_source(board_id, seq)
                    if src is None:
                        continue
                    built = await asyncio.to_thread(
                        build_snapshot_blob, self._snapshot_where(board_id), src, self.compresses
                    )
                    if built is not None:
                        await self._put_snapshot(board_id, *built)
                        self._snap_bytes[board_id] = len(built[1])
                except Exception as exc:
                    # The log is intact and complete; only the shortcut is missing (the next
                    # due snapshot, or compact, tries again).
                    log.warning("board %s: background snapshot at record %d not written: %s", board_id, seq, exc)
        finally:
            self._snap_tasks.pop(board_id, None)
            self._snap_wanted.pop(board_id, None)

    async def settle_snapshots(self, board_id: str | None = None) -> None:
        """Wait for the snapshots scheduled so far (of one board, or of all)."""
        tasks = list(self._snap_tasks.values()) if board_id is None else [self._snap_tasks.get(board_id)]
        for task in tasks:
            if task is not None and not task.done():
                with contextlib.suppress(BaseException):
                    await asyncio.shield(task)
