"""Per-location compiled JSON Schema (2020-12) for validating only what a patch touched.

Every subschema of the state schema is compiled once (``jsonschema_rs.validator_map_for``).
After a patch is applied, a changed value is validated in full against the validator of its
own schema location, and each container above it gets a *shallow* check of the keywords that
depend on its set of members (type, required, size bounds, additionalProperties: false,
propertyNames, dependentRequired). Unchanged siblings were valid before and stay valid, so
the cost is O(size of the change x depth), not O(size of the state).

Locations that use keywords whose meaning depends on every member (uniqueItems, contains,
allOf/anyOf/oneOf/not, if/then/else, enum/const on containers, prefixItems, unevaluated*,
dependentSchemas, a ``$ref`` with siblings) are *whole* locations: a change below them
re-validates that whole node, which is correct and costs O(size of that node).

Attacker-chosen strings never meet a backtracking regex engine: every ``pattern`` and
``patternProperties`` regex is compiled by jsonschema-rs with its linear-time engine
(``RegexOptions``: ECMA-262 syntax, no lookaround or backreferences), and which
``patternProperties`` entries a key matches is decided by that same engine, so navigation
and the validator can never disagree about a key. References must be local (``#...``):
nothing is fetched while compiling a schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema_rs

from ..errors import UsageError, detached
from .canonical import JSON
from .jsonvalue import type_name
from .pointer import MISSING, PointerError, Tokens, escape_token, format_pointer, is_array_index, resolve

_WHOLE_KEYWORDS = frozenset(
    {
        "uniqueItems", "contains", "minContains", "maxContains", "allOf", "anyOf", "oneOf",
        "not", "if", "then", "else", "enum", "const", "prefixItems", "unevaluatedProperties",
        "unevaluatedItems", "dependentSchemas", "$dynamicRef", "dependencies",
    }
)  # fmt: skip


class SchemaError(UsageError, ValueError):
    """The state schema itself is not a valid JSON Schema; the message says where."""


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    """One schema error: the state path, the schema location and the message."""

    path: str
    schema_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message} (schema {self.schema_path})"


@dataclass(slots=True)
class Location:
    """A compiled schema location: where it is, its schema, and how to check it."""

    pointer: str  # URI fragment of the (unresolved) subschema, e.g. "#/properties/claims/items"
    schema: Any  # dict or bool
    any: bool = False  # unconstrained: anything below is allowed
    whole: bool = False
    validator: Any = None
    property_names: Any = None
    nav: str = "#"  # where navigation to children continues (the target of a plain $ref)
    also: tuple[Any, ...] = ()  # further validators that apply to the same member (overlapping patterns)
    children: dict[str, Location] = field(default_factory=dict)


_ANY = Location("#", True, any=True)

# Linear-time matching for every pattern (see the module docstring); one shared instance so
# the key matchers and the validators are compiled with exactly the same engine and options.
_PATTERN_OPTIONS = jsonschema_rs.RegexOptions()
_KNOWN_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-04/schema",
    }
)  # fmt: skip
# Keywords whose values are instance data, not subschemas: a ``$ref`` inside them is data.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _compile_options() -> dict[str, Any]:
    return {"pattern_options": _PATTERN_OPTIONS, "offline": True}


def nonlocal_references(schema: Any) -> list[str]:
    """Every ``$ref``/``$dynamicRef`` that is not a local fragment (``#...``) and every
    ``$schema`` that is not a built-in dialect, as "where: what" (empty when all are local).

    Remote references would make compiling a blueprint read files or the network (SSRF) and
    make validation depend on something outside the blueprint, so they are refused.
    """
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{where}/{i}") for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            here = f"{where}/{escape_token(str(key))}"
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                if not value.startswith("#"):
                    found.append(f"{here}: {key} {value!r} is not a local reference (use '#/$defs/...')")
            elif key == "$schema" and isinstance(value, str):
                if value.rstrip("#") not in _KNOWN_DIALECTS:
                    found.append(f"{here}: $schema {value!r} is not a built-in JSON Schema dialect")
            elif key not in _DATA_KEYWORDS:
                stack.append((value, here))
    return found


def cut_nonlocal_references(schema: Any) -> None:
    """Remove, in place, each ``$schema`` that is not a built-in dialect and each ``$ref`` /
    ``$dynamicRef`` that is not a local fragment, so nothing checking ``schema`` reads the
    network or a file (the same walk as ``nonlocal_references``)."""
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for key in [k for k in node if k in ("$schema", "$ref", "$dynamicRef")]:
            if nonlocal_references({key: node[key]}):
                del node[key]
        stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)


class SchemaIndex:
    """The state schema compiled per location, with navigation by concrete state paths."""

    def __init__(self, schema: JSON) -> None:
        remote = nonlocal_references(schema)
        if remote:
            raise SchemaError("state schema refers outside itself: " + "; ".join(sorted(remote)[:5]))
        try:
            jsonschema_rs.meta.validate(schema)
        except jsonschema_rs.ValidationError as invalid:  # one name per exception type (compiled)
            raise detached(SchemaError(f"state schema is not valid JSON Schema: {invalid.message}")) from None
        except Exception as exc:  # referencing errors and friends
            raise detached(SchemaError(f"state schema is not valid JSON Schema: {exc}")) from None
        self.schema = schema
        try:
            self._map = jsonschema_rs.validator_map_for(schema, **_compile_options())
            self._root_validator = jsonschema_rs.validator_for(schema, **_compile_options())
        except Exception as exc:
            raise detached(SchemaError(f"state schema does not compile: {exc}")) from None
        self.root = self._location("#", schema)

    # -- building -------------------------------------------------------------------------
    def _resolve(self, pointer: str, node: Any) -> tuple[str, Any]:
        seen = set()
        while isinstance(node, dict) and set(node) - {"$comment", "description", "title"} == {"$ref"}:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#") or ref in seen:
                break
            seen.add(ref)
            target = self._pointer_get(ref)
            if target is None:
                break
            pointer, node = ref, target
        return pointer, node

    def _pointer_get(self, ref: str) -> Any:
        """The subschema a local ``$ref`` (``#`` + JSON Pointer) names, or None."""
        try:
            node = resolve(self.schema, ref[1:])
        except PointerError:
            return None
        return None if node is MISSING else node

    def _location(self, pointer: str, node: Any) -> Location:
        validator = self._map.get(pointer) if pointer != "#" else self._root_validator
        nav_pointer, resolved = self._resolve(pointer, node)
        if resolved is True or resolved == {} or not isinstance(resolved, dict):
            if resolved is False:
                return Location(pointer, False, validator=validator, whole=True)
            return Location(pointer, True, any=True, validator=validator)
        # A $ref left after resolving plain references sits beside other keywords: both apply,
        # so the node is validated whole rather than navigated.
        whole = not _WHOLE_KEYWORDS.isdisjoint(resolved) or "$ref" in resolved
        loc = Location(pointer, resolved, whole=whole, validator=validator, nav=nav_pointer)
        if "propertyNames" in resolved:
            loc.property_names = self._map.get(f"{nav_pointer}/propertyNames")
        return loc

    def _child(self, loc: Location, token: str) -> Location | None:
        """The location of member ``token`` below ``loc``; None when the schema forbids it."""
        if loc.any:
            return _ANY
        cached = loc.children.get(token)
        if cached is not None:
            return cached
        schema = loc.schema
        item = loc.children.get("#item")
        if item is not None and isinstance(schema, dict) and (is_array_index(token) or token in ("-", "*")):
            # An array's items are not cached by index (there are as many as items): once its
            # item location is known, an index that no property or pattern names gets it without
            # going through the keywords again (the branches below give it, for this schema).
            props = schema.get("properties")
            if not schema.get("patternProperties") and not (isinstance(props, dict) and token in props):
                return item
        base = loc.nav
        result: Location | None
        key = token
        if not isinstance(schema, dict):
            return None
        if loc.whole:
            return _ANY  # a change below a whole location re-validates that whole node
        props = schema.get("properties")
        types = schema.get("type")
        if types is not None:
            kinds = set(types) if isinstance(types, list) else {types}
            if not kinds & {"object", "array"}:
                return None  # a scalar location has no members
        array_like = (
            "items" in schema
            or types == "array"
            or (isinstance(types, list) and "array" in types and "object" not in types)
        )
        patterns = schema.get("patternProperties") or {}
        matching = [p for p in patterns if key_matches(p, token)] if isinstance(patterns, dict) else []
        if isinstance(props, dict) and token in props and not matching:
            result = self._location(f"{base}/properties/{escape_token(token)}", props[token])
        elif matching and (len(matching) > 1 or (isinstance(props, dict) and token in props)):
            # Several subschemas apply to this member (a property and patterns, or several
            # patterns): validate against all of them, as a whole.
            subs = [self._location(f"{base}/patternProperties/{escape_token(p)}", patterns[p]) for p in matching]
            if isinstance(props, dict) and token in props:
                subs.insert(0, self._location(f"{base}/properties/{escape_token(token)}", props[token]))
            first = subs[0]
            result = Location(
                first.pointer, {"allOf": [x.schema for x in subs]}, whole=True, validator=first.validator,
                also=tuple(x.validator for x in subs[1:] if x.validator is not None),
            )  # fmt: skip
            key = token
        elif array_like and (is_array_index(token) or token in ("-", "*")):
            key = "#item"
            cached = loc.children.get(key)
            if cached is not None:
                return cached
            items = schema.get("items", True)
            result = self._location(f"{base}/items", items) if "items" in schema else _ANY
            if items is False:
                result = None
        else:
            result = None
            for pattern, sub in (schema.get("patternProperties") or {}).items():
                if key_matches(pattern, token):
                    result = self._location(f"{base}/patternProperties/{escape_token(pattern)}", sub)
                    break
            else:
                additional = schema.get("additionalProperties", True)
                if additional is False:
                    result = None
                elif additional is True:
                    result = _ANY
                else:
                    key = "#additional"
                    cached = loc.children.get(key)
                    if cached is not None:
                        return cached
                    result = self._location(f"{base}/additionalProperties", additional)
            if key == token and result is not None and len(loc.children) > 4096:
                return result  # do not cache unbounded numbers of pattern-matched keys
        if result is not None:
            loc.children[key] = result
        return result

    # -- navigation -----------------------------------------------------------------------
    def locate(self, tokens: Tokens) -> tuple[list[Location], Location | None]:
        """Locations of every ancestor of ``tokens`` (root first) and of the node itself.

        The node's location is None when the schema does not allow a member there.
        """
        chain = [self.root]
        loc: Location | None = self.root
        for token in tokens:
            assert loc is not None
            loc = self._child(loc, token)
            if loc is None:
                return chain, None
            chain.append(loc)
        return chain[:-1], chain[-1]

    def fragment(self, tokens: Tokens) -> JSON:
        """The schema that governs the node at concrete (or ``*``/``-``) ``tokens``."""
        _, loc = self.locate(tokens)
        if loc is None:
            return False
        if loc.any:
            return True
        return loc.schema

    # -- validation -----------------------------------------------------------------------
    def validate_value(self, loc: Location, value: JSON, path: str) -> list[SchemaViolation]:
        """Validate a whole value against its location; violations carry full state paths."""
        if loc.any or loc.validator is None:
            return []
        for validator in (loc.validator, *loc.also):
            if not validator.is_valid(value):
                return self._violations(loc, validator, value, path)
        return []

    def _violations(self, loc: Location, validator: Any, value: JSON, path: str) -> list[SchemaViolation]:
        out = []
        for err in validator.iter_errors(value):
            sub = format_pointer([str(t) for t in err.instance_path])
            out.append(
                SchemaViolation(
                    path + sub,
                    "/".join([loc.pointer, *(escape_token(str(t)) for t in err.schema_path)]),
                    _explained(err, path),
                )
            )
            if len(out) >= 5:
                break
        return out

    def validate_state(self, state: JSON) -> list[SchemaViolation]:
        """Validate a whole state (used for initial states and full checks)."""
        return self.validate_value(Location("#", self.schema, validator=self._root_validator), state, "")

    def shallow_check(self, loc: Location, node: JSON, path: str, changed_keys: set[str]) -> list[SchemaViolation]:
        """Check the member-set keywords of a container whose members ``changed_keys`` changed."""
        if loc.any:
            return []
        if loc.whole:
            return self.validate_value(loc, node, path)
        schema = loc.schema
        if not isinstance(schema, dict):
            return []
        out: list[SchemaViolation] = []

        def fail(keyword: str, message: str) -> None:
            out.append(SchemaViolation(path, f"{loc.pointer}/{keyword}", message))

        expected = schema.get("type")
        if expected is not None and not _type_ok(node, expected):
            fail("type", f"{type_name(node)} is not of type {expected!r}")
            return out
        if isinstance(node, dict):
            for name in schema.get("required", ()):
                if name not in node:
                    fail("required", f"{name!r} is a required property")
            n = len(node)
            if "maxProperties" in schema and n > schema["maxProperties"]:
                fail("maxProperties", f"has {n} properties, more than {schema['maxProperties']}")
            if "minProperties" in schema and n < schema["minProperties"]:
                fail("minProperties", f"has {n} properties, fewer than {schema['minProperties']}")
            for key in changed_keys:
                if key not in node:
                    continue
                if schema.get("additionalProperties") is False and self._child(loc, key) is None:
                    fail("additionalProperties", f"additional property {key!r} is not allowed")
                if loc.property_names is not None and not loc.property_names.is_valid(key):
                    fail("propertyNames", f"property name {key!r} is not allowed")
            for trigger, needed in (schema.get("dependentRequired") or {}).items():
                if trigger in node:
                    for name in needed:
                        if name not in node:
                            fail(
                                "dependentRequired",
                                f"{name!r} is required when {trigger!r} is present",
                            )
        elif isinstance(node, list):
            n = len(node)
            if "maxItems" in schema and n > schema["maxItems"]:
                fail("maxItems", f"has {n} items, more than {schema['maxItems']}")
            if "minItems" in schema and n < schema["minItems"]:
                fail("minItems", f"has {n} items, fewer than {schema['minItems']}")
        return out


def _type_ok(node: JSON, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    actual = type_name(node)
    return (
        actual in names
        or (actual == "integer" and "number" in names)
        or (isinstance(node, float) and node.is_integer() and "integer" in names)
    )


@lru_cache(maxsize=1024)
def _key_matcher(pattern: str) -> Any:
    return jsonschema_rs.validator_for({"pattern": pattern}, **_compile_options())


def key_matches(pattern: str, key: str) -> bool:
    """True when ``key`` matches a ``patternProperties`` regex exactly as the validator reads it.

    jsonschema-rs decides (ECMA-262: ``$`` only at the very end, ``\\d`` only ASCII digits), with
    the linear-time engine, so a hostile key costs O(len(key)) whatever the pattern.
    """
    try:
        return bool(_key_matcher(pattern).is_valid(key))
    except ValueError:
        return False  # not a valid regex: the schema did not compile, nothing reaches here


def _explained(err: Any, path: str) -> str:
    """``err``'s message; for an ``anyOf``/``oneOf`` that no branch accepts, followed by the
    errors of the one branch the value was meant for (the only one that fails on more than the
    value's type, e.g. the model of an optional ``Model | None``), so a rejected worker is told
    which field is wrong, not only that no branch fitted. The verdict is the validator's."""
    branches = getattr(err.kind, "context", None)
    if not isinstance(branches, list) or not branches:
        return str(err.message)
    meant = [
        b
        for b in branches
        if not all(
            isinstance(e.kind, jsonschema_rs.ValidationErrorKind.Type) and e.instance_path == err.instance_path
            for e in b
        )
    ]
    if len(meant) != 1 or not meant[0]:
        return str(err.message)
    details = "; ".join(
        f"{path + format_pointer([str(t) for t in e.instance_path]) or '/'}: {e.message}" for e in meant[0][:3]
    )
    return f"{err.message} (closest: {details})"


def pattern_locations(schema: SchemaIndex, tokens: Tokens) -> list[Location]:
    """Every schema location a pattern can reach ('*' expands to all members); [] if none."""
    frontier: list[Location] = [schema.root]
    for token in tokens:
        if token == "**":
            return frontier
        nxt: list[Location] = []
        for loc in frontier:
            if token == "*" and not loc.any and isinstance(loc.schema, dict):
                props = loc.schema.get("properties") or {}
                array_like = "items" in loc.schema or loc.schema.get("type") == "array"
                candidates = [*list(props), "0"] if array_like else list(props)
                found = [c for t in candidates if (c := schema._child(loc, t)) is not None]
                for pat in loc.schema.get("patternProperties") or {}:
                    sub = schema._location(
                        f"{loc.nav}/patternProperties/{escape_token(pat)}",
                        loc.schema["patternProperties"][pat],
                    )
                    found.append(sub)
                add = loc.schema.get("additionalProperties", True)
                if (add is not False and not props and "items" not in loc.schema) or isinstance(add, dict):
                    c = schema._child(loc, "\x00any")
                    if c is not None:
                        found.append(c)
                nxt.extend(found)
            else:
                c = schema._child(loc, "0" if token == "-" else token)
                if c is not None:
                    nxt.append(c)
        frontier = nxt
        if not frontier:
            return []
    return frontier
