"""Helpers shared by the backends: encoding, the append checks, URL options, agenda ordering."""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from ..errors import detached
from ..kernel.canonical import JSON, CanonicalError, canonical_bytes, sha256_hex
from ..kernel.patch import ApplyError, OpError, apply_ops, check_ops
from ..kernel.record import Record
from ..kernel.statehash import state_hash
from ..scheduling.invocation import Invocation
from ..vocabulary import OUTCOME_ACCEPTED
from .base import (
    AgendaChanges,
    Conflict,
    DuplicateInvocationCommit,
    Snapshot,
    Store,
    StoreCorrupt,
    StoreError,
)

COMPRESS_MIN = 512
"""Blobs (states, snapshots) at least this long are stored zlib-compressed when that is smaller."""

_ZLIB_FIRST = 0x78  # every zlib stream starts with 0x78 here; no JSON text starts with 'x'

# Preset dictionaries for small blobs (records, invocations): the skeleton of their canonical
# JSON, so the keys cost almost nothing. A blob packed with one starts with its id byte (no JSON
# text starts with a control byte). These bytes are part of the storage format: never change
# a published dictionary, add a new id instead.
RECORD_DICT = (
    b'{"event":null,"hash":"","invocation":"","kind":"proposal","meta":{},"outcome":"accepted",'
    b'"patch":"[{\\"op\\":\\"add\\",\\"path\\":\\"/","prev":"","reason":null,"seq":,"stage":null,'
    b'"state_after":"","state_before":"","usage":{"component":"worker","latency_ms":0.0,"tokens_in":0,'
    b'"tokens_out":0},"version":,"view_hash":null,"worker":"'
)
INVOCATION_DICT = (
    b'{"attempts":0,"binding":[""],"event":{"op":"add","path":"/","version":},"feedback":null,"id":"",'
    b'"meta":{},"order":,"priority":0,"rule":null,"status":"pending","worker":"'
)
DICT_RECORD, DICT_INVOCATION = 1, 2
_SMALL_LEVEL, _SMALL_WBITS, _SMALL_MEMLEVEL = 6, -11, 4
"""The compressor of small blobs: a 2 KiB window and memLevel 4. A fresh deflate state per blob
with zlib's defaults (32 KiB window, memLevel 9) allocates and clears ~400 KiB (its hash table
alone is 128 KiB), which dominated the cost of a ~1 KB record in a running store; this one needs
~20 KiB and gives the same size for records of a few KB (level 1 saved no measurable CPU here
and made records ~3% larger). Raw deflate streams with a smaller window decode with the default
32 KiB one, so ``unpack`` reads blobs of either setting."""
_DICTS = {DICT_RECORD: RECORD_DICT, DICT_INVOCATION: INVOCATION_DICT}


def now() -> float:
    """Wall-clock seconds (leases and timestamps only; never part of a record)."""
    return time.time()


def encode_json(value: JSON, *, compress: bool = True) -> bytes:
    """Canonical JSON bytes, zlib-compressed when long enough and smaller that way."""
    try:
        raw = canonical_bytes(value)
    except CanonicalError as exc:
        raise detached(StoreError(f"value is not storable as JSON: {exc}")) from None
    return pack(raw) if compress else raw


def pack(raw: bytes) -> bytes:
    """Compress ``raw`` if that saves space (see COMPRESS_MIN)."""
    if len(raw) >= COMPRESS_MIN:
        packed = zlib.compress(raw, 1)  # level 1: snapshots are written in the append path
        if len(packed) < len(raw):
            return packed
    return raw


def pack_small(raw: bytes, dict_id: int) -> bytes:
    """Raw-deflate ``raw`` with a preset dictionary (records, invocations) if that is smaller."""
    comp = zlib.compressobj(_SMALL_LEVEL, zlib.DEFLATED, _SMALL_WBITS, _SMALL_MEMLEVEL, zdict=_DICTS[dict_id])
    packed = bytes([dict_id]) + comp.compress(raw) + comp.flush()
    return packed if len(packed) < len(raw) else raw


def unpack(data: bytes | memoryview, where: str) -> bytes:
    """Inverse of pack and pack_small; ``StoreCorrupt`` (naming ``where``) for a damaged blob."""
    raw = bytes(data)
    zdict = _DICTS.get(raw[0]) if raw else None
    if zdict is not None:
        try:
            dec = zlib.decompressobj(-15, zdict=zdict)
            out = dec.decompress(raw[1:]) + dec.flush()
        except zlib.error as exc:
            raise detached(StoreCorrupt(where, f"compressed data is damaged ({exc})")) from None
        if not dec.eof:
            raise StoreCorrupt(where, "compressed data is truncated")
        return out
    if raw[:1] == bytes([_ZLIB_FIRST]):
        try:
            return zlib.decompress(raw)
        except zlib.error as exc:
            raise detached(StoreCorrupt(where, f"compressed data is damaged ({exc})")) from None
    return raw


def decode_json(data: bytes | memoryview | None, where: str) -> JSON:
    """Decode a stored JSON blob; ``StoreCorrupt`` naming ``where`` when it does not parse."""
    if data is None:
        raise StoreCorrupt(where, "missing value")
    raw = unpack(data, where)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise detached(StoreCorrupt(where, f"stored JSON does not parse ({exc})")) from None


_EVENT_PREFIX = b'{"event":'


def sealed_bytes(record: Record) -> bytes:
    """``record.to_bytes()`` after checking the record is sealed (its hash matches its content), with one
    canonical encoding of the record instead of two: the hashed body's bytes are checked against
    ``record.hash``, and the ``hash`` member is spliced in where canonical key order puts it
    (right after ``event``, the first key). ``StoreError`` when the record is not sealed."""
    try:
        body = canonical_bytes(record.body())
    except CanonicalError as exc:
        raise detached(StoreError(f"record {record.seq} is not storable as JSON: {exc}")) from None
    if not record.hash or sha256_hex(body) != record.hash:
        raise StoreError(f"record {record.seq} is not sealed (its hash does not match its content)")
    cut = len(_EVENT_PREFIX) + len(canonical_bytes(record.event))
    return b'%s,"hash":"%s"%s' % (body[:cut], record.hash.encode("ascii"), body[cut:])


def decode_record(data: bytes | memoryview | None, where: str, seq: int) -> Record:
    """Decode a stored record and check it is the one at ``seq`` with an intact hash."""
    value = decode_json(data, where)
    try:
        rec = Record.from_json(value)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise detached(StoreCorrupt(where, f"record {seq} is malformed ({type(exc).__name__}: {exc})")) from None
    if rec.seq != seq:
        raise StoreCorrupt(where, f"record stored at seq {seq} says seq {rec.seq}")
    return rec


def encode_invocation(inv: Invocation, *, compress: bool = True) -> bytes:
    """Canonical JSON of an invocation (the row keeps its queryable fields as columns too),
    deflated with the invocation dictionary when ``compress`` and that is smaller."""
    try:
        raw = canonical_bytes(inv.to_json())
    except CanonicalError as exc:
        raise detached(StoreError(f"invocation {inv.id!r} is not storable as JSON: {exc}")) from None
    return pack_small(raw, DICT_INVOCATION) if compress else raw


def decode_invocation(data: bytes | memoryview | None, status: str, attempts: int, where: str) -> Invocation:
    """Rebuild an invocation from its row (status and attempts come from the columns)."""
    value = decode_json(data, where)
    if isinstance(value, dict):
        # The columns win over the blob: set them before building the object, instead of a
        # dataclasses.replace afterwards (which introspects the fields on every call, and a
        # claim always changes the status).
        value["status"], value["attempts"] = status, attempts
    try:
        return Invocation.from_json(value)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise detached(StoreCorrupt(where, f"invocation row is malformed ({type(exc).__name__}: {exc})")) from None


def expected_version_after(record: Record, version: int) -> int:
    """The version a record must carry when appended at ``version``."""
    return version + 1 if record.outcome == OUTCOME_ACCEPTED else version


def check_position(
    board_id: str,
    record: Record,
    *,
    last_seq: int,
    last_hash: str,
    version: int,
    expected_version: int | None,
) -> None:
    """The CAS of an append: raise Conflict unless ``record`` continues the stored log."""
    if record.seq != last_seq + 1:
        raise Conflict(
            board_id,
            f"record {record.seq} was prepared after record {record.seq - 1}, but the log ends at {last_seq}",
            expected_seq=record.seq - 1,
            actual_seq=last_seq,
        )
    if record.prev != last_hash:
        raise Conflict(
            board_id,
            f"record {record.seq} chains to {record.prev[:12]}, but the last record is {last_hash[:12]}",
            expected_seq=record.seq - 1,
            actual_seq=last_seq,
        )
    if expected_version is not None and expected_version != version:
        raise Conflict(
            board_id,
            f"expected version {expected_version}, the board is at version {version}",
            expected_seq=record.seq - 1,
            actual_seq=last_seq,
        )
    want = expected_version_after(record, version)
    if record.version != want:
        raise StoreError(
            f"board {board_id}: record {record.seq} ({record.outcome}) carries version {record.version}, "
            f"expected {want} after version {version}"
        )


def check_changes(board_id: str, changes: AgendaChanges | None) -> None:
    """Checks of agenda changes that need no database: an invocation completed twice in one append."""
    if changes is None:
        return
    seen: set[str] = set()
    for inv_id in changes.complete:
        if inv_id in seen:
            raise DuplicateInvocationCommit(board_id, inv_id, None)
        seen.add(inv_id)


def snapshot_due(seq: int, snapshot_seq: int, every: int) -> bool:
    """True when ``every`` records have been appended since the last snapshot."""
    return every > 0 and seq - snapshot_seq >= every


def build_snapshot(
    board_where: str, start: Snapshot | None, initial: JSON, records: Iterable[Record], *, owned: bool = False
) -> Snapshot | None:
    """Apply the accepted patches of ``records`` to the start state; the result must reproduce
    the last record's state hash (else ``StoreCorrupt``). None when there are no records at all.
    The start state is copied first, unless ``owned`` says the caller hands it over (a state
    it just decoded, say): the patches are applied to it in place."""
    base = start.state if start is not None else initial
    state = base if owned else orjson.loads(orjson.dumps(base))
    version = start.version if start is not None else 0
    last: Record | None = None
    for rec in records:
        if rec.outcome == OUTCOME_ACCEPTED:
            try:
                applied = apply_ops(state, check_ops(orjson.loads(rec.patch or "null")))
            except (orjson.JSONDecodeError, OpError, ApplyError) as exc:
                raise detached(
                    StoreCorrupt(board_where, f"record {rec.seq}: accepted patch does not apply ({exc})")
                ) from None
            state = applied.root
            version = rec.version
        last = rec
    if last is None:
        return start
    digest = state_hash(state)
    if digest != last.state_after:
        raise StoreCorrupt(board_where, f"record {last.seq}: replayed state hash does not match the log")
    return Snapshot(state, version, last.seq, last.hash, digest)


def agenda_sort_key(inv: Invocation) -> tuple[int, int]:
    """Agenda order: higher priority first, then lower order."""
    return (-inv.priority, inv.order)


def split_options(url: str, known: set[str]) -> tuple[str, dict[str, str]]:
    """Remove slateboard's own query parameters (``known``) from ``url``; returns both parts."""
    parts = urlsplit(url)
    mine: dict[str, str] = {}
    rest: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in known:
            mine[key] = value
        else:
            rest.append((key, value))
    clean = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment))
    return clean, mine


def int_option(options: dict[str, str], key: str, default: int, *, minimum: int = 0) -> int:
    """Parse an integer URL option (``StoreError`` when it is not one)."""
    if key not in options:
        return default
    try:
        value = int(options[key])
    except ValueError:
        raise detached(StoreError(f"store option {key}={options[key]!r} is not an integer")) from None
    if value < minimum:
        raise StoreError(f"store option {key}={value} must be at least {minimum}")
    return value


def redact(url: str) -> str:
    """The URL without a password (for messages)."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url


def json_meta(meta: dict[str, Any] | None) -> bytes:
    """Canonical bytes of a meta dict."""
    return encode_json(meta or {}, compress=False)


async def compact(store: Store, board_id: str, where: str) -> Snapshot | None:
    """Store.compact for any backend: build a snapshot at the last record from the stored
    snapshot and the records after it, and store it when it is newer; ``where`` names the
    database in errors."""
    loaded = await store.load_board(board_id)
    snap = build_snapshot(f"{where} board {board_id}", loaded.snapshot, loaded.initial_state, loaded.records)
    if snap is not None and snap is not loaded.snapshot:
        await store.write_snapshot(
            board_id,
            snap.state,
            version=snap.version,
            seq=snap.seq,
            last_hash=snap.last_hash,
            state_hash=snap.state_hash,
        )
    return snap
