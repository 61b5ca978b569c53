"""Talking to Temporal: connect, start a board's workflow, signal an approval, cancel a board.

Every function here fails with ``EngineError`` naming the address (or the board) and what went
wrong, in one line: the CLI prints it and exits 2.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from .. import __version__
from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..runtime.distributed import submit
from ..stores.base import Store
from ._names import (
    ADDRESS_ENV,
    APPROVAL_SIGNAL,
    DEFAULT_ADDRESS,
    DEFAULT_TASK_QUEUE,
    ENGINE_META,
    WORKFLOW,
    BoardStart,
    tenant_queue,
    workflow_id,
)

__all__ = [
    "CONNECT_TIMEOUT_S",
    "ENGINE_META",
    "EngineError",
    "cancel_board",
    "connect",
    "resolve_address",
    "signal_approval",
    "start_board",
    "stored_start",
    "submit_board",
]

CONNECT_TIMEOUT_S = 10.0


class EngineError(InvalidInput):
    """Temporal cannot be reached, or refused what was asked of it (one line, names where)."""


def resolve_address(address: str | None) -> str:
    """``address``, else ``$TEMPORAL_ADDRESS``, else ``127.0.0.1:7233``; InvalidInput for one
    that is not HOST:PORT."""
    chosen = address or os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS
    host, sep, port = chosen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in chosen):
        raise EngineError(f"Temporal address {chosen!r}: expected HOST:PORT (e.g. {DEFAULT_ADDRESS})")
    return chosen


async def connect(
    address: str | None = None, *, namespace: str = "default", timeout: float = CONNECT_TIMEOUT_S
) -> Client:
    """A client of the Temporal server at ``address`` (see ``resolve_address``); EngineError
    naming the address when it does not answer within ``timeout`` seconds."""
    where = resolve_address(address)
    try:
        return await asyncio.wait_for(Client.connect(where, namespace=namespace), timeout)
    except (TimeoutError, RuntimeError, RPCError, OSError) as exc:
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise EngineError(f"cannot reach Temporal at {where}: {why}") from None


async def stored_start(store: Store, board_id: str, *, worker_timeout: float = 120.0) -> BoardStart:
    """The workflow input for a stored board, bound to this slateboard version and to the
    digest of the blueprint the store holds for it (what every worker compiles and checks)."""
    loaded = await store.load_board(board_id)
    digest = compile_blueprint(loaded.blueprint).digest
    return BoardStart(board_id, __version__, digest, worker_timeout_s=worker_timeout)


async def start_board(
    client: Client, start: BoardStart, *, task_queue: str = DEFAULT_TASK_QUEUE
) -> WorkflowHandle[Any, Any]:
    """Start the board's workflow. EngineError when a workflow of this board already runs (a
    board runs once at a time; its id is ``slateboard-board-<board>``)."""
    try:
        return await client.start_workflow(
            WORKFLOW,
            start,
            id=workflow_id(start.board_id),
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            execution_timeout=None,
            run_timeout=None,
            task_timeout=timedelta(seconds=10),
        )
    except WorkflowAlreadyStartedError:
        raise EngineError(
            f"board {start.board_id} already runs on Temporal (workflow {workflow_id(start.board_id)}):"
            " follow it with slateboard wait, or stop it with slateboard cancel"
        ) from None
    except RPCError as exc:
        raise EngineError(f"Temporal refused to start board {start.board_id}: {exc}") from None


async def submit_board(
    client: Client,
    store: Store,
    blueprint: CompiledBlueprint | dict[str, Any],
    *,
    address: str,
    task_queue: str = DEFAULT_TASK_QUEUE,
    worker_timeout: float = 120.0,
    meta: Mapping[str, JSON] | None = None,
    **board: Any,
) -> str:
    """Create a board (as ``runtime.submit``, whose keywords ``board`` takes) and start its
    workflow on ``task_queue`` (a tenant's store: the tenant's own queue, ``QUEUE.TENANT``);
    returns the board id. When the workflow cannot be started the
    board is deleted again (nothing ran) and EngineError raised."""
    compiled = blueprint if isinstance(blueprint, CompiledBlueprint) else compile_blueprint(blueprint)
    task_queue = tenant_queue(task_queue, getattr(store, "tenant", None))
    engine: dict[str, JSON] = {"name": "temporal", "task_queue": task_queue, "address": address}
    board_id = await submit(store, compiled, meta={**(meta or {}), ENGINE_META: engine}, **board)
    try:
        start = await stored_start(store, board_id, worker_timeout=worker_timeout)
        await start_board(client, start, task_queue=task_queue)
    except BaseException:
        await store.delete_board(board_id)
        raise
    return board_id


async def signal_approval(client: Client, board_id: str) -> None:
    """Tell the board's workflow a held proposal was decided (it plans again)."""
    try:
        await client.get_workflow_handle(workflow_id(board_id)).signal(APPROVAL_SIGNAL)
    except RPCError as exc:
        raise EngineError(f"cannot signal board {board_id}'s workflow: {exc}") from None


async def cancel_board(client: Client, board_id: str) -> None:
    """Cancel the board's workflow: it gives its claims back and leaves the board
    ``interrupted`` (resumable). EngineError when no workflow of the board runs."""
    try:
        await client.get_workflow_handle(workflow_id(board_id)).cancel()
    except RPCError as exc:
        raise EngineError(f"cannot cancel board {board_id} on Temporal: {exc}") from None
