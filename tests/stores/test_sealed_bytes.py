"""The append prologue encodes a record once: ``sealed_bytes`` is exactly ``Record.to_bytes()``
for any sealed record (whatever its event holds), and refuses one that is not sealed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slateboard.kernel.canonical import JSON
from slateboard.kernel.record import GENESIS, Record, Usage
from slateboard.stores._common import sealed_bytes
from slateboard.stores.base import StoreError


def _record(event: JSON, meta: dict[str, JSON] | None = None) -> Record:
    return Record(
        3, "proposal", "accepted", "w", "i1", event, None, '[{"op":"add","path":"/a","value":1}]', None, None,
        2, "b" * 64, "c" * 64, Usage(1, 2, 0.5, "worker"), GENESIS, meta or {},
    ).sealed()  # fmt: skip


@pytest.mark.parametrize(
    "event",
    [
        None,
        {"op": "add", "path": "/notes/3", "version": 4},
        {"hash": "x", "invocation": "y", "event": {"hash": "z"}},  # the member names it splices around
        ["ünïcødé \u2028", 1.5, {"": None}],
        '","hash":"',
    ],
)
def test_sealed_bytes_are_the_records_canonical_bytes(event: JSON) -> None:
    rec = _record(event, {"hash": "m" * 64})
    assert sealed_bytes(rec) == rec.to_bytes()
    assert Record.from_bytes(sealed_bytes(rec)) == rec


def test_an_unsealed_or_altered_record_is_refused() -> None:
    rec = _record(None)
    with pytest.raises(StoreError, match="record 3 is not sealed"):
        sealed_bytes(replace(rec, hash=""))
    with pytest.raises(StoreError, match="record 3 is not sealed"):
        sealed_bytes(replace(rec, reason="changed after sealing"))
