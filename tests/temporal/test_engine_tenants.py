"""Tenants on the engine (issue 44 with issue 40): a tenant's boards run on the tenant's own task
queue, served by workers scoped to that tenant; another tenant's worker never picks them up (it
could not see their boards) and never touches them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from engine_testkit import MODEL, NOTES_PAIR
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")


from slateboard.runtime import wait
from slateboard.stores import BoardNotFound, open_store
from slateboard.stores.tenancy import tenant_registry
from slateboard.temporal import BoardWorker, connect, submit_board

WAIT_S = 120.0


async def test_each_tenant_runs_on_its_own_queue_and_never_sees_the_others(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    shared = await open_store(url)
    for tenant in ("acme", "globex"):
        await tenant_registry(shared).add(tenant)
    acme, globex = await open_store(url, tenant="acme"), await open_store(url, tenant="globex")
    queue = f"q-{uuid.uuid4().hex[:8]}"
    try:
        client = await connect(temporal_server.address)
        board = await submit_board(client, acme, NOTES_PAIR, address=temporal_server.address, task_queue=queue,
                                   task="t", model=MODEL)  # fmt: skip
        info = await shared.board_info(board)
        assert info.meta["engine"]["task_queue"] == f"{queue}.acme"
        # Only globex's worker serves: acme's board waits, untouched (globex's queue is its own).
        worker = BoardWorker(await connect(temporal_server.address), globex, task_queue=queue, grace_s=2.0)
        assert worker.task_queue == f"{queue}.globex"
        serving = asyncio.create_task(worker.serve())
        await asyncio.sleep(3.0)
        assert (await shared.board_info(board)).seq == 0
        with pytest.raises(BoardNotFound):
            await globex.board_info(board)
        worker.stop()
        await serving
        # acme's own worker finishes it.
        mine = BoardWorker(await connect(temporal_server.address), acme, task_queue=queue, grace_s=2.0)
        task = asyncio.create_task(mine.serve())
        result = await wait(acme, board, timeout=WAIT_S)
        mine.stop()
        await task
        assert result.end_reason == "done"
    finally:
        for st in (acme, globex, shared):
            await st.close()
