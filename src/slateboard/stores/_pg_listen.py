"""The PostgreSQL store's notifications: ``LISTEN`` connections that wake waiting coroutines.

Two channels per schema: ``slateboard_<schema>`` (new pending work: ``wait_for_work``) and
``sb_status_<schema>`` (``set_status`` sends the board id, every append ``+`` and the board id:
``wait_for_board``). Each has one dedicated connection per store object, outside the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import AsyncConnection

from . import _common as c
from . import _pg_statements as sql
from . import _tx as shared
from ._pg_connection import Conn, PostgresConnection
from ._sql import POSTGRES
from .base import StoreError

APPEND_NOTE = "+"
"""Prefix of the board id in the status channel's payload when the NOTIFY comes from an append."""


class PostgresListening(PostgresConnection):
    """``wait_for_work`` and the notes ``wait_for_board`` waits on."""

    async def _close_listeners(self) -> None:
        if self._status_task is not None and not self._status_task.done():
            self._status_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._status_task  # it closes its connection and wakes every waiter
        for listener in (self._listener, self._status_listener):
            if listener is not None:
                with contextlib.suppress(psycopg.Error):
                    await listener.close()
        self._listener = self._status_listener = None

    async def wait_for_work(self, timeout: float, *, worker_names: Sequence[str] | None = None) -> bool:
        """See Store.wait_for_work: ``LISTEN slateboard_<schema>`` on a dedicated connection.

        The connection stays listening between calls, so a notification sent while the caller
        was busy (claiming, say) is not lost: the next call returns at once. When the listening
        connection is (re)opened, work already there returns at once too: a pending invocation,
        or a claimed one whose lease expired, of a running board (of one of ``worker_names`` when
        given, so a runner that serves only some workers does not wake for work it cannot take).
        Notifications already received are consumed together: one wake-up per burst of commits.
        """
        if self._closed:
            return False
        async with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = await AsyncConnection.connect(self.dsn, autocommit=True)
                    await self._listener.execute(f'LISTEN "{self.channel}"')
                    if await self._claimable(worker_names):
                        return True
                woken = False
                async for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    woken = True
                if woken:
                    async for _ in self._listener.notifies(timeout=0):
                        pass
                return woken
            except StoreError:
                raise
            except psycopg.Error as exc:
                if self._listener is not None:
                    with contextlib.suppress(psycopg.Error):
                        await self._listener.close()
                    self._listener = None
                raise self._translate(exc) from None

    async def _claimable(self, worker_names: Sequence[str] | None) -> bool:
        terms = POSTGRES.claimable()
        params: list[Any] = [c.now()]
        if worker_names is not None:
            terms += " AND i.worker = ANY(%s)"
            params.append(list(worker_names))
        async with self._conn() as conn:
            cur = await conn.execute(sql.has_work(terms), params)
            return await cur.fetchone() is not None

    async def _watch_board(self, board_id: str, fut: asyncio.Future[None], appends: bool) -> Callable[[], None]:
        # One connection per store object listens on the status channel and wakes the waiters
        # of the board a note names, so any number of boards are waited on at once.
        await self._status_listening()
        entry = (fut, appends)
        waiting = self._board_waiters.setdefault(board_id, set())
        waiting.add(entry)

        def unwatch() -> None:
            waiting.discard(entry)
            if not waiting and self._board_waiters.get(board_id) is waiting:
                del self._board_waiters[board_id]

        return unwatch

    async def _status_listening(self) -> None:
        """Start the status channel's listener and its reader task unless they run."""
        if self._status_task is not None and not self._status_task.done():
            return
        async with self._status_lock:
            if self._status_task is not None and not self._status_task.done():
                return
            if self._closed:
                raise shared.closed(self._where)
            try:
                conn = await AsyncConnection.connect(self.dsn, autocommit=True)
                await conn.execute(f'LISTEN "{self.status_channel}"')
            except psycopg.Error as exc:
                raise self._translate(exc) from None
            self._status_listener = conn
            self._status_task = asyncio.get_running_loop().create_task(self._status_reader(conn))

    async def _status_reader(self, conn: Conn) -> None:
        """Wake the waiters of each board the status channel names (appends: only those that
        asked for them); on any end (an error, ``close``) wake every waiter: each reads its
        board again and the next wait starts a new listener."""
        try:
            async for note in conn.notifies():
                payload = note.payload
                self._wake_board(payload, appends_only=False)
                if payload.startswith(APPEND_NOTE):
                    self._wake_board(payload[len(APPEND_NOTE) :], appends_only=True)
        except (psycopg.Error, asyncio.CancelledError):
            pass
        finally:
            if self._status_listener is conn:
                self._status_listener = None
            with contextlib.suppress(psycopg.Error):
                await conn.close()
            for board_id in list(self._board_waiters):
                self._wake_board(board_id, appends_only=False)

    def _wake_board(self, board_id: str, *, appends_only: bool) -> None:
        for fut, wants_appends in list(self._board_waiters.get(board_id, ())):
            if (wants_appends or not appends_only) and not fut.done():
                fut.set_result(None)
