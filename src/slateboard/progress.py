"""A progress line for long work: what is being done and the elapsed time, on stderr.

On a terminal, ``progress(what)`` shows a rich spinner, ``what`` (markup off: ``[peers]`` stays
as written) and the elapsed time, and removes the line when the work ends. Off a terminal
(pipes, CI, a JSON consumer) it shows nothing, so error output stays one line and stdout is never
touched. ``SLATEBOARD_PROGRESS=1`` shows it anyway (tests, a log that wants it), ``=0`` never.

The handle it yields updates the description as the work advances (``update``) and prints a line
above the progress line (``print``; plain on stderr when the line is off), so per-item reports
and the live line never overwrite each other. The CLI's long commands (architect, eval, faults,
bench) and the examples use this one helper; ``run_with_progress`` runs a board under it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from .runtime.events import PROPOSAL_DECIDED, RunEvent

if TYPE_CHECKING:
    from .runtime.result import RunResult
    from .runtime.runner import Runner

__all__ = ["PROGRESS_ENV", "ProgressLine", "follow", "progress", "progress_wanted", "run_with_progress"]

PROGRESS_ENV = "SLATEBOARD_PROGRESS"
"""``1`` (or on/yes/always): show the progress line even off a terminal; ``0`` (off/no/never):
never show it; unset or anything else: show it on a terminal only."""

_ON = {"1", "on", "yes", "true", "always"}
_OFF = {"0", "off", "no", "false", "never"}


def progress_wanted(err: Console) -> bool:
    """Whether a progress line goes to ``err``: the environment's choice, else whether ``err``
    is a terminal."""
    choice = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if choice in _ON:
        return True
    if choice in _OFF:
        return False
    return err.is_terminal


class ProgressLine:
    """The handle of one progress line (see the module docstring)."""

    def __init__(self, err: Console, bar: Progress | None = None, task: TaskID | None = None) -> None:
        self._err = err
        self._bar = bar
        self._task = task

    @property
    def active(self) -> bool:
        """True while a progress line is shown (on a terminal, or forced on)."""
        return self._bar is not None

    def update(self, what: str) -> None:
        """Say what is being done now (no effect when the line is off)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=what)

    def print(self, line: str) -> None:
        """Write ``line`` to stderr, above the progress line when it is shown (markup off)."""
        target = self._bar.console if self._bar is not None else self._err
        target.print(Text(line), soft_wrap=True)


@contextmanager
def progress(what: str, *, err: Console | None = None) -> Iterator[ProgressLine]:
    """Show ``what`` with a spinner and the elapsed time on stderr (``err``) while the body runs,
    when ``progress_wanted``; yields the line's handle. The line is removed when the body ends,
    and never touches stdout."""
    forced = os.environ.get(PROGRESS_ENV, "").strip().lower() in _ON
    err = err or Console(file=sys.stderr, highlight=False, force_terminal=True if forced else None)
    if not progress_wanted(err):
        yield ProgressLine(err)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn())
    # stdout stays where it is: a redirect would send the command's output to this stderr console.
    with Progress(*columns, console=err, transient=True, redirect_stdout=False) as bar:
        task = bar.add_task(what, total=None)
        yield ProgressLine(err, bar, task)


async def follow(runner: Runner, on_event: Callable[[RunEvent], None]) -> RunResult:
    """Run ``runner`` to its end, calling ``on_event`` with each of its events as they come
    (subscribed before the run starts, so none is missed); returns the run's result. If the run
    raises, the event consumer is cancelled and the error propagates."""
    events = runner.events()

    async def consume() -> None:
        async for event in events:
            on_event(event)

    consumer = asyncio.create_task(consume())
    try:
        result = await runner.run()
    except BaseException:
        consumer.cancel()
        raise
    await consumer
    return result


async def run_with_progress(runner: Runner, what: str, *, err: Console | None = None) -> RunResult:
    """Run ``runner`` to its end under a progress line (``progress``) that says ``what``, how many
    proposals were decided and the latest decision (worker, outcome, stage)."""
    with progress(what, err=err) as line:
        decided = 0

        def show(event: RunEvent) -> None:
            nonlocal decided
            if event.kind != PROPOSAL_DECIDED:
                return
            decided += 1
            data = event.data
            stage = f" at {data['stage']}" if data.get("stage") else ""
            line.update(f"{what}: {decided} proposal(s), last {data.get('worker')} {data.get('outcome')}{stage}")

        return await follow(runner, show)
