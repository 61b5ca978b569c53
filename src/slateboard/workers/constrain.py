"""Contract-constrained decoding: the JSON Schema of the proposals a worker is allowed to make.

``proposal_schema(blueprint, worker, state)`` derives, from the worker's write contract, its
allowed ops, the state schema and the current state, a JSON Schema whose instances are patches
the kernel authorises and whose values are well-typed. Passed to a model as ``json_schema`` (the
local model compiles it to a grammar), it lets even a 135M-parameter model emit only authorised,
well-typed proposals.

**Wrapper.** Providers' JSON-schema modes want an object at the top, so the schema describes
``{"patch": [op, ...]}`` (optionally with ``"expand": [handle, ...]``, see slateboard.views);
``slateboard.workers.parse_reply`` unwraps it. ``ConstrainedSchema.patch_schema()`` is the bare
array form.

**Shape.** ``patch`` is an array of 1 to ``max_ops`` operations, each matching one of an ``anyOf``
of op schemas. There is one op schema per (op, value schema) group: ``{"op": {"const": op},
"path": {"enum": [concrete paths]}, "value": <schema fragment at those paths>}``. Concrete paths
come from expanding each write pattern over the *current state*:

* ``/claims/*/status`` -> ``/claims/0/status``, ``/claims/1/status``, ... for each existing claim
  (replace/remove where the member exists; add where it does not yet);
* ``/notes/-`` (or ``/notes/*`` over an array) -> ``/notes/-`` (add, an append);
* ``/notes/*`` over an object -> its existing keys and the property names its schema declares.

**Guarantees** (for every instance of the schema, checked by the test-suite with hypothesis):

* the kernel's ``parse``, ``ops`` and ``authorise`` stages accept it: every op is one the worker
  is granted and every path is covered by one of its write patterns;
* a one-op patch is never rejected at stage ``schema``: the value is validated against the very
  fragment the kernel uses at that path, a ``remove`` never drops a required member or goes
  under ``minItems``, and an append or a new member is only offered below ``maxItems`` /
  ``maxProperties``. Two exceptions, where the kernel stays the judge: several ops in one patch
  can together break a container bound or shift array indices (stages ``apply``/``schema``), and
  a container whose schema constrains its members *jointly* (``uniqueItems``, ``contains``,
  ``allOf``/``anyOf``/``oneOf``/``not``, ``if``/``then``/``else``, ``enum``/``const`` on the
  container) can still reject a change below it (appends and removals are not offered directly
  below ``uniqueItems``/``prefixItems`` arrays).
* ``replace``/``remove``/``test`` target existing nodes, ``add`` targets new members and appends;
  a replacement at an ``enum``/``const``/boolean location leaves out the current value (it would
  be a no-op).

**Identity.** An array item's ``id`` member identifies it (view handles use it too), so a new item
(an append, or an ``add`` inserting into an array) is offered only with an id none of its
siblings uses: an ``enum``/``const`` id schema loses the used values, and an id whose schema is a
numbered name (``pattern: "^h[0-9]+$"``, ``^ev\\d+$``: a literal prefix and digits) or an integer
becomes the next free one (``h<largest used + 1>``, from 1). The id is a value the kernel would
accept there, so the guarantees hold; the schema is stricter than the state schema only in
leaving out ids already taken. Other id schemas are left to the kernel's invariants
(``fresh_ids=False`` turns this off).

**References.** A schema node annotated ``"x-refers-to": "<pointer pattern>"`` (for example
``{"type": "string", "x-refers-to": "/hypotheses/*/id"}``) holds a value that names an existing
node value: the offered values are the values now found at that pattern in the state (the last
``max_enum`` of them, those valid for the node), as an ``enum``. JSON Schema ignores the
keyword, so pair it with an invariant that the kernel checks; without any such value yet the node
is left as it is (the kernel judges).

**Bounds.** At most ``max_enum`` paths are listed per group. A larger group whose varying path
segments are all array indices (or keys of a plain map) is described by a ``pattern`` regex
instead (still authorised and well-typed, but existence is then checked by the kernel); any
other overflow keeps the ``max_enum`` *last* paths (newest array items) and sets ``truncated``.

**Left out** (documented limits): ``move``/``copy`` (their effect on types depends on the source),
``test`` unless ``include_test=True`` (a test-only patch is a no-op), paths below a ``-`` inside a
pattern, and for a deep pattern ``/x/**`` everything deeper than ``/x`` and its members. New keys of
a plain map (``additionalProperties`` only) are offered through a key ``pattern``. A worker with
nothing it may do in the current state gets no schema (``proposal_schema`` returns None).

References (``$ref``) inside fragments are hoisted into ``$defs`` under unique names
(``ref0``, ``ref1``...), so the schema is self-contained and grammar converters that name rules
after the last segment of a reference do not conflate two of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON, canonical_str
from ..kernel.invariants import expand
from ..kernel.jsonvalue import json_equal
from ..kernel.pointer import Tokens, format_pointer, is_array_index, resolve

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..kernel.schema import SchemaIndex

__all__ = [
    "ANY_VALUE",
    "DEFAULT_MAX_ENUM",
    "DEFAULT_MAX_OPS",
    "PATCH_KEY",
    "REFERS_TO",
    "SAFE_MAX_LENGTH",
    "ConstrainedSchema",
    "Target",
    "generic_patch_schema",
    "proposal_schema",
    "sketch_state",
    "write_targets",
]

PATCH_KEY = "patch"
"""The member of the wrapper object that holds the patch array."""

DEFAULT_MAX_OPS = 4
"""Default ``maxItems`` of the patch array."""

DEFAULT_MAX_ENUM = 24
"""Default number of concrete paths listed per op group before a regex or truncation is used."""

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
_NOTHING: Any = object()
_SAFE_CHAR = r'[^"\\\x00-\x1f]'
_MAP_KEY = r"([^/~]|~[01])+"
_INDEX = r"(0|[1-9][0-9]*)"
_REGEX_META = set("\\.^$|?*+()[]{}")


@dataclass(frozen=True, slots=True)
class Target:
    """One concrete op path a worker may propose at now, and how.

    ``exists`` says whether the node is there (replace/remove/test) or would be created (add);
    ``append`` marks an array append (path ends in ``-``); ``pattern`` is the write pattern that
    covers it; ``open_key`` marks a template whose last segment is any new key of a plain map
    (its ``path`` then ends with the placeholder ``*`` and is rendered as a regex).
    """

    tokens: Tokens
    exists: bool
    pattern: str
    append: bool = False
    open_key: bool = False

    @property
    def path(self) -> str:
        """The JSON Pointer of the target."""
        return format_pointer(self.tokens)


@dataclass(frozen=True, slots=True)
class ConstrainedSchema:
    """A derived proposal schema (wrapped as ``{"patch": [...]}``) and what went into it.

    ``schema`` is what to pass as ``json_schema``; ``targets`` the concrete targets expanded from
    the state; ``ops`` the ops it offers; ``truncated`` is True when some paths were left out to
    keep it bounded; ``paths`` counts the concrete paths listed or covered by a regex.
    """

    schema: dict[str, Any]
    targets: tuple[Target, ...]
    ops: tuple[str, ...]
    truncated: bool = False
    paths: int = 0
    defs: dict[str, Any] = field(default_factory=dict)

    def patch_schema(self) -> dict[str, Any]:
        """The bare patch-array schema (self-contained, with the same ``$defs``)."""
        out = dict(self.schema["properties"][PATCH_KEY])
        if self.defs:
            out["$defs"] = self.defs
        return out


# -- expanding write patterns over the state ---------------------------------------------------
def _location_schema(schema: SchemaIndex, tokens: Tokens) -> Any:
    _, loc = schema.locate(tokens)
    if loc is None:
        return None
    if loc.any:
        return True
    return loc.schema


def _is_plain_map(node_schema: Any) -> bool:
    if not isinstance(node_schema, dict):
        return node_schema is True
    if node_schema.get("properties") or node_schema.get("patternProperties") or "propertyNames" in node_schema:
        return False
    add = node_schema.get("additionalProperties", True)
    return add is not False


def write_targets(blueprint: CompiledBlueprint, worker: str, state: JSON) -> list[Target]:
    """Every concrete target the worker's write patterns reach in ``state`` (see module doc).

    Each target is covered by the worker's write contract (checked with ``may_write``); the
    result is free of duplicates and in a canonical order (array indices numerically, object
    keys sorted, appends last), so it does not depend on the key order of the state's objects.
    """
    contract = blueprint.workers[worker]
    schema = blueprint.schema
    seen: set[tuple[Tokens, bool]] = set()
    out: list[Target] = []

    def emit(t: Target) -> None:
        key = (t.tokens, t.open_key)
        if key in seen:
            return
        probe = (*t.tokens[:-1], "x") if t.open_key else t.tokens
        if not contract.may_write(probe):
            return
        seen.add(key)
        out.append(t)

    for pattern in contract.writes:
        toks = pattern.tokens
        variants: list[Tokens]
        if pattern.deep:
            base = toks[:-1]
            variants = [base, (*base, "*")]
        else:
            variants = [toks]
        for tokens in variants:
            if not tokens:
                emit(Target((), True, pattern.text))
                continue
            if "-" in tokens[:-1] or "**" in tokens[:-1]:
                continue
            last = tokens[-1]
            for parent in expand(state, tokens[:-1]):
                node = resolve(state, parent)
                if isinstance(node, list):
                    if last in ("-", "*"):
                        if last == "*":
                            for i in range(len(node)):
                                emit(Target((*parent, str(i)), True, pattern.text))
                        emit(Target((*parent, "-"), False, pattern.text, append=True))
                    elif is_array_index(last) and int(last) < len(node):
                        emit(Target((*parent, last), True, pattern.text))
                elif isinstance(node, dict):
                    if last == "-":
                        continue
                    if last == "*":
                        for key in node:
                            emit(Target((*parent, key), True, pattern.text))
                        node_schema = _location_schema(schema, parent)
                        if isinstance(node_schema, dict):
                            for key in node_schema.get("properties") or {}:
                                if key not in node:
                                    emit(Target((*parent, key), False, pattern.text))
                        if _is_plain_map(node_schema):
                            emit(Target((*parent, "*"), False, pattern.text, open_key=True))
                    else:
                        emit(Target((*parent, last), last in node, pattern.text))
    out.sort(key=_order)
    return out


def _order(t: Target) -> tuple[tuple[int, int, str], ...]:
    """Canonical order: array indices numerically, keys by text, appends and open keys last."""
    key = []
    for i, tok in enumerate(t.tokens):
        last = i == len(t.tokens) - 1
        if last and (t.append or t.open_key):
            key.append((2, 0, ""))
        elif is_array_index(tok):
            key.append((0, int(tok), ""))
        else:
            key.append((1, 0, tok))
    return tuple(key)


# -- references and fragments ------------------------------------------------------------------
class _Refs:
    """Hoists ``$ref`` targets of the state schema into ``$defs`` under unique names."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.names: dict[str, str] = {}
        self.defs: dict[str, Any] = {}

    def _get(self, ref: str) -> Any:
        node: Any = self.root
        if ref in ("#", ""):
            return node
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and is_array_index(token) and int(token) < len(node):
                node = node[int(token)]
            else:
                return _NOTHING
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
            self.defs[name] = False if target is _NOTHING else self.rewrite(target)
        return name


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


# -- regexes for large groups --------------------------------------------------------------------
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
        if all(_is_plain_map(_location_schema(schema, p[:i])) for p in paths):
            parts.append("/" + _MAP_KEY)
            continue
        return None
    return "^" + "".join(parts) + "$"


# -- the schema ---------------------------------------------------------------------------------
def _container_bounds(schema: SchemaIndex, state: JSON, t: Target) -> tuple[bool, bool]:
    """(may add here, may remove here) given the parent's size bounds and required members."""
    if not t.tokens:
        return True, False
    parent_tokens = t.tokens[:-1]
    parent = resolve(state, parent_tokens)
    ps = _location_schema(schema, parent_tokens)
    if not isinstance(ps, dict):
        return True, True
    may_add = may_remove = True
    if isinstance(parent, list):
        n = len(parent)
        if "maxItems" in ps and n >= ps["maxItems"]:
            may_add = False
        if "minItems" in ps and n <= ps["minItems"]:
            may_remove = False
        if "prefixItems" in ps or ps.get("uniqueItems"):
            may_add = may_add and not t.append and "prefixItems" not in ps
            may_remove = False
    elif isinstance(parent, dict):
        n = len(parent)
        if not t.exists and "maxProperties" in ps and n >= ps["maxProperties"]:
            may_add = False
        if "minProperties" in ps and n <= ps["minProperties"]:
            may_remove = False
        req = ps.get("required")
        if isinstance(req, list) and t.tokens[-1] in req:
            may_remove = False
        if ps.get("dependentRequired") or ps.get("dependentSchemas"):
            may_remove = False
    return may_add, may_remove


def _changing(frag: Any, current: Any) -> Any:
    """The fragment without the node's current value, where that is a finite choice (enum,
    const, boolean); None when no other value is possible; the fragment itself otherwise."""
    if not isinstance(frag, dict):
        return frag
    if "const" in frag:
        return None if json_equal(frag["const"], current) else frag
    if isinstance(frag.get("enum"), list):
        rest = [v for v in frag["enum"] if not json_equal(v, current)]
        if not rest:
            return None
        return frag if len(rest) == len(frag["enum"]) else {**frag, "enum": rest}
    if frag.get("type") == "boolean" and isinstance(current, bool):
        return {**frag, "const": not current}
    return frag


_NUMBERED_ID = re.compile(r"^\^((?:[A-Za-z_:.-]|\\[.-])*)(?:\[0-9\]|\\d)(?:\+|\*|\{1,\})\$$")


def _fresh_id_schema(id_schema: Any, used: set[JSON]) -> Any:
    """``id_schema`` narrowed to ids not in ``used`` (see Identity in the module docstring):
    None when no id is left, ``id_schema`` itself when it cannot be narrowed."""
    if not isinstance(id_schema, dict):
        return id_schema
    if "const" in id_schema:
        const = id_schema["const"]
        in_use = isinstance(const, (str, int)) and not isinstance(const, bool) and const in used
        return None if in_use else id_schema
    if isinstance(id_schema.get("enum"), list):
        rest = [v for v in id_schema["enum"] if isinstance(v, bool) or not (isinstance(v, (str, int)) and v in used)]
        if not rest:
            return None
        return id_schema if len(rest) == len(id_schema["enum"]) else {**id_schema, "enum": rest}
    kind = id_schema.get("type")
    keys = set(id_schema) - {"type", "description", "title", "$comment", "examples"}
    if kind == "integer" and not (keys - {"minimum"}):
        numbers = [v for v in used if isinstance(v, int) and not isinstance(v, bool)]
        low = id_schema.get("minimum", 1)
        if not isinstance(low, int) or isinstance(low, bool):
            return id_schema
        return {"type": "integer", "const": max([low - 1, *numbers]) + 1}
    if kind == "string" and keys == {"pattern"} and isinstance(id_schema["pattern"], str):
        m = _NUMBERED_ID.match(id_schema["pattern"])
        if m is None:
            return id_schema
        prefix = re.sub(r"\\(.)", r"\1", m.group(1))
        taken = [
            int(v[len(prefix) :]) for v in used if isinstance(v, str) and re.fullmatch(re.escape(prefix) + r"[0-9]+", v)
        ]
        fresh = f"{prefix}{max([0, *taken]) + 1}"
        return {"type": "string", "const": fresh}
    return id_schema


REFERS_TO = "x-refers-to"
"""The schema annotation naming the pointer pattern whose values a node refers to."""


def _referred_values(pattern: Any, node: dict[str, Any], state: JSON, limit: int) -> tuple[list[JSON], bool]:
    """The values at ``pattern`` in ``state`` that ``node`` (without the annotation) accepts,
    without duplicates, in state order: the last ``limit`` of them, and whether some were cut."""
    import jsonschema_rs

    from ..kernel.pointer import PointerError, parse_pointer

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


def _new_item_schema(frag: Any, siblings: Any) -> Any:
    """The value schema for a new item of array ``siblings``: ``frag`` with a fresh ``id`` when
    its items are objects with an ``id`` member (see Identity); None when no id is left."""
    if not isinstance(siblings, list) or not isinstance(frag, dict):
        return frag
    props = frag.get("properties")
    if not isinstance(props, dict) or "id" not in props:
        return frag
    used: set[JSON] = set()
    for item in siblings:
        if isinstance(item, dict):
            ident = item.get("id")
            if isinstance(ident, (str, int)) and not isinstance(ident, bool):
                used.add(ident)
    narrowed = _fresh_id_schema(props["id"], used)
    if narrowed is None:
        return None
    if narrowed is props["id"]:
        return frag
    return {**frag, "properties": {**props, "id": narrowed}}


def proposal_schema(
    blueprint: CompiledBlueprint,
    worker: str,
    state: JSON,
    *,
    max_ops: int = DEFAULT_MAX_OPS,
    max_enum: int = DEFAULT_MAX_ENUM,
    include_test: bool = False,
    handles: Sequence[str] = (),
    string_max_length: int | None = None,
    json_safe_strings: bool = False,
    avoid_noops: bool = True,
    fresh_ids: bool = True,
) -> ConstrainedSchema | None:
    """The schema of the proposals ``worker`` may make on ``state`` (see the module docstring).

    ``handles`` adds an optional ``expand`` member (a list of those handle strings);
    ``string_max_length`` adds ``maxLength`` to string schemas without one (a stricter schema,
    so the guarantees still hold; it keeps small models from rambling into ``max_tokens``);
    ``json_safe_strings`` restricts plain strings to characters that need no JSON escaping (see
    ``_tighten_strings``; for grammar-based local decoding).
    ``avoid_noops`` leaves the current value out of replacements at ``enum``/``const``/boolean
    locations (re-writing it would be a no-op, which the kernel logs as ``noop``).
    ``fresh_ids`` offers new array items only with an ``id`` their siblings do not use (see
    Identity in the module docstring).
    Returns None when no op is possible (nothing to write, or only move/copy granted).
    """
    contract = blueprint.workers[worker]
    schema = blueprint.schema
    ops = contract.ops
    targets = write_targets(blueprint, worker, state)
    refs = _Refs(schema.schema)

    # group -> (op, fragment text) -> paths
    groups: dict[tuple[str, str], list[Target]] = {}
    frags: dict[str, Any] = {}

    def add(op: str, t: Target, frag: Any) -> None:
        key = canonical_str(frag) if op != "remove" else ""
        frags.setdefault(key, frag)
        groups.setdefault((op, key), []).append(t)

    for t in targets:
        probe = (*t.tokens[:-1], "x") if t.open_key else t.tokens
        frag = _location_schema(schema, probe)
        if frag is None or frag is False:
            continue
        may_add, may_remove = _container_bounds(schema, state, t)
        parent = resolve(state, t.tokens[:-1]) if t.tokens else None
        new_item = fresh_ids and isinstance(parent, list)
        if t.exists:
            changed = _changing(frag, resolve(state, t.tokens)) if avoid_noops else frag
            if changed is not None:
                if "replace" in ops:
                    add("replace", t, changed)
                elif "add" in ops and t.tokens:
                    # an add at an existing array index inserts a new item
                    inserted = _new_item_schema(changed, parent) if new_item else changed
                    if inserted is not None:
                        add("add", t, inserted)
            if "remove" in ops and may_remove and t.tokens:
                add("remove", t, None)
            if include_test and "test" in ops:
                add("test", t, frag)
        elif "add" in ops and may_add:
            created = _new_item_schema(frag, parent) if new_item else frag
            if created is not None:
                add("add", t, created)

    if not groups:
        return None

    truncated = False
    n_paths = 0
    variants: list[dict[str, Any]] = []
    frag_cache: dict[str, Any] = {}
    for (op, key), members in groups.items():
        value_schema: Any = None
        if op != "remove":
            if key not in frag_cache:
                resolved, cut = _resolve_references(frags[key], state, max_enum)
                truncated = truncated or cut
                frag_cache[key] = _tighten_strings(refs.rewrite(resolved), string_max_length, json_safe_strings)
            value_schema = frag_cache[key]
        fixed = [m for m in members if not m.open_key]
        opened = [m for m in members if m.open_key]
        path_schemas: list[dict[str, Any]] = []
        if fixed:
            if len(fixed) <= max_enum:
                path_schemas.append({"enum": [m.path for m in fixed]})
                n_paths += len(fixed)
            else:
                regex = _regex_for(schema, [m.tokens for m in fixed])
                if regex is not None:
                    path_schemas.append({"type": "string", "pattern": regex})
                    n_paths += len(fixed)
                else:
                    truncated = True
                    path_schemas.append({"enum": [m.path for m in fixed[-max_enum:]]})
                    n_paths += max_enum
        for m in opened:
            regex = _regex_for(schema, [m.tokens], frozenset({len(m.tokens) - 1}))
            if regex is not None:
                path_schemas.append({"type": "string", "pattern": regex})
                n_paths += 1
        for path_schema in path_schemas:
            props: dict[str, Any] = {"op": {"const": op}, "path": path_schema}
            required = ["op", "path"]
            if value_schema is not None:
                props["value"] = value_schema
                required.append("value")
            variants.append(
                {"type": "object", "properties": props, "required": required, "additionalProperties": False}
            )

    items: dict[str, Any] = variants[0] if len(variants) == 1 else {"anyOf": variants}
    patch = {"type": "array", "minItems": 1, "maxItems": max(1, max_ops), "items": items}
    props_top: dict[str, Any] = {PATCH_KEY: patch}
    if handles:
        props_top["expand"] = {"type": "array", "maxItems": 4, "items": {"enum": list(dict.fromkeys(handles))}}
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": props_top,
        "required": [PATCH_KEY],
        "additionalProperties": False,
    }
    defs = {name: _tighten_strings(d, string_max_length, json_safe_strings) for name, d in refs.defs.items()}
    if defs:
        wrapper["$defs"] = defs
    return ConstrainedSchema(
        schema=wrapper,
        targets=tuple(targets),
        ops=tuple(sorted({op for op, _ in groups})),
        truncated=truncated,
        paths=n_paths,
        defs=defs,
    )


def generic_patch_schema(ops: Sequence[str], *, max_ops: int = DEFAULT_MAX_OPS) -> dict[str, Any]:
    """The contract-free structured-output schema: ``{"patch": [RFC 6902 ops]}`` with ``op``
    limited to ``ops`` and any path and value (what "JSON mode" alone can promise)."""
    op_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "op": {"enum": sorted(ops)},
            "path": {"type": "string"},
            "value": dict(ANY_VALUE),
        },
        "required": ["op", "path"],
        "additionalProperties": False,
    }
    if any(o in ("move", "copy") for o in ops):
        op_schema["properties"]["from"] = {"type": "string"}
    return {
        "type": "object",
        "properties": {PATCH_KEY: {"type": "array", "minItems": 1, "maxItems": max(1, max_ops), "items": op_schema}},
        "required": [PATCH_KEY],
        "additionalProperties": False,
    }


def sketch_state(
    blueprint: CompiledBlueprint,
    worker: str,
    view_data: dict[str, JSON],
    known: Sequence[str] = (),
) -> JSON:
    """A partial state rebuilt from what a view shows, for expanding write patterns without the
    real state: ``view_data`` (pointer -> exact value) placed at its pointers, ``known`` pointers
    (e.g. handle paths) as placeholders, arrays padded with ``None`` up to the highest index
    seen (arrays are contiguous, so those items exist), and members the schema *requires*
    created as empty containers so writes below them can be offered.
    """
    from ..kernel.pointer import PointerError, parse_pointer

    schema = blueprint.schema

    def container_for(tokens: Tokens) -> Any:
        s = _location_schema(schema, tokens)
        if isinstance(s, dict):
            t = s.get("type")
            if t == "array" or "items" in s or "prefixItems" in s:
                return []
            if t == "object" or "properties" in s or "additionalProperties" in s:
                return {}
        return None

    root: Any = container_for(())
    if root is None:
        root = {}

    def place(tokens: Tokens, value: Any, *, overwrite: bool) -> None:
        nonlocal root
        if not tokens:
            if overwrite:
                root = value
            return
        node = root
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if isinstance(node, dict):
                if last:
                    if overwrite or tok not in node:
                        node[tok] = value
                    return
                child = node.get(tok)
                if not isinstance(child, (dict, list)):
                    child = container_for(tokens[: i + 1])
                    if child is None:
                        return
                    node[tok] = child
                node = child
            elif isinstance(node, list):
                if not is_array_index(tok):
                    return
                idx = int(tok)
                while len(node) <= idx:
                    node.append(None)
                if last:
                    if overwrite or node[idx] is None:
                        node[idx] = value
                    return
                child = node[idx]
                if not isinstance(child, (dict, list)):
                    child = container_for(tokens[: i + 1])
                    if child is None:
                        return
                    node[idx] = child
                node = child
            else:
                return

    for ptr in sorted(known, key=len):
        try:
            place(parse_pointer(ptr), None, overwrite=False)
        except PointerError:
            continue
    for ptr in sorted(view_data, key=len):
        try:
            place(parse_pointer(ptr), view_data[ptr], overwrite=True)
        except PointerError:
            continue

    # Required containers on the way to every write pattern.
    for pattern in blueprint.workers[worker].writes:
        prefix: list[str] = []
        for tok in pattern.tokens[:-1]:
            if tok in ("*", "-", "**"):
                break
            parent = resolve(root, tuple(prefix))
            ps = _location_schema(schema, tuple(prefix))
            if isinstance(parent, dict) and tok not in parent:
                if not (isinstance(ps, dict) and tok in (ps.get("required") or ())):
                    break
                made = container_for((*prefix, tok))
                if made is None:
                    break
                parent[tok] = made
            prefix.append(tok)
    return root
