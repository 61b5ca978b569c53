"""Blob encodings: whatever form a store keeps a record or invocation in (deflated with a preset
dictionary, or the plain canonical JSON the memory store keeps), reading it back gives the same
object; ``decode_invocation`` equals the old decode-then-``replace`` computation; ``pack_small``
output stays readable by ``unpack`` (and blobs written with the earlier compressor settings too)."""

from __future__ import annotations

import zlib
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from slateboard.kernel.canonical import JSON, canonical_bytes
from slateboard.kernel.record import GENESIS, Record, Usage
from slateboard.scheduling.invocation import INVOCATION_STATUSES, Invocation, InvocationStatus
from slateboard.stores import _common as c

_text = st.text(max_size=40)
_json: st.SearchStrategy[JSON] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_invocations = st.builds(
    Invocation,
    id=_text,
    worker=_text,
    priority=st.integers(-5, 5),
    order=st.integers(0, 10**6),
    event=_json,
    rule=st.none() | _text,
    binding=st.lists(_text, max_size=3).map(tuple),
    status=st.sampled_from(INVOCATION_STATUSES),
    attempts=st.integers(0, 9),
    feedback=st.none() | _text,
    meta=st.dictionaries(_text, _json, max_size=3),
)


def _old_decode_invocation(data: bytes, status: InvocationStatus, attempts: int) -> Invocation:
    """The computation decode_invocation replaced: decode, then ``replace`` the columns in."""
    inv = Invocation.from_json(c.decode_json(data, "test"))
    if inv.status != status or inv.attempts != attempts:
        inv = replace(inv, status=status, attempts=attempts)
    return inv


@settings(max_examples=300, deadline=None)
@given(
    inv=_invocations,
    status=st.sampled_from(INVOCATION_STATUSES),
    attempts=st.integers(0, 9),
    compress=st.booleans(),
)
def test_decode_invocation_equals_decode_then_replace(
    inv: Invocation, status: InvocationStatus, attempts: int, compress: bool
) -> None:
    blob = c.encode_invocation(inv, compress=compress)
    got = c.decode_invocation(blob, status, attempts, "test")
    assert got == _old_decode_invocation(blob, status, attempts)
    assert got == replace(inv, status=status, attempts=attempts)
    if not compress:
        assert blob == canonical_bytes(inv.to_json())


def _record(seq: int, event: JSON, meta: dict[str, JSON], patch: str | None, reason: str | None) -> Record:
    return Record(
        seq, "proposal", "accepted", "w", "i1", event, None, patch, None, reason,
        seq, "b" * 64, "c" * 64, Usage(1, 2, 0.5, "worker"), GENESIS, meta,
    ).sealed()  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(1, 10**6),
    event=_json,
    meta=st.dictionaries(_text, _json, max_size=3),
    patch=st.none() | st.text(max_size=2000),
    reason=st.none() | _text,
)
def test_records_read_back_the_same_packed_or_plain(
    seq: int, event: JSON, meta: dict[str, JSON], patch: str | None, reason: str | None
) -> None:
    rec = _record(seq, event, meta, patch, reason)
    raw = c.sealed_bytes(rec)
    packed = c.pack_small(raw, c.DICT_RECORD)
    assert c.unpack(packed, "test") == raw
    assert c.decode_record(packed, "test", seq) == c.decode_record(raw, "test", seq) == rec


@settings(max_examples=200, deadline=None)
@given(
    raw=st.binary(max_size=3000) | _json.map(canonical_bytes),
    dict_id=st.sampled_from([c.DICT_RECORD, c.DICT_INVOCATION]),
)
def test_pack_small_round_trips_and_old_blobs_still_read(raw: bytes, dict_id: int) -> None:
    packed = c.pack_small(raw, dict_id)
    assert len(packed) <= len(raw)
    if packed != raw:
        assert c.unpack(packed, "test") == raw
    # Blobs written by earlier versions (level 6, 32 KiB window, memLevel 9) decode unchanged.
    old = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, zdict=c._DICTS[dict_id])
    legacy = bytes([dict_id]) + old.compress(raw) + old.flush()
    assert c.unpack(legacy, "test") == raw
