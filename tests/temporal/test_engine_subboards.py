"""Sub-boards on the engine (issue 43 with issue 40): each child board of a sub-board worker runs
as a Temporal child workflow of its parent's, on the same workers; the parent proposes their
answers in item order, binds them in its record, and verifies with them."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from engine_testkit import serving
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

SUBBOARDS = Path(__file__).resolve().parent.parent / "subboards"
if str(SUBBOARDS) not in sys.path:
    sys.path.insert(0, str(SUBBOARDS))

from subboards_kit import parent_blueprint  # noqa: E402

from slateboard.runtime import verify_board, wait  # noqa: E402
from slateboard.runtime.children import PARENT_META  # noqa: E402
from slateboard.stores import Store  # noqa: E402
from slateboard.temporal import connect, submit_board, workflow_id  # noqa: E402

DOCS = ["alpha", "beta", "gamma", "delta"]
WAIT_S = 120.0


async def test_children_run_as_child_workflows_and_the_parent_joins_them(
    temporal_server: TemporalServer, store: Store
) -> None:
    client = await connect(temporal_server.address)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    async with serving(temporal_server.address, store, queue, count=2):
        board = await submit_board(
            client, store, parent_blueprint(DOCS, max_parallel=2), address=temporal_server.address, task_queue=queue
        )
        result = await wait(store, board, timeout=WAIT_S)
    assert result.end_reason == "done" and result.answer == [d.upper() for d in DOCS]
    children = [b for b in await store.list_boards() if (b.meta.get(PARENT_META) or {}).get("board") == board]
    assert len(children) == len(DOCS) and all(c.status == "done" for c in children)
    for child in children:
        described = await client.get_workflow_handle(workflow_id(child.board_id)).describe()
        assert described.parent_id == workflow_id(board)  # a child workflow of the parent's
        assert child.meta["engine"]["name"] == "temporal"
    report = await verify_board(store, board)
    assert report.ok, report.problem
