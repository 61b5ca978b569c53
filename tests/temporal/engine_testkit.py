"""Helpers for the engine tests: the NOTES_PAIR blueprint and its scripted model (from
tests/scale), a private store per test, and in-process Temporal workers."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

SCALE = Path(__file__).resolve().parent.parent / "scale"
if str(SCALE) not in sys.path:
    sys.path.insert(0, str(SCALE))  # scale_models / scale_testkit, importable in worker subprocesses too

from scale_testkit import NOTES_PAIR  # noqa: E402

from slateboard.stores import Store  # noqa: E402
from slateboard.temporal import BoardWorker, connect  # noqa: E402

__all__ = ["MODEL", "NOTES_PAIR", "SCALE", "serving"]

MODEL = "python:scale_models:fixed_model"


@contextlib.asynccontextmanager
async def serving(address: str, store: Store, task_queue: str, count: int = 1) -> AsyncIterator[list[BoardWorker]]:
    """``count`` board workers in this process on ``task_queue``, stopped cleanly at the end."""
    # One client each: Temporal refuses two workers of one queue on one client.
    workers = [BoardWorker(await connect(address), store, task_queue=task_queue, grace_s=2.0) for _ in range(count)]
    tasks = [asyncio.create_task(w.serve()) for w in workers]
    try:
        yield workers
    finally:
        for w in workers:
            w.stop()
        await asyncio.gather(*tasks)
