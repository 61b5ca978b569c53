"""The team workflow's activity: one round of a team's board, played where a worker runs.

``round`` rebuilds the board's team from its reference (once per process), checks it is the
team the board was submitted with, catches up from the store and plays at most one new round
through ``Team.resume``'s path (after finishing what a dead attempt left: a turn claimed but not
committed is taken over, never played twice, since every committed step is in the log); after
the last round the same call runs the decider and appends the run-end record. It heartbeats
while it runs, so a worker that dies is noticed within the heartbeat timeout and the round
retried on another one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from temporalio import activity

from .. import __version__
from ..kernel.canonical import JSON
from ..runtime.board_cache import import_from
from ..runtime.boards import RunnerError, status_for
from ..status import INTERRUPTED
from ..stores.base import BoardNotFound, Store, StoreError
from ..team import ResumeError, Team
from ..team.rounds import play_rounds
from ..vocabulary import BOARD_RUNNING
from ._names import TEAM_ROUND, TeamStart
from .activities import _heartbeat, _unusable
from .teams import TeamRefError, import_team, team_digest

log = logging.getLogger("slateboard.temporal")

__all__ = ["TeamActivities"]

BLUEPRINT_DIR = "blueprint_dir"
"""The board meta key of the directory the board was submitted from (``slateboard submit``
records it): a worker started with ``import_blueprint_dirs`` imports the team from there too."""

RETRIED = (StoreError, RunnerError, OSError, TimeoutError)
"""What a round may raise and a retry may cure (the store, the network, a lease not yet free);
anything else a team raises is its own fault and fails the board, named, instead of looping."""


class TeamActivities:
    """The activity one Temporal worker process serves for every team board of ``store``.

    Teams are imported once per process and reference (``teams``, a cache). ``log_line``
    receives one line per round played and per board end; ``import_blueprint_dirs`` imports a
    team from the directory its board was submitted from (as ``slateboard worker`` does)."""

    def __init__(
        self,
        store: Store,
        *,
        import_blueprint_dirs: bool = False,
        log_line: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.import_blueprint_dirs = import_blueprint_dirs
        self.log_line = log_line or (lambda line: log.info("%s", line))
        self.teams: dict[str, tuple[Team, str]] = {}
        """Each imported team and its board blueprint's digest, by reference."""

    def all(self) -> list[Callable[..., object]]:
        """The activity callables to register with a Temporal worker (the team workflow also
        calls ``BoardActivities``' ``interrupt`` and ``fail``: register both)."""
        return [self.round]

    def team(self, ref: str) -> tuple[Team, str]:
        """The team ``ref`` names and its digest (``team_digest`` of its board blueprint),
        imported on first use; TeamRefError when it cannot be."""
        found = self.teams.get(ref)
        if found is None:
            team = import_team(ref)
            found = self.teams[ref] = (team, team_digest(team.board_spec()))
        return found

    @activity.defn(name=TEAM_ROUND)
    async def round(self, start: TeamStart, started_at: str) -> dict[str, JSON]:
        """Play at most one round of the board (see the module docstring): ``ended`` None when
        the board goes on, else its end reason and ``status`` (``paused`` for an entry awaiting
        approval: the workflow waits for the approval signal); ``rounds`` played so far."""
        board = start.board_id
        if start.version != __version__:
            raise _unusable(
                f"this worker runs slateboard {__version__}, board {board} was submitted with"
                f" slateboard {start.version}: serve it with workers of {start.version}"
            )
        try:
            info = await self.store.board_info(board)
        except BoardNotFound:
            raise _unusable(
                f"board {board} is not in this worker's store ({self.store.url}):"
                " start workers with the store the board was submitted to"
            ) from None
        if self.import_blueprint_dirs:
            import_from(info.meta.get(BLUEPRINT_DIR))
        try:
            team, digest = self.team(start.team)
        except TeamRefError as exc:
            raise _unusable(f"cannot run board {board}: {exc}") from None
        if digest != start.digest:
            raise _unusable(
                f"board {board}'s team {start.team} on this worker has board blueprint digest {digest[:12]},"
                f" the board was submitted with digest {start.digest[:12]}: serve it with the team it was made by"
            )
        if info.status == BOARD_RUNNING and info.reason == INTERRUPTED:
            await self.store.set_status(board, BOARD_RUNNING, None)  # a resumed workflow: no longer interrupted
        beat = asyncio.create_task(_heartbeat(start.heartbeat_s / 3))
        try:
            result = await play_rounds(
                team,
                self.store,
                board,
                rounds=1,
                owner=f"temporal:{activity.info().workflow_id}",
                started=datetime.fromisoformat(started_at).astimezone(UTC),
            )
        except ResumeError as exc:
            raise _unusable(f"cannot run board {board}: {exc}") from None
        except RETRIED:
            raise
        except Exception as exc:
            raise _unusable(f"board {board}'s team {start.team} raised {type(exc).__name__}: {exc}") from None
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if result is None:
            self.log_line(f"board {board}: a round played (team {start.team})")
            return {"ended": None, "status": None}
        self.log_line(f"board {board} ended: {result.end_reason} ({result.rounds} rounds, team {start.team})")
        return {"ended": result.end_reason, "status": status_for(result.end_reason), "rounds": result.rounds}
