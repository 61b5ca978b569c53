"""Value schemas as a decoder gets them: ``$ref`` hoisted into ``$defs``, strings tightened,
``x-refers-to`` annotations turned into the values the state holds, regexes for large groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from ...kernel.canonical import JSON, canonical_str
from ...kernel.pointer import (
    MISSING,
    PointerError,
    Tokens,
    expand,
    format_pointer,
    is_array_index,
    parse_pointer,
    resolve,
)
from ._targets import _is_plain_map

if TYPE_CHECKING:
    from ...kernel.schema import SchemaIndex

SAFE_MAX_LENGTH = 1000
"""The longest string a JSON-safe string pattern admits (see ``_tighten_strings``)."""

ANY_VALUE: dict[str, Any] = {"type": ["string", "number", "boolean", "object", "array", "null"]}
"""The schema used where a fragment allows anything (``true`` / ``{}``): equivalent for
validation, and it keeps grammar converters that read ``{}`` as "any object" honest."""

_SUBSCHEMA = frozenset(
    {
        "items", "additionalItems", "contains", "not", "if", "then", "else", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalProperties", "contentSchema",
    }
)  # fmt: skip
_SUBSCHEMA_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SUBSCHEMA_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
_SAFE_CHAR = r'[^"\\\x00-\x1f]'
_MAP_KEY = r"([^/~]|~[01])+"
_INDEX = r"(0|[1-9][0-9]*)"
_REGEX_META = set("\\.^$|?*+()[]{}")


class _Refs:
    """Hoists ``$ref`` targets of the state schema into ``$defs`` under unique names."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.names: dict[str, str] = {}
        self.defs: dict[str, Any] = {}

    def _get(self, ref: str) -> Any:
        if ref in ("#", ""):
            return self.root
        try:
            node = resolve(self.root, ref[1:])
        except PointerError:
            return MISSING
        return node

    def rewrite(self, node: Any) -> Any:
        """A copy of subschema ``node`` with local references renamed into ``$defs``."""
        if node is True or node == {}:
            return dict(ANY_VALUE)
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$schema", "$id", "$defs", "definitions", "$comment"):
                continue
            if key == "$ref" and isinstance(value, str) and (value == "#" or value.startswith("#/")):
                out[key] = "#/$defs/" + self._name(value)
            elif key in _SUBSCHEMA:
                out[key] = value if (key == "additionalProperties" and value is True) else self.rewrite(value)
            elif key in _SUBSCHEMA_LIST and isinstance(value, list):
                out[key] = [self.rewrite(v) for v in value]
            elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
                out[key] = {k: self.rewrite(v) for k, v in value.items()}
            else:
                out[key] = value
        return out

    def _name(self, ref: str) -> str:
        name = self.names.get(ref)
        if name is None:
            name = self.names[ref] = f"ref{len(self.names)}"
            target = self._get(ref)
            self.defs[name] = False if target is MISSING else self.rewrite(target)
        return name


def self_contained(root: Any, node: Any) -> dict[str, Any]:
    """Subschema ``node`` of the state schema ``root`` as one schema a decoder can take alone:
    the ``$ref`` targets it reaches hoisted into its own ``$defs`` (``true``/``{}``: ANY_VALUE)."""
    refs = _Refs(root)
    body = refs.rewrite(node)
    out: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if refs.defs:
        out["$defs"] = refs.defs
    return out


def _tighten_strings(node: Any, limit: int | None, safe: bool) -> Any:
    """Tighten plain string schemas (no enum/const/pattern/format); the result is stricter, so
    every guarantee still holds. ``limit`` adds ``maxLength`` where there is none; ``safe``
    replaces the length bounds by the equivalent ``pattern`` over characters that need no
    escaping in JSON (no quote, backslash or control character): grammar converters that emit a
    pattern's characters verbatim then produce valid JSON text, and a model cannot end a string
    with a raw newline and ramble on inside it. The pattern's upper bound is at most
    ``SAFE_MAX_LENGTH``: llama.cpp unrolls a bounded repetition into nested rules and refuses
    (and its Python binding then crashes the process) from about 2,000 of them."""
    if (limit is None and not safe) or not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SUBSCHEMA:
            out[key] = _tighten_strings(value, limit, safe)
        elif key in _SUBSCHEMA_LIST and isinstance(value, list):
            out[key] = [_tighten_strings(v, limit, safe) for v in value]
        elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
            out[key] = {k: _tighten_strings(v, limit, safe) for k, v in value.items()}
        else:
            out[key] = value
    types = node.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    if not is_string or ({"enum", "const", "pattern", "format"} & node.keys()):
        return out
    lo = int(node.get("minLength", 0))
    hi = node.get("maxLength")
    if hi is None and limit is not None:
        hi = max(limit, lo)
        out["maxLength"] = hi
    if safe:
        unbounded = "*" if lo == 0 else ("+" if lo == 1 else f"{{{lo},}}")
        top = None if hi is None else min(int(hi), max(SAFE_MAX_LENGTH, lo))
        count = unbounded if top is None else f"{{{lo},{top}}}"
        out["pattern"] = f"^{_SAFE_CHAR}{count}$"
    return out


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def _regex_for(
    schema: SchemaIndex,
    paths: Sequence[Tokens],
    open_positions: frozenset[int] = frozenset(),
) -> str | None:
    """A regex matching every path in ``paths`` and only paths with the same schema location,
    or None when the varying segments are not array indices or keys of a plain map."""
    n = len(paths[0])
    if any(len(p) != n for p in paths):
        return None
    parts: list[str] = []
    for i in range(n):
        tokens = {p[i] for p in paths}
        if len(tokens) == 1 and i not in open_positions:
            parts.append("/" + _escape(format_pointer([next(iter(tokens))])[1:]))
            continue
        if i not in open_positions and all(is_array_index(t) or t == "-" for t in tokens):
            alts = [_INDEX] if any(is_array_index(t) for t in tokens) else []
            if "-" in tokens:
                alts.append("-")
            parts.append("/" + (alts[0] if len(alts) == 1 else "(" + "|".join(alts) + ")"))
            continue
        if all(_is_plain_map(schema.fragment(p[:i])) for p in paths):
            parts.append("/" + _MAP_KEY)
            continue
        return None
    return "^" + "".join(parts) + "$"


REFERS_TO = "x-refers-to"
"""The schema annotation naming the pointer pattern whose values a node refers to."""


def _referred_values(pattern: Any, node: dict[str, Any], state: JSON, limit: int) -> tuple[list[JSON], bool]:
    """The values at ``pattern`` in ``state`` that ``node`` (without the annotation) accepts,
    without duplicates, in state order: the last ``limit`` of them, and whether some were cut."""
    if not isinstance(pattern, str):
        return [], False
    try:
        tokens = parse_pointer(pattern)
    except PointerError:
        return [], False
    plain = {k: v for k, v in node.items() if k != REFERS_TO}
    if "$ref" in canonical_str(plain):
        return [], False  # references resolve against the whole state schema: the kernel judges
    try:
        validator = jsonschema_rs.validator_for(plain)
    except Exception:  # an invalid fragment: leave it to the kernel
        return [], False
    values: list[JSON] = []
    seen: set[str] = set()
    for path in expand(state, tokens):
        value = resolve(state, path)
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            continue
        key = canonical_str(value)
        if key in seen or not validator.is_valid(value):
            continue
        seen.add(key)
        values.append(value)
    cut = len(values) > limit
    return (values[-limit:] if cut else values), cut


def _resolve_references(node: Any, state: JSON, limit: int) -> tuple[Any, bool]:
    """``node`` with every ``x-refers-to`` annotation replaced by the ``enum`` of the values it
    refers to (see References in the module docstring); and whether an enum was cut."""
    if not isinstance(node, dict):
        return node, False
    cut = False
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SUBSCHEMA:
            out[key], c = _resolve_references(value, state, limit)
        elif key in _SUBSCHEMA_LIST and isinstance(value, list):
            items = [_resolve_references(v, state, limit) for v in value]
            out[key], c = [v for v, _ in items], any(c for _, c in items)
        elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
            members = {k: _resolve_references(v, state, limit) for k, v in value.items()}
            out[key], c = {k: v for k, (v, _) in members.items()}, any(c for _, c in members.values())
        else:
            out[key], c = value, False
        cut = cut or c
    if REFERS_TO not in node:
        return out, cut
    values, c = _referred_values(node[REFERS_TO], node, state, limit)
    if not values:
        return {k: v for k, v in out.items() if k != REFERS_TO}, cut
    return {"enum": values}, cut or c
