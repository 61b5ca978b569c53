"""Canonical JSON: the single byte form used for every hash in slateboard.

Canonical JSON here means UTF-8, object keys sorted, no insignificant whitespace, and only
JSON values (no NaN/Infinity, integers within 64 bits). The same Python JSON value always
produces the same bytes, so hashes computed over it are stable across processes and
machines.

Numbers are written as Python holds them: the integer ``1`` gives ``1`` and the float ``1.0``
gives ``1.0``, so the two hash differently although JSON Schema and CEL compare them equal
(this is not RFC 8785's number form, which would write both as ``1``). Normalising numbers now
would change the record and state hashes of every existing log, and replay verifies those byte
for byte, so the form stays as it is; a value that must hash alike whatever its writer should be
stored with one type (issue 28).
"""

from __future__ import annotations

import hashlib
from typing import Any, TypeAlias

import orjson

from ..errors import UsageError

JSONValue: TypeAlias = dict[str, "JSONValue"] | list["JSONValue"] | str | int | float | bool | None
"""A JSON value, checked recursively: what new signatures should use."""

JSON: TypeAlias = Any
"""A JSON value as Python builds it: dict, list, str, int, float, bool or None.

Kept as ``Any`` at the boundaries that read into states and metadata: made ``JSONValue``, it
cost 109 mypy errors in 24 files (each read of a member needs a narrowing ``isinstance``).
Signatures that only build or pass JSON on use ``JSONValue``."""

_OPTS = orjson.OPT_SORT_KEYS


class CanonicalError(UsageError, ValueError):
    """Raised when a value has no canonical JSON form (NaN, huge integer, non-JSON type)."""


def canonical_bytes(value: JSON) -> bytes:
    """Return the canonical JSON bytes of ``value``.

    Raises CanonicalError for values that JSON cannot carry faithfully.
    """
    try:
        return orjson.dumps(value, option=_OPTS)
    except TypeError as exc:  # orjson raises TypeError (JSONEncodeError) for bad types/ints
        raise CanonicalError(str(exc)) from exc


def canonical_str(value: JSON) -> str:
    """Return the canonical JSON text of ``value`` (see canonical_bytes)."""
    return canonical_bytes(value).decode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Return the hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def hash_json(value: JSON) -> str:
    """Return the hex SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
