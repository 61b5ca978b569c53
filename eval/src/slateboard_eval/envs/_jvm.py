"""What the JVM-backed text environments (ScienceWorld, TextWorldExpress) share: the Java
check, a pool of simulator handles, and ``JvmGame``, the TextEnvironment both are.

Both suites run their simulator in a JVM through py4j, generate a gold action sequence with a
game, and answer a command with (observation, info). ``JvmGame`` holds everything else once:
starting (or reusing) the simulator, the command count, the latest turn, the gold path as a
policy that follows the episode, and handing the simulator back on ``close``. A suite says only
how to make its simulator, load a game, execute a command and read a turn."""

from __future__ import annotations

import atexit
import contextlib
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from slateboard.errors import UsageError

from ._gold import GoldTracker
from ._protocol import EpisodeCounters, TextTurn

__all__ = ["JvmGame", "JvmMissing", "JvmPool", "Loaded", "java_missing"]


def java_missing() -> str | None:
    """Why no Java runtime can be used here (None when ``java -version`` runs).

    ScienceWorld and TextWorldExpress start their simulator in a JVM through py4j; without
    ``java`` on the PATH they fail late with an opaque error, so callers check first."""
    java = shutil.which("java")
    if java is None:
        return "no Java runtime on the PATH (install one: apt-get install default-jre-headless)"
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"java does not run: {exc}"
    if proc.returncode != 0:
        return f"java -version failed (exit status {proc.returncode})"
    return None


class JvmMissing(UsageError, RuntimeError):
    """A JVM-backed suite cannot run here: its package or Java is missing (the message says
    which and how to install it)."""


class JvmPool:
    """Idle simulator handles (each holds a JVM) kept for reuse within one process.

    Starting a JVM costs seconds while loading a game into a running one costs milliseconds, so
    a suite that plays many episodes one after the other reuses the handle an episode released.
    At most ``keep`` idle handles are kept; the rest, and every idle one at exit, are closed."""

    def __init__(self, keep: int = 1) -> None:
        self.keep = keep
        self._idle: list[Any] = []
        atexit.register(self.clear)

    def acquire(self, factory: Callable[[], Any]) -> Any:
        """An idle handle, else a new one from ``factory``."""
        return self._idle.pop() if self._idle else factory()

    def release(self, handle: Any) -> None:
        """Give ``handle`` back (closed when enough are idle already)."""
        if len(self._idle) < self.keep:
            self._idle.append(handle)
        else:
            handle.close()

    def clear(self) -> None:
        """Close every idle handle."""
        while self._idle:
            handle = self._idle.pop()
            with contextlib.suppress(Exception):
                handle.close()


@dataclass(frozen=True, slots=True)
class Loaded:
    """What loading a game gives: the first observation and info, the simulator's gold action
    sequence and the objective the player is shown."""

    observation: str
    info: dict[str, Any]
    gold: Sequence[str]
    objective: str


class JvmGame(EpisodeCounters, ABC):
    """A game of a JVM-backed suite as a TextEnvironment.

    Guarantees: the simulator starts on the first ``reset`` (``missing_error`` with the reason
    when the suite cannot run here) and is reused from the suite's ``pool``; ``step`` before
    ``reset`` resets first; ``commands`` counts the commands since the last reset; ``policy()``
    is the rest of the gold path while the episode has followed it and the game is not over,
    else ``()``; ``close`` hands the simulator back to the pool. ``gold`` pins the gold path (a
    suite pins the one it saw first, so every system and setting follows the same)."""

    pool: ClassVar[JvmPool]
    """The suite's simulator handles (one pool per suite: the handles differ)."""
    missing_error: ClassVar[type[JvmMissing]] = JvmMissing

    def __init__(self, *, gold: Sequence[str] | None = None) -> None:
        super().__init__()
        self._pinned = tuple(gold) if gold else None
        self._env: Any = None
        self._gold = GoldTracker()

    # -- what a suite says --------------------------------------------------------------------
    @property
    @abstractmethod
    def name(self) -> str:
        """The game's name in results (the same name, the same game)."""

    @staticmethod
    @abstractmethod
    def missing() -> str | None:
        """Why the suite cannot run here, or None."""

    @abstractmethod
    def create(self) -> Any:
        """A new simulator handle (starts a JVM)."""

    @abstractmethod
    def load(self, env: Any) -> Loaded:
        """Load and reset this game in ``env``, with its gold path generated."""

    @abstractmethod
    def execute(self, env: Any, command: str) -> tuple[str, dict[str, Any], bool]:
        """Execute ``command`` in ``env``: (observation, info, done)."""

    @abstractmethod
    def turn(self, observation: str, info: dict[str, Any], done: bool) -> TextTurn:
        """The TextTurn of an answer (``commands`` is already counted when it is called)."""

    # -- the TextEnvironment (objective, commands and last come from EpisodeCounters) ---------
    @property
    def gold(self) -> tuple[str, ...]:
        """The game's gold action sequence (empty before the first reset)."""
        return self._gold.gold

    def _start(self) -> Any:
        if self._env is None:
            why = self.missing()
            if why is not None:
                raise self.missing_error(why)
            self._env = self.pool.acquire(self.create)
        return self._env

    async def reset(self) -> TextTurn:
        """Load the game and start it (its gold path is generated with it)."""
        loaded = self.load(self._start())
        self._commands = 0
        self._gold.reset(self._pinned or [str(a) for a in loaded.gold])
        self._objective = loaded.objective
        self._last = self.turn(loaded.observation, loaded.info, False)
        return self._last

    async def step(self, command: str) -> TextTurn:
        """Execute ``command`` (the simulator answers an unknown one in its own words)."""
        if self._env is None or self._last is None:
            await self.reset()
        observation, info, done = self.execute(self._env, command)
        self._commands += 1
        self._gold.executed(command)
        self._last = self.turn(observation, info, done)
        return self._last

    def policy(self) -> tuple[str, ...]:
        """The rest of the gold path while the episode has followed it, else ``()``."""
        if self._last is None or self._last.over:
            return ()
        return self._gold.remaining()

    def close(self) -> None:
        """Release the simulator (its JVM is kept for the next episode in this process)."""
        if self._env is not None:
            env, self._env = self._env, None
            self.pool.release(env)
