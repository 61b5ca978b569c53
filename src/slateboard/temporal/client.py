"""Talking to Temporal: connect, start a board's workflow, signal an approval, cancel a board;
submit a team's board and read its result.

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
from ..runtime.boards import ends_run
from ..runtime.distributed import WaitTimeout, submit, wait
from ..stores import open_store
from ..stores.base import Store
from ..team import Team, TeamResult
from ..team.rounds import create_team_board, play_rounds
from ..vocabulary import BOARD_PAUSED
from ._names import (
    ADDRESS_ENV,
    APPROVAL_SIGNAL,
    DEFAULT_ADDRESS,
    DEFAULT_TASK_QUEUE,
    ENGINE_META,
    TEAM_META,
    TEAM_WORKFLOW,
    WORKFLOW,
    BoardStart,
    TeamStart,
    tenant_queue,
    workflow_id,
)
from .teams import import_team, team_digest

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
    "submit_team",
    "team_result",
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


async def stored_start(store: Store, board_id: str, *, worker_timeout: float = 120.0) -> BoardStart | TeamStart:
    """The workflow input for a stored board, bound to this slateboard version and to the
    digest of the blueprint the store holds for it (what every worker compiles and checks); a
    ``TeamStart`` for a team's board (its meta names the team: ``submit_team``), whose digest
    is ``teams.team_digest`` of the stored blueprint."""
    loaded = await store.load_board(board_id)
    team = loaded.info.meta.get(TEAM_META)
    if isinstance(team, dict) and isinstance(team.get("ref"), str):
        return TeamStart(board_id, __version__, team["ref"], team_digest(loaded.blueprint))
    digest = compile_blueprint(loaded.blueprint).digest
    return BoardStart(board_id, __version__, digest, worker_timeout_s=worker_timeout)


async def start_board(
    client: Client, start: BoardStart | TeamStart, *, task_queue: str = DEFAULT_TASK_QUEUE
) -> WorkflowHandle[Any, Any]:
    """Start the board's workflow (the team workflow for a ``TeamStart``). EngineError when a
    workflow of this board already runs (a board runs once at a time; its id is
    ``slateboard-board-<board>``, whatever its kind, so ``approve`` and ``cancel`` find it)."""
    try:
        return await client.start_workflow(
            TEAM_WORKFLOW if isinstance(start, TeamStart) else WORKFLOW,
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


async def submit_team(
    team: str,
    prompt: str,
    *,
    store: Store | str,
    address: str | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
    client: Client | None = None,
    meta: Mapping[str, JSON] | None = None,
) -> str:
    """Create the board of the team ``team`` names (``MODULE:NAME``: a ``Team``, or a
    zero-argument callable returning one; see ``teams.import_team``) for ``prompt`` in ``store``
    (a Store, or a URL opened and closed here) and start its team workflow on ``task_queue``
    (a tenant's store: ``QUEUE.TENANT``); returns the board id. Workers import the same
    reference and play it one round per activity; ``team_result`` waits for its result.

    The team is imported here first (TeamRefError, nothing created), then Temporal is reached
    (``address`` as in ``resolve_address``, unless ``client`` is given; EngineError, nothing
    created); a workflow that cannot be started deletes the board again."""
    built = import_team(team)
    where = resolve_address(address if client is None else address or client.service_client.config.target_host)
    client = client or await connect(where)
    opened = await open_store(store) if isinstance(store, str) else None
    st = opened or store
    assert not isinstance(st, str)
    try:
        queue = tenant_queue(task_queue, getattr(st, "tenant", None))
        engine: dict[str, JSON] = {"name": "temporal", "task_queue": queue, "address": where}
        board_id = await create_team_board(
            built, st, prompt, {**(meta or {}), ENGINE_META: engine, TEAM_META: {"ref": team}}
        )
        try:
            await start_board(client, await stored_start(st, board_id), task_queue=queue)
        except BaseException:
            await st.delete_board(board_id)
            raise
        return board_id
    finally:
        if opened is not None:
            await opened.close()


async def team_result(
    team: str | Team, board_id: str, *, store: Store | str, timeout: float | None = None
) -> TeamResult:
    """The ``TeamResult`` of a team's board on the engine, once its run has ended (as
    ``Team.run`` returns it; ``end_reason`` ``paused: ...`` while an entry awaits approval).
    ``team`` is the board's team or its reference; ``store`` a Store or a URL. Follows the board
    through the store (``runtime.wait``; WaitTimeout after ``timeout`` seconds) and appends
    nothing; EngineError when the board stopped without a run of its team ending (the engine
    failed it: the reason is the board's)."""
    built = import_team(team) if isinstance(team, str) else team
    opened = await open_store(store) if isinstance(store, str) else None
    st = opened or store
    assert not isinstance(st, str)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    try:
        while True:
            await wait(st, board_id, timeout=None if deadline is None else max(0.0, deadline - loop.time()))
            info = await st.board_info(board_id)
            records = await st.read_records(board_id, max(1, info.seq))
            if records and ends_run(records[-1]):
                played = await play_rounds(built, st, board_id, rounds=0, owner="team-result")
                assert played is not None  # an ended run: its result, nothing played
                return played
            if info.status != BOARD_PAUSED:
                raise EngineError(f"board {board_id} is {info.status} and no run of its team ended: {info.reason}")
            if deadline is not None and loop.time() >= deadline:
                raise WaitTimeout(board_id, timeout or 0.0, info)
            await asyncio.sleep(0.2)  # approved since it paused: the workflow plays on
    finally:
        if opened is not None:
            await opened.close()
