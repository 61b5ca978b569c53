"""Java for the JVM-backed text environments (ScienceWorld, TextWorldExpress)."""

from __future__ import annotations

import atexit
import contextlib
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

__all__ = ["JvmPool", "java_missing"]


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
