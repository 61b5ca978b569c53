"""The env-agnostic interface between a text environment and a board (or any agent system)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from slateboard.errors import RunError
from slateboard.kernel.canonical import JSON

__all__ = [
    "MAX_OBSERVATION_CHARS",
    "EpisodeCounters",
    "History",
    "TextEnvironment",
    "TextEnvironmentError",
    "TextTurn",
    "admissible_match",
    "clip",
]

MAX_OBSERVATION_CHARS = 2000
"""Observations longer than this are cut (the text_actor schema's bound on an observation)."""


class TextEnvironmentError(RunError, RuntimeError):
    """The environment cannot do what was asked (not started, out of sync with the board)."""


@dataclass(frozen=True, slots=True)
class TextTurn:
    """What the environment says after a reset or a command.

    ``observation`` is the cleaned text the player reads (never longer than
    MAX_OBSERVATION_CHARS); ``admissible`` the commands the environment accepts now (empty when
    it cannot tell); ``tracked`` is True when the environment reports ``won``/``lost`` itself.
    """

    observation: str
    admissible: tuple[str, ...] = ()
    score: int = 0
    max_score: int = 0
    won: bool = False
    lost: bool = False
    moves: int = 0
    tracked: bool = True

    @property
    def over(self) -> bool:
        """True once the game is won or lost."""
        return self.won or self.lost

    def progress(self) -> dict[str, JSON]:
        """The ``/progress`` member of a text_actor board for this turn."""
        return {
            "score": self.score,
            "max_score": max(0, self.max_score),
            "won": self.won,
            "lost": self.lost,
            "tracked": self.tracked,
        }


@runtime_checkable
class TextEnvironment(Protocol):
    """A text game or text environment, one episode at a time.

    Guarantees expected of an implementation: ``reset`` starts a fresh episode and returns the
    first turn; ``step`` executes one command and returns the next turn (an unknown or invalid
    command is answered with the game's own text, never an exception); ``commands`` is the
    number of commands executed since the last reset; ``objective`` is the task text (known after
    ``reset``). ``policy`` returns the commands that win from the current state when the
    environment knows them (a walkthrough), else an empty tuple.
    """

    @property
    def name(self) -> str:
        """A short name of the game or environment (for reports)."""
        ...

    @property
    def objective(self) -> str:
        """The task to achieve, in words."""
        ...

    @property
    def commands(self) -> int:
        """Commands executed since the last reset."""
        ...

    @property
    def last(self) -> TextTurn | None:
        """The latest turn (None before the first reset)."""
        ...

    async def reset(self) -> TextTurn:
        """Start a fresh episode."""
        ...

    async def step(self, command: str) -> TextTurn:
        """Execute one command."""
        ...

    def policy(self) -> tuple[str, ...]:
        """Commands that win from here, when known (else ``()``)."""
        ...

    def close(self) -> None:
        """Release the environment's resources."""
        ...


class EpisodeCounters:
    """What every TextEnvironment implementation keeps of its episode: the objective, the
    commands executed since the last reset and the latest turn, with the read-only properties
    the protocol names. Subclasses set ``_objective``, ``_commands`` and ``_last`` on reset and
    step; before the first reset they are ``""``, 0 and None."""

    def __init__(self) -> None:
        self._objective = ""
        self._commands = 0
        self._last: TextTurn | None = None

    @property
    def objective(self) -> str:
        """The task as the player is shown it (after the first reset)."""
        return self._objective

    @property
    def commands(self) -> int:
        """Commands executed since the last reset."""
        return self._commands

    @property
    def last(self) -> TextTurn | None:
        """The latest turn (None before the first reset)."""
        return self._last


def clip(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class History:
    """The (command, observation) pairs of an episode so far, for systems that keep their own."""

    pairs: list[tuple[str, str]] = field(default_factory=list)

    def add(self, command: str, observation: str) -> None:
        """Append one executed command and what it produced."""
        self.pairs.append((command, observation))

    def recent(self, n: int, width: int = 160) -> list[str]:
        """The last ``n`` pairs as one line each (observations shortened to ``width``)."""
        out = []
        for command, obs in self.pairs[-n:]:
            flat = " ".join(obs.split())
            out.append(f"> {command} -> {clip(flat, width)}")
        return out


def admissible_match(text: str, admissible: Sequence[str]) -> str:
    """The admissible command a free-text reply means: an exact (case-insensitive) match, else
    the admissible command contained in the text (the longest), else the one sharing the most
    words with it; the stripped text itself when nothing is admissible or nothing matches."""
    reply = " ".join(text.strip().strip("`\"'").split())
    if not admissible:
        return reply
    lowered = reply.lower()
    for cmd in admissible:
        if cmd.lower() == lowered:
            return cmd
    contained = [cmd for cmd in admissible if cmd.lower() in lowered]
    if contained:
        return max(contained, key=len)
    words = set(lowered.replace(",", " ").replace(".", " ").split())
    best, best_score = "", 0
    for cmd in admissible:
        score = len(words & set(cmd.lower().split()))
        if score > best_score:
            best, best_score = cmd, score
    return best or reply
