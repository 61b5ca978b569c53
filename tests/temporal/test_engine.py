"""Boards as Temporal workflows on a real dev server: a board submitted to the engine is run to
its end by workers, with the same log a single-process run writes."""

from __future__ import annotations

import uuid

import pytest
from engine_testkit import MODEL, NOTES_PAIR, serving
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

from slateboard.runtime import wait
from slateboard.stores import Store
from slateboard.temporal import connect, submit_board

WAIT_S = 120.0  # a safety net against a hang, far above the expected run time


async def test_a_submitted_board_runs_to_its_end_on_a_worker(temporal_server: TemporalServer, store: Store) -> None:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    client = await connect(temporal_server.address)
    async with serving(temporal_server.address, store, queue):
        board = await submit_board(
            client, store, NOTES_PAIR, address=temporal_server.address, task_queue=queue, task="t", model=MODEL
        )
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done"
    info = await store.board_info(board)
    assert info.status == "done"
