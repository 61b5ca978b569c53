"""External anchors: signed checkpoints of a board's log, kept outside the database.

The hash chain proves a log is internally consistent, but anyone with write access to the
database can rewrite it end to end, roll back its tail, or change ``boards.last_hash``, and
the chain still verifies. A checkpoint is ``(board, seq, record hash, version, state hash)``
signed with HMAC-SHA256 under a key the operator holds outside the database. Checking a log
against its checkpoints detects a rewritten log (the record at ``seq`` has another hash) and
a rolled-back one (the log no longer reaches ``seq``). Pure functions: the CLI reads and
writes the anchor file (JSON lines, one checkpoint per line) and the key.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import UsageError, detached
from .canonical import canonical_bytes
from .record import Record

__all__ = [
    "MIN_KEY_BYTES",
    "AnchorError",
    "Checkpoint",
    "check_anchors",
    "parse_checkpoints",
    "sign_checkpoint",
    "sign_genesis",
]

MIN_KEY_BYTES = 16
"""Shortest anchor key accepted (128 bits)."""

_FIELDS = ("board_id", "seq", "hash", "version", "state_hash")


class AnchorError(UsageError, ValueError):
    """An unusable key or anchor file; the message says why."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One signed checkpoint: the log of ``board_id`` had record ``seq`` with ``hash``."""

    board_id: str
    seq: int
    hash: str
    version: int
    state_hash: str
    mac: str

    def body(self) -> dict[str, Any]:
        """The signed fields."""
        return {"board_id": self.board_id, "seq": self.seq, "hash": self.hash, "version": self.version,
                "state_hash": self.state_hash}  # fmt: skip

    def to_line(self) -> bytes:
        """The checkpoint as one line of the anchor file."""
        return canonical_bytes({**self.body(), "mac": self.mac}) + b"\n"


def _mac(key: bytes, body: dict[str, Any]) -> str:
    return hmac.new(key, b"slateboard-checkpoint-v1\n" + canonical_bytes(body), hashlib.sha256).hexdigest()


def _check_key(key: bytes) -> None:
    if len(key) < MIN_KEY_BYTES:
        raise AnchorError(f"the anchor key has {len(key)} bytes; use at least {MIN_KEY_BYTES}")


def sign_checkpoint(key: bytes, board_id: str, record: Record) -> Checkpoint:
    """A checkpoint of ``board_id`` at ``record`` (normally its last), signed with ``key``."""
    _check_key(key)
    body = {"board_id": board_id, "seq": record.seq, "hash": record.hash, "version": record.version,
            "state_hash": record.state_after}  # fmt: skip
    return Checkpoint(board_id, record.seq, record.hash, record.version, record.state_after, _mac(key, body))


def sign_genesis(key: bytes, board_id: str, genesis_hash: str, initial_state_hash: str) -> Checkpoint:
    """A checkpoint of a board at record 0 (issue 29, R1): ``genesis_hash`` is the hash of the
    board's genesis binding (``record.board_genesis_hash`` of its stored blueprint and initial
    state), so a later change to either fails ``check_anchors``, records or not."""
    _check_key(key)
    body = {"board_id": board_id, "seq": 0, "hash": genesis_hash, "version": 0, "state_hash": initial_state_hash}
    return Checkpoint(board_id, 0, genesis_hash, 0, initial_state_hash, _mac(key, body))


def parse_checkpoints(data: bytes) -> list[Checkpoint]:
    """Checkpoints from anchor-file bytes; raises AnchorError naming the first bad line."""
    out: list[Checkpoint] = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise detached(AnchorError(f"anchor file line {number}: {exc}")) from None
        if not isinstance(raw, dict) or set(raw) != {*_FIELDS, "mac"}:
            raise AnchorError(f"anchor file line {number}: not a checkpoint object")
        cp = Checkpoint(**raw)
        if not all(_counter(v) for v in (cp.seq, cp.version)) or not all(
            isinstance(v, str) for v in (cp.board_id, cp.hash, cp.state_hash, cp.mac)
        ):
            raise AnchorError(
                f"anchor file line {number}: a field has the wrong type"
                f" (seq and version are whole numbers from 0 to {_MAX_COUNTER}, the others strings)"
            )
        if not all(_hex(v) for v in (cp.hash, cp.state_hash, cp.mac)):
            raise AnchorError(f"anchor file line {number}: hash, state_hash and mac must be lowercase hex")
        out.append(cp)
    return out


_MAX_COUNTER = (1 << 63) - 1
_HEX = frozenset("0123456789abcdef")


def _counter(value: object) -> bool:
    """A seq or version as stores keep them: an int (not a bool) in the 64-bit signed range."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNTER


def _hex(value: str) -> bool:
    # hmac.compare_digest raises TypeError on non-ASCII text: refuse it when the file is read.
    return 0 < len(value) <= 128 and set(value) <= _HEX


def check_anchors(
    key: bytes,
    board_id: str,
    records: Sequence[Record],
    checkpoints: Sequence[Checkpoint],
    genesis_hash: str | None = None,
) -> str | None:
    """Why ``records`` (the board's whole log, seq 1 first) contradict a checkpoint signed with
    ``key`` for ``board_id``, or None when every one of them holds. A checkpoint whose MAC does
    not verify is itself a problem (a forged or damaged anchor file). A record-0 checkpoint
    (``sign_genesis``) is checked against ``genesis_hash``, the board's genesis binding as its
    stored blueprint and initial state give it now (None: record-0 checkpoints are not checked)."""
    _check_key(key)
    mine = [cp for cp in checkpoints if cp.board_id == board_id]
    for cp in mine:
        if not hmac.compare_digest(cp.mac, _mac(key, cp.body())):
            return f"the checkpoint at record {cp.seq} is not signed by this key (forged anchor, or the wrong key)"
        if cp.seq < 0:
            return f"the checkpoint at record {cp.seq} names no record"
        if cp.seq == 0:
            if genesis_hash is not None and not hmac.compare_digest(cp.hash, genesis_hash):
                return "genesis: the blueprint or initial state differs from the signed checkpoint at record 0"
            continue
        if cp.seq > len(records):
            return f"the log ends at record {len(records)}, but a signed checkpoint saw record {cp.seq}: rolled back"
        rec = records[cp.seq - 1]
        if (rec.seq, rec.hash, rec.version, rec.state_after) != (cp.seq, cp.hash, cp.version, cp.state_hash):
            return f"record {cp.seq} differs from the signed checkpoint ({cp.hash[:12]}): the log was rewritten"
    return None
