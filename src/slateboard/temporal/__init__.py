"""Boards as durable Temporal workflows (the ``slateboard[temporal]`` extra).

``submit_board`` creates a board and starts its workflow; ``submit_team`` does the same for a
team's board (``Team.blackboard``, rebuilt on each worker from a ``MODULE:NAME`` reference) and
``team_result`` waits for its ``TeamResult``; ``BoardWorker`` serves workflows and
their activities for one store (start as many as you like, anywhere); ``slateboard wait`` (or
``runtime.wait``) follows a board to its end through the store, which stays the board's home.
See ``docs/past-one-machine.md``.
"""

from __future__ import annotations

try:
    import temporalio  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test in a bare venv
    raise ImportError("slateboard.temporal needs the temporal extra: pip install 'slateboard[temporal]'") from exc

from ._names import DEFAULT_TASK_QUEUE, BoardStart, TeamStart, workflow_id
from .activities import BoardActivities
from .client import (
    EngineError,
    cancel_board,
    connect,
    resolve_address,
    signal_approval,
    start_board,
    stored_start,
    submit_board,
    submit_team,
    team_result,
)
from .team_activities import TeamActivities
from .teams import TeamRefError
from .worker import BoardWorker
from .workflow import BoardWorkflow, TeamWorkflow

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "BoardActivities",
    "BoardStart",
    "BoardWorker",
    "BoardWorkflow",
    "EngineError",
    "TeamActivities",
    "TeamRefError",
    "TeamStart",
    "TeamWorkflow",
    "cancel_board",
    "connect",
    "resolve_address",
    "signal_approval",
    "start_board",
    "stored_start",
    "submit_board",
    "submit_team",
    "team_result",
    "workflow_id",
]
