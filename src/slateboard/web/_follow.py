"""How the dashboard's event streams wait for a board to change without each polling the store.

Every stream that follows one board shares one ``Waker``: one task waits on the store
(``runtime.watch.wait_for_change``, the store's own wake-up on appends and status changes) and
reads the header once per change, however many streams follow the board; the streams then read
the board themselves. ``Followers`` keeps those wakers.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..stores.base import BoardInfo, Store
from ..vocabulary import BOARD_RUNNING


def signature(info: BoardInfo) -> tuple[Any, ...]:
    """What a follower shows of a header: a change of any of it is worth an event."""
    return (info.status, info.reason, info.version, info.seq, info.updated_at)


@dataclass
class Waker:
    """The shared wait of one followed board: ``sig`` is the header it last saw, ``changed`` is
    set (and replaced, with a new ``generation``) whenever that changes, ``users`` counts the
    waiting streams."""

    generation: int
    sig: tuple[Any, ...]
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    users: int = 0
    task: asyncio.Task[None] | None = None

    def wake(self, generation: int) -> None:
        """Wake every waiting stream and start the next ``generation``."""
        self.generation = generation
        self.changed.set()
        self.changed = asyncio.Event()


class Followers:
    """The wakers of the boards some event stream follows now, one store waiter each (see the
    module docstring); ``poll_s`` bounds each wait, so a waker ends soon after its last stream."""

    def __init__(self, store: Store, poll_s: float) -> None:
        self.store = store
        self.poll_s = poll_s
        self._wakers: dict[str, Waker] = {}
        self._ticks = itertools.count()

    async def pause(self, stop: anyio.Event | None) -> bool:
        """Wait ``poll_s`` (less when ``stop`` is set meanwhile); True when it is time to stop."""
        if stop is None:
            await asyncio.sleep(self.poll_s)
            return False
        with anyio.move_on_after(self.poll_s):
            await stop.wait()
        return stop.is_set()

    def generation(self, board_id: str) -> int:
        """The board's waker generation now (-1 when none): taken before a follower reads the
        board, so a change seen by the waker after that read is never missed."""
        waker = self._wakers.get(board_id)
        return -1 if waker is None else waker.generation

    async def await_change(
        self, board_id: str, generation: int, shown: tuple[Any, ...], stop: anyio.Event | None
    ) -> bool:
        """Wait until the board's header changes (a record, a status, a deletion) or ``stop`` is
        set; True when it is time to stop. ``generation`` is ``generation`` from before the
        follower's last read and ``shown`` the header it read: it returns at once when the waker
        woke since. Every follower of one board shares one waker (``Waker``), so the store is
        waited on once per board, however many streams follow it."""
        waker = self._wakers.get(board_id)
        if waker is None:
            waker = self._wakers[board_id] = Waker(next(self._ticks), shown)
        if waker.generation != generation:
            return stop is not None and stop.is_set()
        changed = waker.changed
        waker.users += 1
        try:
            if waker.task is None or waker.task.done():
                waker.task = asyncio.get_running_loop().create_task(self._wake(board_id, waker))
            if stop is None:
                await changed.wait()
                return False
            async with anyio.create_task_group() as group:

                async def on_stop() -> None:
                    await stop.wait()
                    group.cancel_scope.cancel()

                group.start_soon(on_stop)
                await changed.wait()
                group.cancel_scope.cancel()
            return stop.is_set()
        finally:
            waker.users -= 1

    async def _wake(self, board_id: str, waker: Waker) -> None:
        """The one store waiter of a followed board: ``runtime.watch.wait_for_change`` (the
        store's own wake-up on appends and status changes; ``poll_s`` is only its timeout), then
        one header read; followers are woken when the header differs from the last one seen.
        Ends, within ``poll_s``, once no stream follows the board, or when the board cannot be
        read (the followers then read it themselves and report what they find)."""
        from ..runtime.watch import wait_for_change

        sig = waker.sig
        try:
            while waker.users > 0:
                if sig[0] == BOARD_RUNNING:
                    await wait_for_change(self.store, board_id, sig[3], self.poll_s)
                else:
                    # An ended board wakes nobody (a waiter would return at once): read it again
                    # now and then, in case it is resumed or deleted.
                    await asyncio.sleep(self.poll_s)
                now = signature(await self.store.board_info(board_id))
                if now != sig:
                    sig = waker.sig = now
                    waker.wake(next(self._ticks))
        except Exception:  # the followers read the board again and report what failed
            waker.wake(next(self._ticks))
        finally:
            if self._wakers.get(board_id) is waker:
                del self._wakers[board_id]
