"""Scheduling: rules, agenda, stages and control units.

* ``Scheduler`` turns committed events (and board creation) into ``Invocation``s through the
  blueprint's rules, gated by ``StageTracker``;
* ``Agenda`` holds pending invocations in priority order, de-duplicated by worker + binding;
* ``ControlUnit`` implementations (``AgendaOrder``, ``RoundRobin``) choose what runs next.
"""

from .agenda import Agenda
from .control import AgendaOrder, BoardSummary, ControlUnit, RoundRobin, Selection
from .diagnostics import Diagnostic
from .invocation import CANCELLED, CLAIMED, DONE, PENDING, STATUSES, Invocation
from .rules import START_EVENT, Scheduled, Scheduler, SchedulerBusy
from .stages import STAGE_ENTERED, STAGE_EXITED, StageEvent, StageTracker, StageUpdate

__all__ = [
    "CANCELLED",
    "CLAIMED",
    "DONE",
    "PENDING",
    "STAGE_ENTERED",
    "STAGE_EXITED",
    "START_EVENT",
    "STATUSES",
    "Agenda",
    "AgendaOrder",
    "BoardSummary",
    "ControlUnit",
    "Diagnostic",
    "Invocation",
    "RoundRobin",
    "Scheduled",
    "Scheduler",
    "SchedulerBusy",
    "Selection",
    "StageEvent",
    "StageTracker",
    "StageUpdate",
]
