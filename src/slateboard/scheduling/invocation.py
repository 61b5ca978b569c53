"""Invocations: the agenda's unit of work (a worker to run, why, and in which order).

An invocation's priority is fixed when it is created; the agenda orders by priority
(higher first) and then by creation order. ``key`` (worker + binding) is what de-duplicates
pending invocations: the same worker with the same binding is never pending twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..kernel.canonical import JSON, canonical_str
from ..vocabulary import INVOCATION_CANCELLED as CANCELLED
from ..vocabulary import INVOCATION_CLAIMED as CLAIMED
from ..vocabulary import INVOCATION_DONE as DONE
from ..vocabulary import INVOCATION_PENDING as PENDING
from ..vocabulary import INVOCATION_STATUSES, InvocationStatus

# The statuses live in ``slateboard.vocabulary`` (``INVOCATION_PENDING``, ...); this module, their
# first home, re-exports them under their first names.
__all__ = ["CANCELLED", "CLAIMED", "DONE", "INVOCATION_STATUSES", "PENDING", "Invocation", "InvocationStatus"]


@dataclass(frozen=True, slots=True)
class Invocation:
    """One scheduled run of a worker.

    ``id`` is unique within a board (``"<board-seq>:<n>"`` style ids are built by the
    scheduler from committed data only, so replays produce the same ids). ``event`` is the
    committed event (JSON) that caused it, ``rule`` the rule's name, ``binding`` the pattern
    captures. ``attempts`` counts stale re-queues and retries.
    """

    id: str
    worker: str
    priority: int
    order: int
    event: JSON = None
    rule: str | None = None
    binding: tuple[str, ...] = ()
    status: InvocationStatus = PENDING
    attempts: int = 0
    feedback: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """De-duplication key: worker and binding."""
        return canonical_str([self.worker, list(self.binding)])

    def sort_key(self) -> tuple[int, int]:
        """Agenda order: higher priority first, then older first."""
        return (-self.priority, self.order)

    def with_status(self, status: InvocationStatus) -> Invocation:
        """A copy in another status."""
        # Built field by field rather than with dataclasses.replace, which introspects the
        # fields on every call (this runs twice per step: the claim and the agenda's mirror).
        return Invocation(
            self.id, self.worker, self.priority, self.order, self.event, self.rule, self.binding,
            status, self.attempts, self.feedback, self.meta,
        )  # fmt: skip

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (for stores)."""
        return {
            "id": self.id,
            "worker": self.worker,
            "priority": self.priority,
            "order": self.order,
            "event": self.event,
            "rule": self.rule,
            "binding": list(self.binding),
            "status": self.status,
            "attempts": self.attempts,
            "feedback": self.feedback,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Invocation:
        """Inverse of to_json; raises InvalidInput on a status that is not an invocation status."""
        status = d.get("status", PENDING)
        if status not in INVOCATION_STATUSES:
            raise InvalidInput(f"invocation status {status!r} is not one of {', '.join(INVOCATION_STATUSES)}")
        return cls(
            id=d["id"],
            worker=d["worker"],
            priority=int(d["priority"]),
            order=int(d["order"]),
            event=d.get("event"),
            rule=d.get("rule"),
            binding=tuple(d.get("binding") or ()),
            status=status,
            attempts=int(d.get("attempts", 0)),
            feedback=d.get("feedback"),
            meta=dict(d.get("meta") or {}),
        )
