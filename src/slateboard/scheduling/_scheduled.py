"""``Scheduled`` and ``SchedulerBusy``, in a module of their own: ``rules.py`` is compiled
(slateboard._native), and mypyc compiles neither a subclass of ``list`` nor a class with two
built-in exception bases. Both are re-exported by ``rules`` and ``slateboard.scheduling``."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UsageError
from ..kernel.canonical import JSON
from .diagnostics import Diagnostic
from .invocation import Invocation
from .stages import StageEvent


class Scheduled(list[Invocation]):
    """The invocations one scheduling step created (a plain list of Invocation, in order),
    plus the diagnostics, stage lifecycle events and gather notes of that step."""

    def __init__(
        self,
        invocations: Sequence[Invocation] = (),
        diagnostics: Sequence[Diagnostic] = (),
        stage_events: Sequence[StageEvent] = (),
        notes: Sequence[dict[str, JSON]] = (),
    ) -> None:
        super().__init__(invocations)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        self.stage_events: tuple[StageEvent, ...] = tuple(stage_events)
        self.notes: tuple[dict[str, JSON], ...] = tuple(notes)
        """What this step gave the board's joins and batches (``scheduling.gather``): logged in
        the ``meta["gather"]`` of the record it was scheduled for."""


class SchedulerBusy(UsageError, RuntimeError):
    """``prepare`` was called while an earlier prepared schedule awaits commit or abort."""
