"""Diagnostics: conditions that could not be evaluated, reported as data instead of raised.

A rule condition or stage condition that errors (a missing field, a type mismatch) does not
fire; the scheduler returns a Diagnostic for it. Diagnostics are built only from committed data
(the event, the version, the expression's error text), so a replay reproduces them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel.canonical import JSON


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One condition that could not be decided, or a rule the scheduler declined to fire.

    ``source`` is ``"rule"``, ``"stage"`` or ``"limit"``; ``name`` the rule or stage name;
    ``version`` the state version it was evaluated at; ``event`` the committed event (JSON) that
    was being matched, when there was one.
    """

    source: str
    name: str
    version: int
    message: str
    event: JSON = None

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (for logs and stores)."""
        return {
            "source": self.source,
            "name": self.name,
            "version": self.version,
            "message": self.message,
            "event": self.event,
        }

    def __str__(self) -> str:
        return f"{self.source} {self.name!r} at version {self.version}: {self.message}"
