"""Timed batches on the engine (issue 43 with issue 40): a board whose batch waits for its timer
is not ended as agenda-empty; its workflow sleeps on a durable Temporal timer, the firing is a
logged ``timer`` record, and the batch's worker then runs."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from engine_testkit import serving
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

COMPOSE = Path(__file__).resolve().parent.parent / "compose"
if str(COMPOSE) not in sys.path:
    sys.path.insert(0, str(COMPOSE))

from compose_kit import shop  # noqa: E402

from slateboard.runtime import verify_board, wait  # noqa: E402
from slateboard.stores import Store  # noqa: E402
from slateboard.temporal import connect, submit_board  # noqa: E402

WAIT_S = 120.0


async def test_a_batch_fires_on_its_timer_on_the_engine(temporal_server: TemporalServer, store: Store) -> None:
    client = await connect(temporal_server.address)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    async with serving(temporal_server.address, store, queue):
        board = await submit_board(
            client, store, shop(0, alerts=3, batch={"size": 10, "seconds": 1.0}),
            address=temporal_server.address, task_queue=queue,
        )  # fmt: skip
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "agenda_empty"
    assert result.state["digests"] == [{"count": 3, "reason": "timer"}]
    timers = [r for r in await store.read_records(board) if r.kind == "timer"]
    assert len(timers) == 1 and timers[0].meta["rule"] == "digest"
    assert (await verify_board(store, board)).ok
