"""Snapshots off the commit path, the same for every backend: when one is due, and its building.

A snapshot is built from the store's own previous snapshot and the log (raw blobs read by the
backend's ``_snapshot_source``, decoded, replayed and encoded in a worker thread, stored by its
``_put_snapshot`` without a flush of its own), one task at a time per board; ``settle_snapshots``
lets reads see every snapshot scheduled before them. A snapshot lost to a crash costs nothing
but the shortcut: the log is complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from . import _common as c
from .base import Snapshot

log = logging.getLogger("slateboard.stores")

SNAPSHOT_TAIL_RATIO = 1.0
"""A snapshot is due only once the log written since the board's last snapshot weighs at least
this fraction of that snapshot (stored bytes), besides ``snapshot_every`` records. Building a
snapshot costs O(state); with the log's weight as the trigger its cost per appended byte stays
constant however large the state grows (a fixed record count made it grow with the state), and
a load still replays no more log than about one snapshot's worth."""


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


class SnapshotKeeper:
    """The snapshot policy and the background builder; a backend supplies ``_snapshot_source``
    and ``_put_snapshot``."""

    url: str
    snapshot_every: int
    compresses: bool = True
    """Whether blobs are deflated before they are stored. A durable store trades CPU for bytes
    on disk; the memory store keeps canonical JSON as is (nothing persists, and the bytes it
    returns on reads are the same either way: ``unpack`` leaves plain JSON alone)."""

    def _init_snapshots(self) -> None:
        self._snap_hint: dict[str, int] = {}
        # Per board: stored bytes of the last snapshot this process built, and of the records
        # appended since (the size-aware part of the snapshot policy; unknown after a restart,
        # when the record count alone decides until the next snapshot is built).
        self._snap_bytes: dict[str, int] = {}
        self._tail_bytes: dict[str, int] = {}
        self._snap_tasks: dict[str, asyncio.Task[None]] = {}
        self._snap_wanted: dict[str, int] = {}

    def snapshot_after(self, board_id: str, seq: int, size: int, stored_snapshot_seq: int, keeps: bool) -> bool:
        """Whether a snapshot is due after the record ``seq`` (``size`` stored bytes) just
        committed; when it is and the caller ``keeps`` snapshots (gave ``state``), it is
        scheduled here and its position remembered."""
        last = max(stored_snapshot_seq, self._snap_hint.get(board_id, 0))
        tail = self._tail_bytes[board_id] = self._tail_bytes.get(board_id, 0) + size
        outweighs = tail >= SNAPSHOT_TAIL_RATIO * self._snap_bytes.get(board_id, 0)
        due = outweighs and c.snapshot_due(seq, last, self.snapshot_every)
        if due and keeps:
            self._snap_hint[board_id] = seq
            self._tail_bytes[board_id] = 0
            self._schedule_snapshot(board_id, seq)
        return due

    def note_snapshot_seq(self, board_id: str, seq: int) -> None:
        """Remember the stored snapshot position of a board (read by a load)."""
        self._snap_hint[board_id] = max(seq, self._snap_hint.get(board_id, 0))

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
