"""The transaction plumbing every backend shares: what a transaction read, turned into results
or errors, and the hand-back of a group-commit batch.

A backend keeps only what differs between drivers: how it reaches its database (SQLite: one
connection thread, ``BEGIN IMMEDIATE``; PostgreSQL: a pool in pipeline mode; memory: a lock),
its SQL and its error translation. Everything here is pure (no I/O) and runs inside the
backend's transaction, on rows the backend fetched, so all three raise the same errors with
the same words for the same situation (the conformance suite holds them to it):

- rows to values: ``board_info``, ``snapshot_of``, ``snapshot_source``, ``records_from``,
  ``invocations_from``, ``claim_from``, ``loaded_board``;
- verdicts: ``closed`` (a call on a closed store), ``check_status`` (a board status), ``check_schema`` (the stored schema version),
  ``check_logged`` (a snapshot against its record), ``check_complete`` / ``check_cancel`` /
  ``check_requeue`` (an agenda change against the invocation's stored status);
- group commit: ``Outcome`` (what one write of a batch ended with) and ``deliver`` (hand the
  outcomes to the callers waiting on them, once the batch's transaction is over); the
  backends' drain loops differ (a thread running sync calls, a task awaiting a pipeline) but
  keep one contract: each write of a batch in its own savepoint when the batch holds several,
  every caller answered only after the commit, a failed transaction failing every write in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from ..kernel.record import Record
from ..scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from . import _common as c
from ._snapshots import SnapshotSource
from .base import (
    BOARD_STATUSES,
    AgendaChanges,
    AgendaError,
    BoardInfo,
    Claim,
    Conflict,
    DuplicateInvocationCommit,
    LoadedBoard,
    SchemaTooNew,
    Snapshot,
    StoreCorrupt,
    StoreError,
)
from .migrations import SCHEMA_VERSION

LIVE = (PENDING, CLAIMED)
"""The statuses of invocations that are still to run (claims and agenda reads walk only these)."""

Outcome = tuple[bool, Any]
"""What one write of a group-commit batch ended with: ``(True, result)`` or ``(False, error)``."""


# -- rows to values --------------------------------------------------------------------------------
def board_info(row: Sequence[Any], where: str) -> BoardInfo:
    """A board header from its row (the columns of ``_sql.BOARD_COLS``, in order)."""
    meta = c.decode_json(row[9], f"{where} board {row[0]}")
    return BoardInfo(
        row[0],
        row[1],
        row[2],
        row[3],
        float(row[4]),
        float(row[5]),
        int(row[6]),
        int(row[7]),
        row[8],
        meta if isinstance(meta, dict) else {},
    )


def snapshot_of(row: Sequence[Any] | None, where: str) -> Snapshot | None:
    """The decoded snapshot of a snapshot row (``_sql.SNAPSHOT_COLS``), None for no row."""
    if row is None:
        return None
    return Snapshot(c.decode_json(row[4], where), int(row[1]), int(row[0]), row[2], row[3])


def snapshot_source(
    initial: bytes | memoryview, snapshot: Sequence[Any] | None, records: Iterable[Sequence[Any]]
) -> SnapshotSource:
    """The raw material of a background snapshot: the board's initial state blob, its snapshot
    row (``_sql.SNAPSHOT_COLS``) if any, and ``(seq, data)`` record rows after it."""
    snap = None
    if snapshot is not None:
        snap = (bytes(snapshot[4]), int(snapshot[1]), int(snapshot[0]), snapshot[2], snapshot[3])
    return SnapshotSource(snap, bytes(initial), [(int(s), bytes(d)) for s, d in records])


def records_from(rows: Iterable[Sequence[Any]], from_seq: int, where: str) -> list[Record]:
    """Decode ``(seq, data)`` rows read from ``from_seq`` on; ``StoreCorrupt`` at a gap (the log
    of a board has every seq from 1 to its last)."""
    out = [c.decode_record(data, where, int(seq)) for seq, data in rows]
    expected = max(from_seq, 1)
    for rec in out:
        if rec.seq != expected:
            raise StoreCorrupt(where, f"record {expected} is missing from the log")
        expected += 1
    return out


def invocations_from(rows: Iterable[Sequence[Any]], where: str) -> list[Invocation]:
    """Decode ``(data, status, attempts)`` invocation rows (the columns win over the blob)."""
    return [c.decode_invocation(d, s, int(a), where) for d, s, a in rows]


def claim_from(row: Sequence[Any], owner: str, until: float, where: str) -> Claim:
    """The claim a claiming statement returned: ``(board_id, data, attempts, claims)``."""
    inv = c.decode_invocation(row[1], CLAIMED, int(row[2]), f"{where} board {row[0]}")
    return Claim(row[0], inv, owner, until, int(row[3]))


def loaded_board(
    info: BoardInfo,
    blueprint: bytes | memoryview,
    initial: bytes | memoryview,
    snapshot: Snapshot | None,
    records: list[Record],
    agenda: Sequence[Invocation],
    where: str,
) -> LoadedBoard:
    """A loaded board from what one read transaction found; ``StoreCorrupt`` when the log ends
    before the header's last seq or the blueprint is not an object."""
    if (records[-1].seq if records else snapshot.seq if snapshot else 0) != info.seq:
        raise StoreCorrupt(where, f"the log ends before record {info.seq}")
    spec = c.decode_json(blueprint, where)
    if not isinstance(spec, dict):
        raise StoreCorrupt(where, "the stored blueprint is not an object")
    return LoadedBoard(
        info,
        spec,
        c.decode_json(initial, where),
        snapshot,
        records,
        [i for i in agenda if i.status == PENDING],
        [i for i in agenda if i.status == CLAIMED],
    )


# -- verdicts --------------------------------------------------------------------------------------
def closed(where: str) -> StoreError:
    """The error of a call on a closed store."""
    return StoreError(f"{where}: the store is closed")


def check_status(status: str) -> None:
    """``StoreError`` unless ``status`` is a board status."""
    if status not in BOARD_STATUSES:
        raise StoreError(f"unknown board status {status!r} (one of {', '.join(BOARD_STATUSES)})")


def check_schema(current: int, where: str) -> None:
    """``SchemaTooNew`` when the stored schema is newer than this slateboard knows."""
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{where}: written by a newer slateboard (schema version {current}, this version knows "
            f"up to {SCHEMA_VERSION}); upgrade slateboard to open it"
        )


def check_logged(board_id: str, logged: Record, *, version: int, last_hash: str, state_hash: str) -> None:
    """``Conflict`` unless a snapshot's position is the logged record at its seq."""
    if logged.hash != last_hash or logged.version != version or logged.state_after != state_hash:
        raise Conflict(board_id, f"snapshot at record {logged.seq} does not match the logged record")


def check_complete(board_id: str, inv_id: str, status: str | None, done_seq: int | None) -> None:
    """Raise why an invocation that is not live (``status``: its stored one, None when there is
    no such invocation) cannot be completed: already done, or cancelled, or unknown."""
    if status == DONE:
        raise DuplicateInvocationCommit(board_id, inv_id, done_seq)
    if status is None:
        raise AgendaError(f"board {board_id}: cannot complete unknown invocation {inv_id!r}")
    raise AgendaError(f"board {board_id}: cannot complete {status} invocation {inv_id!r}")


def check_cancel(board_id: str, inv_id: str, status: str | None) -> bool:
    """Whether cancelling an invocation with stored ``status`` changes it (a live one); an
    unknown one (None) is an ``AgendaError``."""
    if status is None:
        raise AgendaError(f"board {board_id}: cannot cancel unknown invocation {inv_id!r}")
    return status in LIVE


def check_requeue(board_id: str, inv_id: str, status: str | None, changes: AgendaChanges) -> None:
    """``AgendaError`` unless an invocation with stored ``status`` may be re-queued: it exists,
    and is live or completed by the same append."""
    if status is None:
        raise AgendaError(f"board {board_id}: cannot re-queue unknown invocation {inv_id!r}")
    if status in (DONE, CANCELLED) and inv_id not in changes.complete:
        raise AgendaError(f"board {board_id}: cannot re-queue {status} invocation {inv_id!r}")


# -- group commit ----------------------------------------------------------------------------------
def deliver(items: Iterable[tuple[asyncio.Future[Any], Outcome]]) -> None:
    """Answer each waiting caller with its write's outcome (call on the futures' loop; a caller
    that gave up, its future done, is skipped)."""
    for fut, (ok, value) in items:
        if fut.done():
            continue
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)
