"""The TextWorld suite: every game of a seeded set, played by every system, on the same
interface, model and command budget (``slateboard eval textworld``).

Systems: ``slateboard`` (the text_actor template on a board: planner, admissible-constrained
actor, environment function worker, verifier), ``langgraph`` and ``loomflow`` (see
``slateboard.eval.textworld_peers``). Metrics, per system, as seed 000 (section 4.3) defines
them: success rate (games won / games), environment steps (commands executed), total tokens
(prompt + completion of every model call) and tokens per success (mean total tokens / success
rate; undefined without a success).

The model string ``walkthrough`` plays every system with a WalkthroughModel over the game being
played (it answers with the game's next winning command): with it every system must win every
game, which proves the harness rather than a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..envs import WALKTHROUGH_MODEL, WalkthroughModel, play_on_board
from ..envs.textworld import GameFile, TextWorldGame
from ..models import Model, resolve_model
from ..stores.base import Store
from .textworld_peers import PEER_SYSTEMS, CountingModel, PeerEpisode, missing_peer, play_langgraph, play_loomflow

__all__ = [
    "SYSTEMS",
    "EpisodeResult",
    "SuiteResult",
    "SystemSummary",
    "check_systems",
    "parse_systems",
    "run_suite",
]

SYSTEMS = ("slateboard", *PEER_SYSTEMS)


def parse_systems(text: str) -> list[str]:
    """The systems named in a comma-separated list, in order, without repeats; ValueError naming
    an unknown one (and the known ones) or an empty list."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip().lower()
        if not name:
            continue
        if name not in SYSTEMS:
            raise ValueError(f"unknown system {name!r} (systems: {', '.join(SYSTEMS)})")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(f"no system named (systems: {', '.join(SYSTEMS)})")
    return names


def check_systems(systems: Sequence[str]) -> None:
    """RuntimeError naming the first system whose package is not installed."""
    for system in systems:
        why = missing_peer(system)
        if why is not None:
            raise RuntimeError(why)


@dataclass(frozen=True, slots=True)
class EpisodeResult:
    """One game played by one system."""

    game: str
    system: str
    won: bool
    outcome: str
    commands: int
    walkthrough: int
    score: int
    max_score: int
    calls: int
    tokens_in: int
    tokens_out: int
    seconds: float
    board_id: str | None = None
    end_reason: str | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    trace: tuple[str, ...] = ()
    """The commands the environment executed, in order."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of the episode."""
        return self.tokens_in + self.tokens_out

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "game": self.game,
            "system": self.system,
            "won": self.won,
            "outcome": self.outcome,
            "commands": self.commands,
            "walkthrough": self.walkthrough,
            "score": self.score,
            "max_score": self.max_score,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "board_id": self.board_id,
            "end_reason": self.end_reason,
            "error": self.error,
            "notes": list(self.notes),
            "trace": list(self.trace),
        }


@dataclass(frozen=True, slots=True)
class SystemSummary:
    """A system's figures over the suite (seed 000's metrics)."""

    system: str
    games: int
    wins: int
    mean_commands: float
    total_tokens: int
    errors: int

    @property
    def success(self) -> float:
        """Games won / games played."""
        return self.wins / self.games if self.games else 0.0

    @property
    def mean_tokens(self) -> float:
        """Mean total tokens per episode."""
        return self.total_tokens / self.games if self.games else 0.0

    @property
    def tokens_per_success(self) -> float | None:
        """Mean total tokens / success rate (= total tokens / wins); None without a win."""
        return self.mean_tokens / self.success if self.wins else None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        tps = self.tokens_per_success
        return {
            "system": self.system,
            "games": self.games,
            "wins": self.wins,
            "success": round(self.success, 4),
            "mean_commands": round(self.mean_commands, 3),
            "total_tokens": self.total_tokens,
            "mean_tokens": round(self.mean_tokens, 1),
            "tokens_per_success": None if tps is None else round(tps, 1),
            "errors": self.errors,
        }


@dataclass
class SuiteResult:
    """Everything one suite run measured."""

    model: str
    steps: int
    seed: int
    systems: list[str]
    games: list[GameFile]
    episodes: list[EpisodeResult] = field(default_factory=list)
    seconds: float = 0.0

    def summaries(self) -> list[SystemSummary]:
        """One summary per system, in the order the systems were asked."""
        out = []
        for system in self.systems:
            eps = [e for e in self.episodes if e.system == system]
            out.append(
                SystemSummary(
                    system=system,
                    games=len(eps),
                    wins=sum(e.won for e in eps),
                    mean_commands=sum(e.commands for e in eps) / len(eps) if eps else 0.0,
                    total_tokens=sum(e.tokens for e in eps),
                    errors=sum(e.error is not None for e in eps),
                )
            )
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (``slateboard eval textworld --json``)."""
        return {
            "model": self.model,
            "steps": self.steps,
            "seed": self.seed,
            "systems": [s.to_json() for s in self.summaries()],
            "games": [g.to_json() for g in self.games],
            "episodes": [e.to_json() for e in self.episodes],
            "seconds": round(self.seconds, 3),
        }


async def run_suite(
    games: Sequence[GameFile],
    *,
    systems: Sequence[str],
    model: str | Model,
    steps: int,
    store: Store,
    seed: int = 0,
    on_episode: Callable[[EpisodeResult], None] | None = None,
) -> SuiteResult:
    """Play every game with every system (one fresh environment per episode) and measure.

    ``model`` is a model string (resolved once and shared; ``walkthrough`` for the walkthrough
    model) or a Model; ``steps`` the command budget of every episode; slateboard boards go to
    ``store`` (inspect them with ``slateboard log BOARD``). An episode that raises is recorded
    with its error (and counts as not won); the others still run.
    """
    if steps < 1:
        raise ValueError(f"the command budget (steps) must be >= 1, got {steps}")
    check_systems(systems)
    label = model if isinstance(model, str) else model.name
    shared: Model | None = None
    if not (isinstance(model, str) and model == WALKTHROUGH_MODEL):
        shared = resolve_model(model)
    suite = SuiteResult(label, steps, seed, list(systems), list(games))
    started = time.perf_counter()
    for game in games:
        for system in systems:
            result = await _episode(game, system, shared, steps, store)
            suite.episodes.append(result)
            if on_episode is not None:
                on_episode(result)
    suite.seconds = time.perf_counter() - started
    return suite


def _board_trace(state: Any) -> tuple[str, ...]:
    """The commands of a text_actor board that the environment answered."""
    if not isinstance(state, dict):
        return ()
    actions = state.get("actions") or []
    answered = len(state.get("observations") or [])
    return tuple(str(a.get("command", "")) for a in actions[:answered] if isinstance(a, dict))


async def _episode(game: GameFile, system: str, shared: Model | None, steps: int, store: Store) -> EpisodeResult:
    env = TextWorldGame(game.path, name=game.name)
    counting = CountingModel(shared if shared is not None else WalkthroughModel(env))
    started = time.perf_counter()
    base: dict[str, Any] = {"game": game.name, "system": system, "walkthrough": game.walkthrough}
    try:
        if system == "slateboard":
            ep = await play_on_board(env, store, model=counting, max_commands=steps, name=f"textworld {game.name}")
            usage = ep.result
            tokens_in = sum(u.tokens_in for u in usage.usage.values())
            tokens_out = sum(u.tokens_out for u in usage.usage.values())
            last = ep.last
            return EpisodeResult(
                **base,
                won=ep.won,
                outcome=ep.outcome,
                commands=ep.commands,
                score=last.score if last else 0,
                max_score=last.max_score if last else game.max_score,
                calls=counting.calls,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                seconds=time.perf_counter() - started,
                board_id=ep.result.board_id,
                end_reason=ep.result.end_reason,
                trace=_board_trace(ep.result.state),
            )
        peer: PeerEpisode
        if system == "langgraph":
            peer = await play_langgraph(env, counting, max_commands=steps)
        elif system == "loomflow":
            peer = await play_loomflow(env, counting, max_commands=steps)
        else:
            raise ValueError(f"unknown system {system!r}")
        return EpisodeResult(
            **base,
            won=peer.won,
            outcome=peer.outcome,
            commands=peer.commands,
            score=peer.last.score if peer.last else 0,
            max_score=peer.last.max_score if peer.last else game.max_score,
            calls=peer.calls,
            tokens_in=peer.tokens_in,
            tokens_out=peer.tokens_out,
            seconds=time.perf_counter() - started,
            end_reason=peer.outcome,
            notes=tuple(peer.notes),
            trace=tuple(peer.trace),
        )
    except Exception as exc:
        return EpisodeResult(
            **base,
            won=False,
            outcome="error",
            commands=env.commands,
            score=0,
            max_score=game.max_score,
            calls=counting.calls,
            tokens_in=counting.tokens_in,
            tokens_out=counting.tokens_out,
            seconds=time.perf_counter() - started,
            error=f"{type(exc).__name__}: {exc}",
        )
    finally:
        env.close()
