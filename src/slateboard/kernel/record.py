"""Transaction log records: one per proposal (accepted, rejected, no-op) or kernel action.

Records form a hash chain: each holds the hash of the previous record, and its own hash is
SHA-256 over its canonical JSON without the ``hash`` field. Patches are kept as canonical JSON
text, so a record never shares objects with the live state and is immutable once built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import orjson

from ..errors import InvalidInput, detached
from ..vocabulary import (
    APPROVAL_DECISION_META,
    APPROVAL_KIND,
    APPROVAL_PATCH_META,
    APPROVAL_RECORD_META,
    APPROVAL_WORKER_META,
    APPROVED,
    CIRCUIT_KIND,
    CONTROL_KIND,
    EVENT_META,
    GENESIS_META,
    INVOCATION_KIND,
    MODEL_META,
    OUTCOME_ACCEPTED,
    OUTCOMES,
    PROPOSAL_KIND,
    QUARANTINE_KIND,
    RECORD_KINDS,
    REFUSED,
    RUN_KIND,
    SPEND_KIND,
    STAGE_KIND,
    TIMER_KIND,
    Outcome,
    RecordKind,
)
from .canonical import JSON, JSONValue, canonical_bytes, hash_json, sha256_hex
from .statehash import state_hash

# The record kinds, outcomes and meta keys live in ``slateboard.vocabulary``; this module, their
# first home, re-exports them.
__all__ = [
    "APPROVAL_DECISION_META",
    "APPROVAL_KIND",
    "APPROVAL_PATCH_META",
    "APPROVAL_RECORD_META",
    "APPROVAL_WORKER_META",
    "APPROVED",
    "CIRCUIT_KIND",
    "CONTROL_KIND",
    "EVENT_META",
    "GENESIS",
    "GENESIS_META",
    "INVOCATION_KIND",
    "MODEL_META",
    "OUTCOMES",
    "PROPOSAL_KIND",
    "QUARANTINE_KIND",
    "RECORD_KINDS",
    "REFUSED",
    "RUN_KIND",
    "SPEND_KIND",
    "STAGES",
    "STAGE_KIND",
    "TIMER_KIND",
    "Outcome",
    "Record",
    "RecordKind",
    "Stage",
    "Usage",
    "board_genesis",
    "board_genesis_hash",
    "board_genesis_problem",
    "genesis_binding",
    "genesis_problem",
    "is_legacy_genesis",
    "is_unbound",
]

GENESIS = "0" * 64
"""The ``prev`` of a board's first record."""


def genesis_binding(blueprint_digest: str, initial_state_hash: str) -> dict[str, JSON]:
    """The ``meta[GENESIS_META]`` value of a board's first record (see GENESIS_META)."""
    return {"blueprint": blueprint_digest, "initial_state": initial_state_hash}


def genesis_problem(first: Record, blueprint_digest: str, initial_state_hash: str) -> str | None:
    """Why ``first`` (a board's record 1) does not bind this blueprint and initial state, or
    None when it does. A log written before the binding existed carries none: that is
    reported as ``legacy`` (see ``is_legacy_genesis``), not as a mismatch."""
    bound = first.meta.get(GENESIS_META)
    if bound is None:
        return None
    return _binding_problem(bound, blueprint_digest, initial_state_hash)


def board_genesis(blueprint_json: JSON, initial_state: JSON) -> dict[str, JSON]:
    """The genesis binding a store keeps in a board's ``meta[GENESIS_META]`` when it creates the
    board (issue 29, R1): the hash of the stored blueprint's canonical JSON (for a board created
    from a compiled blueprint, its digest) and the hash of the stored initial state. It binds a
    board that has no record yet; ``replay --verify``, ``resume`` and ``anchor`` check it."""
    return {"blueprint": hash_json(blueprint_json), "initial_state": state_hash(initial_state)}


def board_genesis_hash(blueprint_json: JSON, initial_state: JSON) -> str:
    """The hash an anchor signs for a board's record 0: that of its ``board_genesis``."""
    return hash_json(board_genesis(blueprint_json, initial_state))


def board_genesis_problem(meta: dict[str, JSON], blueprint_json: JSON, initial_state: JSON) -> str | None:
    """Why a board's stored blueprint or initial state no longer match the binding its store
    wrote when the board was created, or None when they match or the board has no binding (a
    board created before the binding existed: ``unbound``, see ``is_unbound``)."""
    bound = meta.get(GENESIS_META)
    if bound is None:
        return None
    now = board_genesis(blueprint_json, initial_state)
    return _binding_problem(bound, str(now["blueprint"]), str(now["initial_state"]))


def is_unbound(meta: dict[str, JSON]) -> bool:
    """True when a board's meta carries no genesis binding (it predates issue 29's R1)."""
    return GENESIS_META not in meta


def _binding_problem(bound: JSON, blueprint_digest: str, initial_state_hash: str) -> str | None:
    if not isinstance(bound, dict):
        return "the genesis binding is malformed"
    wrong = []
    if bound.get("blueprint") != blueprint_digest:
        wrong.append(
            f"the blueprint differs from the one the log was started with "
            f"(digest {str(bound.get('blueprint'))[:12]}, stored blueprint {blueprint_digest[:12]})"
        )
    if bound.get("initial_state") != initial_state_hash:
        wrong.append(
            f"the initial state differs from the one the log was started with "
            f"(hash {str(bound.get('initial_state'))[:12]}, stored initial state {initial_state_hash[:12]})"
        )
    return "; ".join(wrong) or None


def is_legacy_genesis(first: Record) -> bool:
    """True when a board's record 1 predates the genesis binding (its blueprint and initial
    state are then not covered by the chain)."""
    return first.seq == 1 and GENESIS_META not in first.meta


Stage = Literal[
    "parse", "ops", "authorise", "stale", "preconditions", "apply", "schema", "invariants",
    "approval", "internal", "model", "decline",
]  # fmt: skip
"""The kernel stage that rejected (or held) a proposal, in the order the stages run; ``decline``
marks the no-op of a worker that declined (``{"decline": reason}``)."""

STAGES: tuple[Stage, ...] = get_args(Stage)


@dataclass(frozen=True, slots=True)
class Usage:
    """Cost of one invocation: tokens in/out and latency; ``component`` attributes it.

    ``cache_read`` and ``cache_write`` are the input tokens the provider served from its prompt
    cache and wrote to it (part of ``tokens_in``, billed at their own rates). They are in the
    JSON form only when non-zero, so a record without them has the bytes (and hash) it always had.
    """

    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    component: str = "worker"
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, JSONValue]:
        """Plain JSON form."""
        out: dict[str, JSONValue] = {
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "latency_ms": round(self.latency_ms, 3),
            "component": self.component,
        }
        if self.cache_read:
            out["cache_read"] = self.cache_read
        if self.cache_write:
            out["cache_write"] = self.cache_write
        return out

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
            int(data.get("cache_read", 0)),
            int(data.get("cache_write", 0)),
        )


@dataclass(frozen=True, slots=True)
class Record:
    """One entry of a board's transaction log (see module docstring).

    ``version`` is the state version after the record: it grows by one for each accepted
    proposal and stays put for rejections, no-ops and actions.
    """

    seq: int
    kind: str
    outcome: Outcome
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

    def to_json(self) -> dict[str, JSONValue]:
        """All fields including ``hash``."""
        out = self.body()
        out["hash"] = self.hash
        return out

    def to_bytes(self) -> bytes:
        """Canonical JSON bytes of ``to_json()`` (the persisted form)."""
        return canonical_bytes(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        """Rebuild a record from its JSON form; raises ValueError naming the first bad field.

        Strict: exactly the record's keys, each of its type, so an altered stored record is
        refused here instead of being silently repaired.
        """
        if not isinstance(data, dict):
            raise InvalidInput(f"a record must be an object, got {type(data).__name__}")
        keys = set(data)
        if keys != _KEYS:
            missing, extra = sorted(_KEYS - keys), sorted(keys - _KEYS)
            raise InvalidInput(f"record keys differ: missing {missing}, unexpected {extra}")
        for name, types in _TYPES.items():
            value = data[name]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise InvalidInput(f"record field {name!r} has type {type(value).__name__}")
        if data["outcome"] not in OUTCOMES:
            raise InvalidInput(f"record field 'outcome' is {data['outcome']!r}, not one of {', '.join(OUTCOMES)}")
        usage = data["usage"]
        if not _USAGE_KEYS <= set(usage) <= _USAGE_KEYS | _CACHE_KEYS:
            raise InvalidInput(f"record usage keys differ: {sorted(usage)}")
        for key in _CACHE_KEYS & set(usage):
            count = usage[key]
            if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
                raise InvalidInput(f"record usage {key!r} must be a count > 0 (absent when 0), got {count!r}")
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
            usage=Usage.from_json(usage),
            prev=data["prev"],
            meta=data["meta"],
            hash=data["hash"],
        )

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> Record:
        """Parse the persisted form; raises ValueError unless ``raw`` is exactly the canonical
        form of a well-formed record (any altered byte is refused or changes the hash)."""
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise detached(InvalidInput(f"record is not JSON: {exc}")) from None
        record = cls.from_json(parsed)
        if canonical_bytes(parsed) != data:
            raise InvalidInput("record bytes are not in canonical form")
        return record

    def sealed(self) -> Record:
        """A copy with ``hash`` filled in."""
        # Built field by field rather than with dataclasses.replace, which introspects the
        # fields on every call (this runs once per record on the commit path).
        return Record(
            self.seq, self.kind, self.outcome, self.worker, self.invocation, self.event, self.view_hash,
            self.patch, self.stage, self.reason, self.version, self.state_before, self.state_after,
            self.usage, self.prev, self.meta, self.compute_hash(),
        )  # fmt: skip

    @property
    def accepted(self) -> bool:
        """True for a committed state transition."""
        return self.outcome == OUTCOME_ACCEPTED


_KEYS = frozenset(
    {
        "seq", "kind", "outcome", "worker", "invocation", "event", "view_hash", "patch", "stage",
        "reason", "version", "state_before", "state_after", "usage", "prev", "meta", "hash",
    }
)  # fmt: skip
_USAGE_KEYS = frozenset({"tokens_in", "tokens_out", "latency_ms", "component"})
_CACHE_KEYS = frozenset({"cache_read", "cache_write"})
"""Usage keys a record has only when their count is non-zero (prompt-cache tokens)."""
_NONE = type(None)
_TYPES: dict[str, tuple[type, ...]] = {
    "seq": (int,),
    "kind": (str,),
    "outcome": (str,),
    "worker": (str, _NONE),
    "invocation": (str, _NONE),
    "view_hash": (str, _NONE),
    "patch": (str, _NONE),
    "stage": (str, _NONE),
    "reason": (str, _NONE),
    "version": (int,),
    "state_before": (str,),
    "state_after": (str,),
    "usage": (dict,),
    "prev": (str,),
    "meta": (dict,),
    "hash": (str,),
}
