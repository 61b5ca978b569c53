"""Strict JSON parsing and checking for untrusted proposals.

Model output and worker returns are untrusted: this module turns them into plain JSON values
or says precisely why it cannot (duplicate keys, NaN, too deep, too large, non-JSON types).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, TypeAlias

from ..errors import SlateboardError, UsageError
from .canonical import JSON


@dataclass(frozen=True, slots=True)
class JsonLimits:
    """Bounds on untrusted JSON: total bytes, nesting depth, and integer magnitude."""

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_int_bits: int = 63


REPLY_LIMITS = JsonLimits(max_bytes=1 << 20, max_depth=256)
"""Bounds on a model's reply that is read outside the kernel (a coordinator's choice, the
Architect's blueprint, a tool call, the patch an LLM worker's reply holds): 1 MiB and 256
levels, far above anything a model sends on purpose and far below what hurts the process.
Replies that become proposals are then held to the blueprint's own, lower, limits by the kernel."""


class JsonValueError(UsageError, ValueError):
    """An untrusted value is not acceptable JSON; ``path`` names where, ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path or '/'}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class _DuplicateKey(SlateboardError, ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise JsonValueError("", f"not valid JSON: {name} is not a JSON number")


# One token of JSON text for the nesting pre-scan: a string (its closing quote optional, so a
# match never fails and every character is consumed once: linear time) or a bracket. The string
# is written unrolled (runs of plain characters, then an escape): the same matches as
# '"(?:[^"\\]|\\.)*"?' at a fraction of the cost, and the brackets come out of the same scan
# instead of a second pass over the text with its strings removed.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of JSON(-like) text, ignoring brackets inside strings.

    Linear time and no recursion, so it is safe on hostile text of any depth: callers check
    it before handing text to a recursive decoder (``json`` raises RecursionError past about
    a thousand levels, at a depth that depends on the caller's stack).
    """
    if "[" not in text and "{" not in text:
        return 0
    delta = _DELTA.get  # a string token counts 0
    return max(0, max(accumulate(delta(t, 0) for t in _TOKEN.findall(text)), default=0))


def utf8_size(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes (a lone surrogate counts as its 3 bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def utf8_text(text: str) -> str:
    """``text`` with every lone surrogate (which no UTF-8 text, hence no record, can hold: a model
    may send one as a ``\\ud800`` escape) replaced by U+FFFD; any other text is returned as is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def over_limits(text: str, limits: JsonLimits, what: str = "proposal") -> str | None:
    """Why JSON(-like) ``text`` is over ``limits`` (its size in UTF-8 bytes, then its bracket
    nesting), or None when it is within them. Linear time and no recursion: the one check every
    untrusted text (a proposal, a model's reply) passes before any decoder sees it. The reason
    names the bound, e.g. ``reply is 10485762 bytes, over the limit of 1048576``.
    """
    # A character is 1 to 4 bytes: the exact size is needed only between those bounds.
    if 4 * len(text) > limits.max_bytes and (size := utf8_size(text)) > limits.max_bytes:
        return f"{what} is {size} bytes, over the limit of {limits.max_bytes}"
    # The nesting cannot exceed the number of opening brackets: a reply or patch of a few
    # brackets (nearly every one) skips the tokenising scan.
    if text.count("[") + text.count("{") <= limits.max_depth + 1:
        return None
    depth = nesting_depth(text)
    if depth > limits.max_depth + 1:  # +1: check_json_value counts the root as depth 0
        return f"value nests deeper than {limits.max_depth} levels ({depth} brackets deep)"
    return None


def parse_json_text(text: str | bytes, limits: JsonLimits) -> JSON:
    """Parse untrusted JSON text strictly; raises JsonValueError naming the fault.

    Rejects duplicate object keys, NaN/Infinity, text over ``limits.max_bytes``, nesting deeper
    than ``limits.max_depth`` and integers wider than ``limits.max_int_bits`` bits.
    """
    if isinstance(text, bytes):
        if len(text) > limits.max_bytes:
            raise JsonValueError("", f"proposal is {len(text)} bytes, over the limit of {limits.max_bytes}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonValueError("", f"proposal is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    fault = over_limits(text, limits)
    if fault is not None:
        raise JsonValueError("", fault)
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        raise JsonValueError("", f"duplicate object key {exc.args[0]!r}") from None
    except JsonValueError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonValueError("", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise JsonValueError("", f"not valid JSON: {exc}") from None
    check_json_value(value, limits)
    return value


def check_json_value(value: Any, limits: JsonLimits, path: str = "") -> None:
    """Check that a Python value is plain, finite JSON within ``limits``.

    Raises JsonValueError with the pointer of the first offending node. A value whose JSON
    text would certainly exceed ``limits.max_bytes`` is refused during the walk, from a lower
    bound on its encoded size, so an oversized value is never serialised whole first.
    """
    # Each node's pointer is kept as (parent's, token) and written out only for an error: a
    # valid value (every accepted proposal) never pays for formatting its paths.
    stack: list[tuple[Any, _Where, int]] = [(value, path, 0)]
    bound = 1 << limits.max_int_bits
    size = 0  # a lower bound on the canonical JSON text's length in bytes (1 per scalar at least)
    while stack:
        node, where, depth = stack.pop()
        if depth > limits.max_depth:
            raise JsonValueError(_pointer(where), f"value nests deeper than {limits.max_depth} levels")
        size += len(node) + 2 if isinstance(node, str) else 2 if isinstance(node, (dict, list)) else 1
        if size > limits.max_bytes:
            raise JsonValueError("", f"proposal is over the limit of {limits.max_bytes} bytes")
        if node is None or isinstance(node, (bool, str)):
            continue
        if isinstance(node, int):
            if not -bound <= node < bound:
                raise JsonValueError(_pointer(where), f"integer {node} is wider than {limits.max_int_bits} bits")
        elif isinstance(node, float):
            if math.isnan(node) or math.isinf(node):
                raise JsonValueError(_pointer(where), f"{node!r} is not a JSON number")
        elif isinstance(node, dict):
            size += max(0, len(node) - 1)  # commas
            for key, child in node.items():
                if not isinstance(key, str):
                    raise JsonValueError(_pointer(where), f"object key {key!r} is not a string")
                size += len(key) + 3  # its quotes and the colon
                stack.append((child, (where, key), depth + 1))
        elif isinstance(node, list):
            size += max(0, len(node) - 1)  # commas
            if size > limits.max_bytes:  # before pushing a million children
                raise JsonValueError("", f"proposal is over the limit of {limits.max_bytes} bytes")
            for i, child in enumerate(node):
                stack.append((child, (where, i), depth + 1))
        else:
            raise JsonValueError(_pointer(where), f"{type(node).__name__} is not a JSON type")


_Where: TypeAlias = "str | tuple[_Where, str | int]"
"""A node's JSON pointer, unwritten: the base pointer, or (the parent's, key or index)."""


def _pointer(where: _Where) -> str:
    """The JSON pointer text of an unwritten pointer (keys escaped as RFC 6901 says)."""
    tokens: list[str] = []
    while isinstance(where, tuple):
        where, token = where
        tokens.append(token.replace("~", "~0").replace("/", "~1") if isinstance(token, str) else str(token))
    return where + "".join("/" + t for t in reversed(tokens))


def json_equal(a: JSON, b: JSON) -> bool:
    """JSON equality (RFC 6902 ``test``): numbers compare by value, booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def type_name(value: JSON) -> str:
    """The JSON type name of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
