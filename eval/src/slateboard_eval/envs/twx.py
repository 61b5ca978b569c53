"""TextWorldExpress (``pip install 'slateboard-eval[twx]'``, Java 17) as a TextEnvironment.

TextWorldExpress 1.1.0 simulates its games in a JVM (py4j) at thousands of steps per second
and needs no network. A game is a game name, its generation parameters and a seed
(``TwxSpec``); the gold action sequence it generates for the seed is the environment's policy
while the episode follows it. The admissible commands are TextWorldExpress's valid actions for
the current state. The score is its normalised score times 100 (max_score 100); won and lost
are its ``tasksuccess`` and ``taskfailure``. Importing this module does not import it.

Games (``GAMES``): ``cookingworld``, ``twc`` (TextWorld Commonsense), ``coin`` (Coin
Collector), ``arithmetic``, ``sorting``, ``mapreader``, ``peckingorder``, ``simonsays``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slateboard.errors import InvalidInput

from ._jvm import JvmGame, JvmMissing, JvmPool, Loaded, java_missing
from ._protocol import TextTurn, clip

__all__ = [
    "CI_GAMES",
    "FULL_GAMES",
    "GAMES",
    "TwxGame",
    "TwxMissing",
    "TwxSpec",
    "game_specs",
    "twx_missing",
]

INSTALL_HINT = "install the twx extra: pip install 'slateboard-eval[twx]'"
_STEP_LIMIT = 100_000
GAMES = ("cookingworld", "twc", "coin", "arithmetic", "sorting", "mapreader", "peckingorder", "simonsays")


class TwxMissing(JvmMissing):
    """TextWorldExpress or Java is not installed (the message says which and how)."""


def twx_missing() -> str | None:
    """Why TextWorldExpress cannot run here (the package or Java missing), or None."""
    if importlib.util.find_spec("textworld_express") is None:
        return f"TextWorldExpress is not installed; {INSTALL_HINT}"
    return java_missing()


@dataclass(frozen=True, slots=True)
class TwxSpec:
    """One kind of TextWorldExpress game: the game, its parameter string and a short label."""

    game: str
    params: str
    label: str
    fold: str = "train"

    def name(self, seed: int) -> str:
        """``LABEL-sSEED``: the same name, the same game."""
        return f"{self.label}-s{seed}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (what a worker process rebuilds the game from)."""
        return {"game": self.game, "params": self.params, "label": self.label, "fold": self.fold}


_NO_DOORS = "includeDoors=0,limitInventorySize=0"
CI_GAMES: tuple[TwxSpec, ...] = (
    TwxSpec("coin", f"numLocations=3,numDistractorItems=0,{_NO_DOORS}", "coin-l3"),
    TwxSpec("cookingworld", f"numLocations=1,numIngredients=1,numDistractorItems=0,{_NO_DOORS}", "cooking-l1i1"),
)
"""The CI-size set: two short games (a few commands each)."""

FULL_GAMES: tuple[TwxSpec, ...] = (
    *CI_GAMES,
    TwxSpec("cookingworld", f"numLocations=3,numIngredients=2,numDistractorItems=2,{_NO_DOORS}", "cooking-l3i2"),
    TwxSpec("twc", f"numLocations=1,numItemsToPutAway=2,{_NO_DOORS}", "twc-l1p2"),
    TwxSpec("twc", f"numLocations=2,numItemsToPutAway=3,{_NO_DOORS}", "twc-l2p3"),
    TwxSpec("coin", f"numLocations=6,numDistractorItems=2,{_NO_DOORS}", "coin-l6"),
    TwxSpec("arithmetic", "", "arithmetic"),
    TwxSpec("sorting", "", "sorting"),
    TwxSpec("mapreader", "", "mapreader"),
    TwxSpec("peckingorder", "", "peckingorder"),
)
"""The full set: every game kind, easy and harder parameters."""


def game_specs(*, full: bool = False, only: Sequence[str] = ()) -> list[TwxSpec]:
    """The CI (or full) set, restricted to the labels or game names in ``only`` when given
    (InvalidInput, a ValueError, naming the unknown ones)."""
    specs = list(FULL_GAMES if full else CI_GAMES)
    if not only:
        return specs
    pool = {s.label: s for s in FULL_GAMES}
    out: list[TwxSpec] = []
    for name in only:
        if name in pool:
            out.append(pool[name])
        elif name in GAMES:
            out.extend(s for s in specs if s.game == name)
        else:
            raise InvalidInput(
                f"unknown TextWorldExpress game {name!r} (labels: {', '.join(pool)}; games: {', '.join(GAMES)})"
            )
    return out


class TwxGame(JvmGame):
    """A TextWorldExpress game (spec and seed) as a TextEnvironment (see the module docstring and
    ``JvmGame``: the simulator's lifecycle, the gold path as a policy).

    ``gold`` pins the gold path: TextWorldExpress generates Coin Collector's by a randomised
    walk, so two resets of the same game can give different, equally winning paths."""

    pool = JvmPool()
    missing_error = TwxMissing

    def __init__(self, spec: TwxSpec, seed: int, *, gold: Sequence[str] | None = None) -> None:
        super().__init__(gold=gold)
        self.spec = spec
        self.seed = seed

    @property
    def name(self) -> str:
        """``LABEL-sSEED``."""
        return self.spec.name(self.seed)

    @staticmethod
    def missing() -> str | None:
        """Why TextWorldExpress cannot run here, or None."""
        return twx_missing()

    def create(self) -> Any:
        """A TextWorldExpress simulator (its step limit out of reach: the budget is the harness's)."""
        from textworld_express import TextWorldExpressEnv

        return TextWorldExpressEnv(envStepLimit=_STEP_LIMIT)

    def load(self, env: Any) -> Loaded:
        """Generate the game for the seed and reset it, with its gold path."""
        env.load(self.spec.game, self.spec.params)
        observation, info = env.reset(seed=self.seed, gameFold=self.spec.fold, generateGoldPath=True)
        objective = " ".join(str(info.get("taskDescription", "")).split())
        return Loaded(str(observation), info, [str(a) for a in env.getGoldActionSequence()], objective)

    def execute(self, env: Any, command: str) -> tuple[str, dict[str, Any], bool]:
        """One TextWorldExpress step (its own ``done`` is read from the info's success/failure)."""
        observation, _, done, info = env.step(command)
        return str(observation), info, bool(done)

    def turn(self, observation: str, info: dict[str, Any], done: bool) -> TextTurn:
        """The turn: valid actions as the admissible commands, score 0..100, success/failure."""
        return TextTurn(
            observation=clip(observation.strip()),
            admissible=tuple(str(a) for a in info.get("validActions") or ()),
            score=round(100 * float(info.get("score", 0.0) or 0.0)),
            max_score=100,
            won=bool(info.get("tasksuccess")),
            lost=bool(info.get("taskfailure")),
            moves=int(info.get("numMoves", self.commands) or 0),
            tracked=True,
        )
