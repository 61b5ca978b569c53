"""Scheduling: rules, agenda, stages and control units.

* ``Scheduler`` turns committed events (and board creation) into ``Invocation``s through the
  blueprint's rules, gated by ``StageTracker``;
* ``Agenda`` holds pending invocations in priority order, de-duplicated by worker + binding;
* ``ControlUnit`` implementations (``AgendaOrder``, ``RoundRobin``) choose what runs next.
"""

from .agenda import Agenda
from .control import AgendaOrder, BoardSummary, ControlUnit, Selection
from .diagnostics import Diagnostic
from .invocation import CANCELLED, CLAIMED, DONE, PENDING, Invocation
from .rules import Scheduled, Scheduler
from .stages import STAGE_ENTERED, StageEvent, StageTracker, StageUpdate

__all__ = [
    "CANCELLED",
    "CLAIMED",
    "DONE",
    "PENDING",
    "STAGE_ENTERED",
    "Agenda",
    "AgendaOrder",
    "BoardSummary",
    "ControlUnit",
    "Diagnostic",
    "Invocation",
    "Scheduled",
    "Scheduler",
    "Selection",
    "StageEvent",
    "StageTracker",
    "StageUpdate",
]
