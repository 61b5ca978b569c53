"""The outcome of a run: final state, answer, why it ended, and what it cost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..kernel.canonical import JSON
from ..kernel.record import Record


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens in/out and calls, for one component or worker."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0

    @property
    def total(self) -> int:
        """tokens_in + tokens_out."""
        return self.tokens_in + self.tokens_out

    def to_json(self) -> dict[str, int]:
        """Plain JSON form."""
        return {"tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "calls": self.calls}


def usage_by(records: Iterable[Record], key: str) -> dict[str, TokenUsage]:
    """Sum record usage by ``"component"`` or ``"worker"`` (records without tokens count as calls)."""
    out: dict[str, TokenUsage] = {}
    for rec in records:
        name = rec.usage.component if key == "component" else (rec.worker or "-")
        if rec.kind != "proposal" and rec.usage.tokens_in == 0 and rec.usage.tokens_out == 0:
            continue
        cur = out.get(name, TokenUsage())
        out[name] = TokenUsage(
            cur.tokens_in + rec.usage.tokens_in, cur.tokens_out + rec.usage.tokens_out, cur.calls + 1
        )
    return out


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced. ``end_reason`` says why it stopped (done, agenda_empty, max_steps,
    max_tokens, control, circuit, stuck...); ``usage`` is per component, ``usage_by_worker`` per
    worker; counts are over the whole board log."""

    board_id: str
    state: JSON
    answer: JSON
    end_reason: str
    version: int
    records: int
    accepted: int
    rejected: int
    steps: int
    usage: dict[str, TokenUsage] = field(default_factory=dict)
    usage_by_worker: dict[str, TokenUsage] = field(default_factory=dict)

    @property
    def end_status(self) -> str:
        """How the run ended: solved, exhausted, failed or paused (slateboard.status.end_status)."""
        from ..status import end_status

        return end_status(None, self.end_reason, answered=self.answer is not None)

    @property
    def total_tokens(self) -> int:
        """All tokens of all components."""
        return sum(u.total for u in self.usage.values())

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (``slateboard run --json``)."""
        return {
            "board_id": self.board_id,
            "end_status": self.end_status,
            "end_reason": self.end_reason,
            "answer": self.answer,
            "version": self.version,
            "records": self.records,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "steps": self.steps,
            "usage": {k: v.to_json() for k, v in sorted(self.usage.items())},
            "usage_by_worker": {k: v.to_json() for k, v in sorted(self.usage_by_worker.items())},
            "state": self.state,
        }
