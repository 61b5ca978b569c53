"""ScienceWorld (``pip install 'slateboard-eval[scienceworld]'``, Java 17) as a TextEnvironment.

ScienceWorld 1.2.3 runs its simulator in a JVM (py4j); it needs no network. A game is a task
name and a variation index (``ScienceWorldSpec``); the gold action sequence ScienceWorld
generates for the variation is the environment's policy (its walkthrough) while the episode
follows it. Importing this module does not import ScienceWorld.

Admissible commands: a turn lists at most ``SCIENCEWORLD_ADMISSIBLE`` (60: what the peers'
prompts show of an admissible list, so every system reads the same list; the text_actor schema
allows 200) of ScienceWorld's *valid action-object combinations* (``admissible_commands``). The enumeration has
hundreds to thousands of entries (``connect OBJ to OBJ`` and ``move OBJ to OBJ`` over every pair
of objects in the room), so it is filtered and capped: ``reset task`` is left out (it would
restart the episode under the harness's command count), then commands are kept in tiers, each
sorted, until the cap: no object (``look around``, ``inventory``...); one object, by verb
(``go``, ``open``, ``close``, ``pick up``, ``put down``, ``focus on``, ``look at``, ``look in``,
``activate``, ``deactivate``, ``read``, ``use``, then the others); two objects one of which the
task description names (``move dove to yellow box``); the other two-object commands. The kernel's
"an admissible command" invariant then rejects any command outside the list, as on TextWorld.

The enumeration does not hold every command ScienceWorld's parser accepts, and its own gold path
uses some it leaves out (aliases such as ``examine ice`` or ``move egg dove egg in inventory to
yellow box``, a door opened twice). With ``walkthrough_aliases`` (the harness sets it for the
``walkthrough`` policy only, never for a real model) the next gold command is added at the head
of the list while the episode follows the gold path and the enumeration misses it, so the gold
policy stays playable. The objective lists ScienceWorld's action templates (``open OBJ``,
``go to LOC``...) so a player knows the command language. The score is ScienceWorld's 0..100; the
game is won at 100 and lost when ScienceWorld ends it below that (a failed task scores -100).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._board import MAX_COMMAND_CHARS
from ._jvm import JvmGame, JvmMissing, JvmPool, Loaded, java_missing
from ._protocol import TextTurn, clip

__all__ = [
    "CI_TASKS",
    "FULL_TASKS",
    "SCIENCEWORLD_ADMISSIBLE",
    "ScienceWorldMissing",
    "ScienceWorldSpec",
    "ScienceWorldTask",
    "admissible_commands",
    "scienceworld_missing",
    "task_specs",
]

INSTALL_HINT = "install the scienceworld extra: pip install 'slateboard-eval[scienceworld]'"
_STEP_LIMIT = 100_000
"""ScienceWorld's own step limit, set out of reach: the command budget is the harness's."""


SCIENCEWORLD_ADMISSIBLE = 60
"""The cap on a ScienceWorld turn's admissible list: the peers' prompts show the first 60
commands of a list (``textworld_peers``), slateboard's actor the whole list, so a longer one
would give the systems different information (and slateboard's actor more tokens to read)."""

_VERB_ORDER: tuple[str, ...] = (
    "go",
    "open",
    "close",
    "pick up",
    "put down",
    "focus on",
    "look at",
    "look in",
    "activate",
    "deactivate",
    "read",
    "use",
)
"""One-object verbs in the order they are kept when the cap cuts (moving and handling first)."""
_LEFT_OUT = frozenset({"reset task"})


def _verb_rank(command: str) -> int:
    for i, verb in enumerate(_VERB_ORDER):
        if command == verb or command.startswith(verb + " "):
            return i
    return len(_VERB_ORDER)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def admissible_commands(
    valid: Sequence[Mapping[str, Any]],
    referents: Mapping[str, str],
    task: str,
    *,
    first: Sequence[str] = (),
    limit: int = SCIENCEWORLD_ADMISSIBLE,
) -> tuple[str, ...]:
    """The bounded admissible list of one ScienceWorld turn (see the module docstring).

    ``valid`` is ScienceWorld's ``get_valid_action_object_combinations_with_templates()``
    (``action`` and ``obj_ids`` of each entry), ``referents`` its object-id to name table,
    ``task`` the task description; ``first`` goes at the head of the list. Guarantees: at most
    ``limit`` distinct commands, each at most MAX_COMMAND_CHARS long, every one from ``valid``
    or ``first``, in a deterministic order (the same inputs, the same list)."""
    named = f" {_words(task)} "
    tiers: list[list[tuple[int, str]]] = [[], [], [], []]
    for entry in valid:
        action = " ".join(str(entry.get("action", "")).split())
        if not action or action in _LEFT_OUT or len(action) > MAX_COMMAND_CHARS:
            continue
        ids = entry.get("obj_ids") or []
        if not ids:
            tiers[0].append((0, action))
        elif len(ids) == 1:
            tiers[1].append((_verb_rank(action), action))
        elif any(f" {_words(referents.get(str(i), ''))} " in named for i in ids if referents.get(str(i))):
            tiers[2].append((0, action))
        else:
            tiers[3].append((0, action))
    out: dict[str, None] = {c: None for c in first if 0 < len(c) <= MAX_COMMAND_CHARS}
    for tier in tiers:
        for _, action in sorted(set(tier)):
            if len(out) >= limit:
                return tuple(out)[:limit]
            out.setdefault(action)
    return tuple(out)[:limit]


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

    def __init__(
        self, spec: ScienceWorldSpec, *, gold: Sequence[str] | None = None, walkthrough_aliases: bool = False
    ) -> None:
        super().__init__(gold=gold)
        self.spec = spec
        self.walkthrough_aliases = walkthrough_aliases
        self._task = ""

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
        self._task = description
        objective = f"{description}\nCommand templates: {templates}" if templates else description
        return Loaded(str(observation), info, [str(a) for a in env.get_gold_action_sequence()], objective)

    def execute(self, env: Any, command: str) -> tuple[str, dict[str, Any], bool]:
        """One ScienceWorld step."""
        observation, _, done, info = env.step(command)
        return str(observation), info, bool(done)

    def turn(self, observation: str, info: dict[str, Any], done: bool) -> TextTurn:
        """The turn: the bounded admissible list (none once the game is over), won at score
        100, lost when ended below it."""
        score = int(info.get("score", 0) or 0)
        won = score >= 100
        over = won or done
        return TextTurn(
            observation=clip(observation.strip()),
            admissible=() if over else self._admissible(),
            score=max(score, 0),
            max_score=100,
            won=won,
            lost=done and not won,
            moves=int(info.get("moves", self.commands) or 0),
            tracked=True,
        )

    def _admissible(self) -> tuple[str, ...]:
        env = self._env
        valid = env.get_valid_action_object_combinations_with_templates()
        referents = {str(k): str(v) for k, v in env.get_possible_object_referent_LUT().items()}
        listed = admissible_commands(valid, referents, self._task)
        remaining = self._gold.remaining() if self.walkthrough_aliases else ()
        if remaining and remaining[0] not in listed:
            return admissible_commands(valid, referents, self._task, first=remaining[:1])
        return listed
