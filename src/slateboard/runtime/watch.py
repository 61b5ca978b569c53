"""Follow a board's log from any process: ``watch`` yields its records in ``seq`` order.

The log is the one source of truth, so a watcher only reads it: each round reads the board's
header, then every record after the last ``seq`` seen. Reading the header *before* the records
is what makes the end exact: the runtime sets a board's final status only after its last append,
so when a header that is no longer ``running`` is followed by an empty read, nothing more will
come. Resuming from any ``seq`` loses and repeats nothing, because ``seq`` is the log position.

Between rounds the watcher waits up to ``poll`` seconds in ``wait_for_change``: the store's
``wait_for_board(after_seq=...)`` where it has one, which returns as soon as the board gets a
record or ends (PostgreSQL: ``LISTEN``, notified by every append and status change in their
transactions; memory: woken in process; SQLite: its own 50 ms header reads, as another process
may write the file). A store without it is read again every ``poll`` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..errors import InvalidInput
from ..kernel.record import Record
from ..stores.base import Store, StoreCorrupt, WatchesBoards, supports
from ..vocabulary import BOARD_RUNNING

__all__ = ["WatchPastEnd", "wait_for_change", "watch"]

DEFAULT_POLL_S = 0.1
"""Seconds between two reads of a running board that had nothing new."""


class WatchPastEnd(InvalidInput):
    """``after`` names a seq the board's log does not have (below 0 or past its last record)."""

    def __init__(self, board_id: str, after: int, last_seq: int) -> None:
        super().__init__(f"--after {after} is outside board {board_id}'s log (it runs from seq 0 to {last_seq})")
        self.board_id = board_id
        self.after = after
        self.last_seq = last_seq


async def watch(
    store: Store,
    board_id: str,
    *,
    after: int = 0,
    poll: float = DEFAULT_POLL_S,
    follow: bool = True,
) -> AsyncIterator[Record]:
    """Yield the records of ``board_id`` with ``seq > after``, in ``seq`` order, each once.

    With ``follow`` (the default) it keeps waiting for new records while the board is
    ``running`` and stops once the board is no longer running and its log is read to the end;
    without it, it stops at the end of the log as it is now. Raises BoardNotFound for an
    unknown board and WatchPastEnd when ``after`` is below 0 or past the log's last seq.
    """
    if poll <= 0:
        raise InvalidInput(f"poll must be a positive number of seconds, got {poll!r}")
    info = await store.board_info(board_id)
    if after < 0 or after > info.seq:
        raise WatchPastEnd(board_id, after, info.seq)
    last = after
    while True:
        info = await store.board_info(board_id)
        records = await store.read_records(board_id, last + 1)
        for record in records:
            if record.seq != last + 1:  # the log is gap-free; a hole means a broken store
                raise StoreCorrupt(f"board {board_id}", f"record seq {record.seq} follows seq {last}")
            last = record.seq
            yield record
        if records:
            continue
        if info.status != BOARD_RUNNING or not follow:
            return
        await wait_for_change(store, board_id, last, poll)


async def wait_for_change(store: Store, board_id: str, after_seq: int, timeout: float) -> None:
    """Return once ``board_id`` may have a record past ``after_seq`` or a new status, or after
    ``timeout`` seconds: early through the store's own wake-up (``WatchesBoards``), else after
    the whole ``timeout``. The caller reads the board again: a return promises nothing."""
    if isinstance(store, WatchesBoards) and supports(store, WatchesBoards):
        await store.wait_for_board(board_id, timeout, after_seq=after_seq)
    else:
        await asyncio.sleep(timeout)
