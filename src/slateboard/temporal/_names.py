"""What the workflow and its activities agree on: names, the workflow's input and its timeouts.

Standard library only: the workflow module imports this inside Temporal's sandbox, where every
import is re-run for each workflow, so it must stay small and free of slateboard's runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

WORKFLOW = "slateboard.board"
TEAM_WORKFLOW = "slateboard.team"
TEAM_ROUND = "slateboard.team_round"
PLAN = "slateboard.plan"
PROPOSE = "slateboard.propose"
COMMIT = "slateboard.commit"
INTERRUPT = "slateboard.interrupt"
FAIL = "slateboard.fail"
APPROVAL_SIGNAL = "approval"

DEFAULT_TASK_QUEUE = "slateboard"
DEFAULT_ADDRESS = "127.0.0.1:7233"
ADDRESS_ENV = "TEMPORAL_ADDRESS"

ENGINE_META = "engine"
"""The board meta key naming the engine that drives it (``{"name": "temporal", "task_queue": Q,
"address": HOST:PORT}``), so ``approve`` and ``cancel`` know where to reach its workflow."""

TEAM_META = "team"
"""The board meta key of a team's board on the engine: ``{"ref": "MODULE:NAME"}``, the team
each worker imports to play it (see ``TeamStart``)."""

UNUSABLE = "SlateboardBoardUnusable"
"""The error type of an activity that can never succeed for this board on this worker (a
version or blueprint mismatch, a board missing from the worker's store, a blueprint or worker
that cannot be built): not retried; the workflow ends the board failed with its message."""


def tenant_queue(task_queue: str, tenant: str | None) -> str:
    """The task queue a tenant's boards run on: ``QUEUE.TENANT`` (the queue itself without a
    tenant), so a tenant's workers never pick up another tenant's workflows, whose boards their
    scoped store cannot see."""
    return task_queue if not tenant else f"{task_queue}.{tenant}"


def workflow_id(board_id: str) -> str:
    """The Temporal workflow id of a board: one workflow per board, so a second start of the
    same board is refused by Temporal itself."""
    return f"slateboard-board-{board_id}"


@dataclass(frozen=True)
class BoardStart:
    """The workflow's input: the board and what the workers must match to run it (the
    slateboard version and the blueprint digest it was submitted with), and the activities'
    time limits in seconds. No store URL (it may hold a password, and Temporal's history keeps
    every input): each worker serves the one store it was started with."""

    board_id: str
    version: str
    digest: str
    worker_timeout_s: float = 120.0
    store_timeout_s: float = 30.0
    heartbeat_s: float = 10.0


@dataclass(frozen=True)
class TeamStart:
    """The team workflow's input: the board, the team each worker rebuilds (``team``:
    ``MODULE:NAME``, a ``Team`` or a zero-argument callable returning one, imported from the
    worker's ``sys.path``) and what the workers must match to play it (the slateboard version,
    and ``digest``: the team's board blueprint's, its problem left out). ``round_timeout_s``
    bounds one round (its model calls included); a round's activity heartbeats every
    ``heartbeat_s / 3`` seconds, so a dead worker's round is retried after ``heartbeat_s``."""

    board_id: str
    version: str
    team: str
    digest: str
    round_timeout_s: float = 600.0
    store_timeout_s: float = 30.0
    heartbeat_s: float = 10.0
