"""ScienceWorld (``pip install 'slateboard-eval[scienceworld]'``, Java 17) as a TextEnvironment.

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

from ._jvm import JvmGame, JvmMissing, JvmPool, Loaded, java_missing
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

INSTALL_HINT = "install the scienceworld extra: pip install 'slateboard-eval[scienceworld]'"
_STEP_LIMIT = 100_000
"""ScienceWorld's own step limit, set out of reach: the command budget is the harness's."""


class ScienceWorldMissing(JvmMissing):
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


class ScienceWorldTask(JvmGame):
    """One ScienceWorld task variation as a TextEnvironment (see the module docstring and
    ``JvmGame``: the simulator's lifecycle, the gold path as a policy). The JVM starts on the
    first ``reset`` (seconds)."""

    pool = JvmPool()
    missing_error = ScienceWorldMissing

    def __init__(self, spec: ScienceWorldSpec, *, gold: Sequence[str] | None = None) -> None:
        super().__init__(gold=gold)
        self.spec = spec

    @property
    def name(self) -> str:
        """``TASK-vN``."""
        return self.spec.name

    @staticmethod
    def missing() -> str | None:
        """Why ScienceWorld cannot run here, or None."""
        return scienceworld_missing()

    def create(self) -> Any:
        """A ScienceWorld simulator (its step limit out of reach: the budget is the harness's)."""
        from scienceworld import ScienceWorldEnv

        return ScienceWorldEnv("", envStepLimit=_STEP_LIMIT)

    def load(self, env: Any) -> Loaded:
        """Load the task variation and reset it; the objective is the task description and the
        action templates."""
        env.load(self.spec.task, self.spec.variation, self.spec.simplification, generateGoldPath=True)
        observation, info = env.reset()
        templates = ", ".join(str(a).split(":")[0].strip() for a in env.get_possible_actions())
        description = " ".join(str(env.get_task_description()).split())
        objective = f"{description}\nCommand templates: {templates}" if templates else description
        return Loaded(str(observation), info, [str(a) for a in env.get_gold_action_sequence()], objective)

    def execute(self, env: Any, command: str) -> tuple[str, dict[str, Any], bool]:
        """One ScienceWorld step."""
        observation, _, done, info = env.step(command)
        return str(observation), info, bool(done)

    def turn(self, observation: str, info: dict[str, Any], done: bool) -> TextTurn:
        """The turn: no admissible list, won at score 100, lost when ended below it."""
        score = int(info.get("score", 0) or 0)
        won = score >= 100
        return TextTurn(
            observation=clip(observation.strip()),
            admissible=(),
            score=max(score, 0),
            max_score=100,
            won=won,
            lost=done and not won,
            moves=int(info.get("moves", self.commands) or 0),
            tracked=True,
        )
