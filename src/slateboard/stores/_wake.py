"""Waking the coroutines that wait on a store object, from any thread.

A store's waiters are futures of the event loops that wait (``wait_for_work``: set to True;
``wait_for_board``: set to None); a write that concerns them may run on another thread (SQLite's
connection thread, a memory store shared by threads), so each future is set on its own loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any


def set_true(fut: asyncio.Future[bool]) -> None:
    """Set ``fut`` to True unless it is done already (call on its loop)."""
    if not fut.done():
        fut.set_result(True)


def set_done(fut: asyncio.Future[None]) -> None:
    """Set ``fut`` to None unless it is done already (call on its loop)."""
    if not fut.done():
        fut.set_result(None)


def wake(waiters: Iterable[asyncio.Future[Any]], setter: Callable[[asyncio.Future[Any]], None] = set_true) -> None:
    """Set each waiting future with ``setter`` on its own loop (safe from any thread); futures
    already done are skipped."""
    for fut in list(waiters):
        if not fut.done():
            fut.get_loop().call_soon_threadsafe(setter, fut)
