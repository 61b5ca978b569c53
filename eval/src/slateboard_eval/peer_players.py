"""The peer systems every evaluation suite can run, by name, in one table.

TextWorld (``slateboard_eval.textworld``) and the ScienceWorld/TextWorldExpress suite runner
(``slateboard_eval.suites``) both dispatch through ``PEER_PLAYERS``, so a baseline added here
plays in every suite under the same observation/admissible-command interface and budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Protocol

from .envs import TextEnvironment
from .textworld_langgraph import play_langgraph_supervisor
from .textworld_peers import PEER_SYSTEMS, CountingModel, PeerEpisode, play_langgraph_lean, play_loomflow

__all__ = ["PEER_PLAYERS", "PeerPlayer"]


class PeerPlayer(Protocol):
    """Plays one episode of ``env`` with ``model`` for at most ``max_commands`` commands."""

    def __call__(self, env: TextEnvironment, model: CountingModel, *, max_commands: int) -> Awaitable[PeerEpisode]: ...


PEER_PLAYERS: Mapping[str, PeerPlayer] = {
    "langgraph-lean": play_langgraph_lean,
    "langgraph": play_langgraph_supervisor,
    "loomflow": play_loomflow,
}
"""Every peer of ``PEER_SYSTEMS``, by name (same order)."""

assert tuple(PEER_PLAYERS) == PEER_SYSTEMS, "PEER_PLAYERS must name every peer system"
