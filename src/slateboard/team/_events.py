"""The events a blackboard run emits (``on_event``, ``team.events()``, ``team.stream``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..runtime.events import RunEvent
from ..vocabulary import (
    BUDGET_EXCEEDED,
    COORDINATOR_DECIDED,
    DECIDER_FAILED,
    TEAM_APPROVAL,
    TEAM_COMPLETED,
    TEAM_CONTRIBUTION,
    TEAM_HALTED,
    TEAM_INVOKING,
    TEAM_NO_CONTRIBUTOR,
    TEAM_QUARANTINED,
    TEAM_REJECTED,
    TEAM_RELEASED,
    TEAM_STARTED,
    TEAM_UNKNOWN_AGENT,
    TEAM_WITHHELD,
    EventKind,
)

__all__ = [
    "APPROVAL",
    "BLACKBOARD_EVENTS",
    "BUDGET_EXCEEDED",
    "COMPLETED",
    "CONTRIBUTION",
    "COORDINATOR_DECIDED",
    "DECIDER_FAILED",
    "HALTED",
    "INVOKING",
    "NO_CONTRIBUTOR",
    "PREVIEW",
    "QUARANTINED",
    "REJECTED",
    "RELEASED",
    "STARTED",
    "UNKNOWN_AGENT",
    "WITHHELD",
    "EventCallback",
]

# The event kinds live in ``slateboard.vocabulary`` (as ``TEAM_*`` where a bare name would be
# ambiguous there); the team's modules know them by these short names.
STARTED: Final = TEAM_STARTED
NO_CONTRIBUTOR: Final = TEAM_NO_CONTRIBUTOR
UNKNOWN_AGENT: Final = TEAM_UNKNOWN_AGENT
INVOKING: Final = TEAM_INVOKING
CONTRIBUTION: Final = TEAM_CONTRIBUTION
REJECTED: Final = TEAM_REJECTED
APPROVAL: Final = TEAM_APPROVAL
HALTED: Final = TEAM_HALTED
COMPLETED: Final = TEAM_COMPLETED
QUARANTINED: Final = TEAM_QUARANTINED
RELEASED: Final = TEAM_RELEASED
WITHHELD: Final = TEAM_WITHHELD
BLACKBOARD_EVENTS: tuple[EventKind, ...] = (
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
