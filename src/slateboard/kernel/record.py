"""Transaction log records: one per proposal (accepted, rejected, no-op) or kernel action.

Records form a hash chain: each holds the hash of the previous record, and its own hash is
SHA-256 over its canonical JSON without the ``hash`` field. Patches are kept as canonical JSON
text, so a record never shares objects with the live state and is immutable once built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .canonical import JSON, canonical_bytes, sha256_hex

GENESIS = "0" * 64
"""The ``prev`` of a board's first record."""

OUTCOMES = ("accepted", "rejected", "noop", "action")
STAGES = (
    "parse", "ops", "authorise", "stale", "preconditions", "apply", "schema", "invariants",
    "internal",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Usage:
    """Cost of one invocation: tokens in/out and latency; ``component`` attributes it."""

    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    component: str = "worker"

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form."""
        return {
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "latency_ms": round(self.latency_ms, 3),
            "component": self.component,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Usage:
        """Inverse of to_json (missing fields take defaults)."""
        if not data:
            return cls()
        return cls(
            int(data.get("tokens_in", 0)),
            int(data.get("tokens_out", 0)),
            float(data.get("latency_ms", 0.0)),
            str(data.get("component", "worker")),
        )


@dataclass(frozen=True, slots=True)
class Record:
    """One entry of a board's transaction log (see module docstring).

    ``version`` is the state version after the record: it grows by one for each accepted
    proposal and stays put for rejections, no-ops and actions.
    """

    seq: int
    kind: str
    outcome: str
    worker: str | None
    invocation: str | None
    event: JSON
    view_hash: str | None
    patch: str | None
    stage: str | None
    reason: str | None
    version: int
    state_before: str
    state_after: str
    usage: Usage
    prev: str
    meta: dict[str, JSON] = field(default_factory=dict)
    hash: str = ""

    def body(self) -> dict[str, JSON]:
        """The hashed fields as plain JSON (everything except ``hash``)."""
        return {
            "seq": self.seq,
            "kind": self.kind,
            "outcome": self.outcome,
            "worker": self.worker,
            "invocation": self.invocation,
            "event": self.event,
            "view_hash": self.view_hash,
            "patch": self.patch,
            "stage": self.stage,
            "reason": self.reason,
            "version": self.version,
            "state_before": self.state_before,
            "state_after": self.state_after,
            "usage": self.usage.to_json(),
            "prev": self.prev,
            "meta": self.meta,
        }

    def compute_hash(self) -> str:
        """SHA-256 of the canonical JSON of ``body()``."""
        return sha256_hex(canonical_bytes(self.body()))

    def to_json(self) -> dict[str, JSON]:
        """All fields including ``hash``."""
        out = self.body()
        out["hash"] = self.hash
        return out

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes of ``to_json()`` (the persisted form)."""
        return canonical_bytes(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        """Rebuild a record from its JSON form; raises KeyError/TypeError on a malformed one."""
        return cls(
            seq=data["seq"],
            kind=data["kind"],
            outcome=data["outcome"],
            worker=data["worker"],
            invocation=data["invocation"],
            event=data["event"],
            view_hash=data["view_hash"],
            patch=data["patch"],
            stage=data["stage"],
            reason=data["reason"],
            version=data["version"],
            state_before=data["state_before"],
            state_after=data["state_after"],
            usage=Usage.from_json(data["usage"]),
            prev=data["prev"],
            meta=data.get("meta") or {},
            hash=data["hash"],
        )

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> Record:
        """Parse the persisted form."""
        return cls.from_json(orjson.loads(raw))

    def sealed(self) -> Record:
        """A copy with ``hash`` filled in."""
        from dataclasses import replace

        return replace(self, hash=self.compute_hash())

    @property
    def accepted(self) -> bool:
        """True for a committed state transition."""
        return self.outcome == "accepted"
