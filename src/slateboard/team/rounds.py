"""A team's run played from outside one process: the seam an engine (``slateboard.temporal``)
drives a ``Team`` through.

``create_team_board`` makes the run's board without playing it; ``play_rounds`` goes on with it
from what its store logged, starting at most a given number of new rounds, so that an engine can
make each round one retried, heartbeating unit of work on whichever process picks it up. Both go
through the same path as ``Team.run`` and ``Team.resume``: the board, its log and its end are
the ones a run in one process would give.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..kernel.canonical import JSON
from ..stores.base import Store
from ._run import RoundsYielded, _BlackboardRun
from ._team import Team, TeamResult

__all__ = ["RoundsYielded", "create_team_board", "play_rounds"]


async def create_team_board(team: Team, store: Store, prompt: str, meta: dict[str, JSON]) -> str:
    """Create ``team``'s board for ``prompt`` in ``store`` (``meta`` added to its meta) without
    playing any round; its id. TypeError when ``prompt`` is not a string."""
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
    return await _BlackboardRun(team, store, [], []).create(prompt, meta)


async def play_rounds(
    team: Team, store: Store, board_id: str, *, rounds: int, owner: str, started: datetime | None = None
) -> TeamResult | None:
    """``team.resume(board_id)`` on ``store`` that starts at most ``rounds`` new rounds (after
    finishing what a dead run left): None when it stopped before the next round (call again),
    else the run's result (the decider and the run-end record included). Claims are taken as
    ``owner``; the budget's seconds count from ``started`` (default: now). Raises what the run
    raises without marking the board failed: the engine decides what a failure ends."""

    async def go(run: _BlackboardRun) -> TeamResult:
        run.round_limit = max(0, rounds)
        run.owner = owner
        if started is not None:
            run.started -= max(0.0, (datetime.now(UTC) - started).total_seconds())
        return await run.resume(board_id)

    try:
        return await team._drive(go, None, store=store)
    except RoundsYielded:
        return None
