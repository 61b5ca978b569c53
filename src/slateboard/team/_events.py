"""The events a blackboard run emits (``on_event``, ``team.events()``, ``team.stream``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..runtime.events import RunEvent
from ._control import COORDINATOR_DECIDED

STARTED = "blackboard.started"
NO_CONTRIBUTOR = "blackboard.no_contributor"
UNKNOWN_AGENT = "blackboard.unknown_agent"
INVOKING = "blackboard.invoking"
CONTRIBUTION = "blackboard.contribution"
REJECTED = "blackboard.rejected"
DECIDER_FAILED = "blackboard.decider_failed"
APPROVAL = "blackboard.approval"
HALTED = "blackboard.halted"
COMPLETED = "blackboard.completed"
QUARANTINED = "blackboard.quarantined"
RELEASED = "blackboard.released"
WITHHELD = "blackboard.withheld"
BUDGET_EXCEEDED = "budget.exceeded"
BLACKBOARD_EVENTS = (
    STARTED,
    COORDINATOR_DECIDED,
    NO_CONTRIBUTOR,
    UNKNOWN_AGENT,
    INVOKING,
    CONTRIBUTION,
    REJECTED,
    DECIDER_FAILED,
    APPROVAL,
    HALTED,
    COMPLETED,
    QUARANTINED,
    RELEASED,
    WITHHELD,
    BUDGET_EXCEEDED,
)
"""Every event kind a blackboard run emits."""

EventCallback = Callable[[RunEvent], Any]
"""Called with each event (an awaitable result is awaited)."""


PREVIEW = 300
"""How many characters of a text (an entry, a reason, the raw decision) an event carries."""
