"""ScienceWorld (``pip install 'slateboard[scienceworld]'``, Java 17) as a TextEnvironment.

ScienceWorld 1.2.3 runs its simulator in a JVM (py4j); it needs no network. A game is a task
name and a variation index (``ScienceWorldSpec``); the gold action sequence ScienceWorld
generates for the variation is the environment's policy (its walkthrough) while the episode
follows it. Importing this module does not import ScienceWorld.

Admissible commands: ScienceWorld's list of valid action-object combinations has hundreds to
thousands of entries and does not contain many commands its own gold path uses (``examine
substance in metal pot``, ``use thermometer in inventory on ...``), so a turn reports no
admissible list (the environment "cannot tell"): systems produce free-text commands, and the
objective lists ScienceWorld's action templates (``open OBJ``, ``go to LOC``...) so a player
knows the command language. The score is ScienceWorld's 0..100; the game is won at 100 and
lost when ScienceWorld ends it below that (a failed task scores -100).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ._gold import GoldTracker
from ._java import JvmPool, java_missing
from ._protocol import TextTurn, clip

__all__ = [
    "CI_TASKS",
    "FULL_TASKS",
    "ScienceWorldMissing",
    "ScienceWorldSpec",
    "ScienceWorldTask",
    "scienceworld_missing",
    "task_specs",
]

INSTALL_HINT = "install the scienceworld extra: pip install 'slateboard[scienceworld]'"
_STEP_LIMIT = 100_000
"""ScienceWorld's own step limit, set out of reach: the command budget is the harness's."""

_POOL = JvmPool()


class ScienceWorldMissing(UsageError, RuntimeError):
    """ScienceWorld or Java is not installed (the message says which and how to install it)."""


def scienceworld_missing() -> str | None:
    """Why ScienceWorld cannot run here (the package or Java missing), or None."""
    if importlib.util.find_spec("scienceworld") is None:
        return f"ScienceWorld is not installed; {INSTALL_HINT}"
    return java_missing()


@dataclass(frozen=True, slots=True)
class ScienceWorldSpec:
    """One ScienceWorld game: a task, a variation and an optional simplification string."""

    task: str
    variation: int = 0
    simplification: str = ""

    @property
    def name(self) -> str:
        """``TASK-vN`` (with the simplifications appended when any)."""
        tail = f"-{self.simplification.replace(',', '+')}" if self.simplification else ""
        return f"{self.task}-v{self.variation}{tail}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (what a worker process rebuilds the game from)."""
        return {"task": self.task, "variation": self.variation, "simplification": self.simplification}


CI_TASKS: tuple[str, ...] = ("find-living-thing", "find-non-living-thing")
"""The CI-size set: two tasks whose gold paths take about ten commands."""

FULL_TASKS: tuple[str, ...] = (
    "find-living-thing",
    "find-non-living-thing",
    "find-plant",
    "find-animal",
    "boil",
    "melt",
    "freeze",
    "chemistry-mix",
    "grow-plant",
    "identify-life-stages-1",
    "measure-melting-point-known-substance",
    "use-thermometer",
    "test-conductivity",
    "inclined-plane-determine-angle",
    "lifespan-longest-lived",
)
"""A broader set across ScienceWorld's topics (matter, chemistry, biology, electricity, forces)."""


def task_specs(
    tasks: Sequence[str], variations: Sequence[int] = (0,), simplification: str = ""
) -> list[ScienceWorldSpec]:
    """Every (task, variation) pair, tasks first, in order."""
    return [ScienceWorldSpec(t, v, simplification) for t in tasks for v in variations]


class ScienceWorldTask:
    """One ScienceWorld task variation as a TextEnvironment (see the module docstring).

    ``gold`` pins the gold path (a suite pins the one it saw first, so every system and setting
    follows the same). The JVM starts on the first ``reset`` (seconds); ``close`` hands it back for the next episode of this process. ``gold`` is the
    variation's gold action sequence (known after the first reset)."""

    def __init__(self, spec: ScienceWorldSpec, *, gold: Sequence[str] | None = None) -> None:
        self.spec = spec
        self._pinned = tuple(gold) if gold else None
        self._env: Any = None
        self._objective = ""
        self._commands = 0
        self._last: TextTurn | None = None
        self._gold = GoldTracker()

    @property
    def name(self) -> str:
        """``TASK-vN``."""
        return self.spec.name

    @property
    def objective(self) -> str:
        """The task description and ScienceWorld's action templates."""
        return self._objective

    @property
    def commands(self) -> int:
        """Commands executed since the last reset."""
        return self._commands

    @property
    def last(self) -> TextTurn | None:
        """The latest turn."""
        return self._last

    @property
    def gold(self) -> tuple[str, ...]:
        """The variation's gold action sequence (empty before the first reset)."""
        return self._gold.gold

    def _start(self) -> Any:
        if self._env is None:
            why = scienceworld_missing()
            if why is not None:
                raise ScienceWorldMissing(why)
            from scienceworld import ScienceWorldEnv

            self._env = _POOL.acquire(lambda: ScienceWorldEnv("", envStepLimit=_STEP_LIMIT))
        return self._env

    def _turn(self, observation: str, info: dict[str, Any], done: bool) -> TextTurn:
        score = int(info.get("score", 0) or 0)
        won = score >= 100
        turn = TextTurn(
            observation=clip(observation.strip()),
            admissible=(),
            score=max(score, 0),
            max_score=100,
            won=won,
            lost=bool(done) and not won,
            moves=int(info.get("moves", self._commands) or 0),
            tracked=True,
        )
        self._last = turn
        return turn

    async def reset(self) -> TextTurn:
        """Load the task variation and start it (the gold path is generated with it)."""
        env = self._start()
        env.load(self.spec.task, self.spec.variation, self.spec.simplification, generateGoldPath=True)
        observation, info = env.reset()
        self._commands = 0
        self._gold.reset(self._pinned or [str(a) for a in env.get_gold_action_sequence()])
        templates = ", ".join(str(a).split(":")[0].strip() for a in env.get_possible_actions())
        description = " ".join(str(env.get_task_description()).split())
        self._objective = f"{description}\nCommand templates: {templates}" if templates else description
        return self._turn(str(observation), info, False)

    async def step(self, command: str) -> TextTurn:
        """Execute ``command`` (ScienceWorld answers an unknown one in its own words)."""
        if self._env is None or self._last is None:
            await self.reset()
        observation, _, done, info = self._env.step(command)
        self._commands += 1
        self._gold.executed(command)
        return self._turn(str(observation), info, bool(done))

    def policy(self) -> tuple[str, ...]:
        """The rest of the gold path while the episode has followed it, else ``()``."""
        if self._last is None or self._last.over:
            return ()
        return self._gold.remaining()

    def close(self) -> None:
        """Release the simulator (its JVM is kept for the next episode in this process)."""
        if self._env is not None:
            env, self._env = self._env, None
            _POOL.release(env)
