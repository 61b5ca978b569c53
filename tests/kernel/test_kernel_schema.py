"""The schema stage validates incrementally (per location); it must decide exactly like a full
validation of the resulting state (``jsonschema_rs.validator_for`` on the whole state)."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_testkit import canon, full_validator, make_blueprint, ref_apply

from slateboard.kernel import Kernel, Proposal

INTS = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
ITEMS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": ["object", "integer"],
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["id"],
            },
        },
        "other": {"type": "array"},
    },
}
MIX = {
    "type": "object",
    "properties": {"k0": {"type": "integer"}},
    "patternProperties": {"^k": {"minimum": 0}, "0$": {"maximum": 50}},
    "additionalProperties": False,
}
TWO_PATTERNS = {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"minimum": 0}}}
CHAINED_REF = {
    "type": "object",
    "$defs": {
        "base": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "ext": {"$ref": "#/$defs/base", "required": ["n"]},
    },
    "properties": {"x": {"$ref": "#/$defs/ext"}},
}
REF_WITH_SIBLING = {
    "type": "object",
    "$defs": {"base": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    "properties": {"x": {"$ref": "#/$defs/base", "maxProperties": 2}},
}
TREE = {
    "type": "object",
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["v"],
            "additionalProperties": False,
        }
    },
    "properties": {"tree": {"$ref": "#/$defs/node"}},
}
PREFIX = {
    "type": "object",
    "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}},
}
UNIQUE = {"type": "object", "properties": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "object"}}}}
ONE_OF = {
    "type": "object",
    "properties": {"o": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}},
}
CONTAINS = {"type": "object", "properties": {"c": {"type": "array", "contains": {"const": 1}}}}
IF_THEN = {
    "type": "object",
    "properties": {
        "p": {
            "type": "object",
            "if": {"properties": {"kind": {"const": "num"}}},
            "then": {"properties": {"v": {"type": "integer"}}},
        }
    },
}
DEP_REQ = {"type": "object", "properties": {"d": {"type": "object", "dependentRequired": {"a": ["b"]}}}}
NAMES = {"type": "object", "properties": {"m": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}}}
BOUNDS = {
    "type": "object",
    "properties": {
        "b": {"type": "array", "minItems": 1, "maxItems": 2},
        "o": {"type": "object", "minProperties": 1, "maxProperties": 2},
    },
}
ADDITIONAL = {"type": "object", "properties": {"n": {"type": "object", "additionalProperties": {"type": "string"}}}}
NO_ITEMS = {"type": "object", "properties": {"z": {"type": "array", "items": False}}}
CONST_OBJ = {"type": "object", "properties": {"k": {"const": {"a": 1}}}}
ROOT_ANYOF = {"anyOf": [{"required": ["a"]}, {"required": ["b"]}], "type": "object"}

# (id, schema, initial, patch, expected outcome)
CASES = [
    # multi-op patches where a later op shifts what an earlier op touched
    (
        "shift-insert-after-replace",
        INTS,
        {"a": [1, 2]},
        [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "add", "path": "/a/0", "value": 0}],
        "rejected",
    ),
    (
        "shift-remove-after-replace",
        INTS,
        {"a": [1, 2]},
        [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "remove", "path": "/a/0"}],
        "rejected",
    ),
    (
        "shift-two-inserts",
        INTS,
        {"a": []},
        [{"op": "add", "path": "/a/0", "value": "X"}, {"op": "add", "path": "/a/0", "value": 1}],
        "rejected",
    ),
    (
        "shift-move-to-end",
        INTS,
        {"a": [1, 2, 3]},
        [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "move", "from": "/a/0", "path": "/a/-"}],
        "rejected",
    ),
    (
        "shift-copy-before",
        INTS,
        {"a": [1, 2]},
        [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "copy", "from": "/a/0", "path": "/a/0"}],
        "rejected",
    ),
    (
        "shift-nested-required-removed",
        ITEMS,
        {"items": [{"id": 1}, {"id": 2}], "other": []},
        [{"op": "remove", "path": "/items/1/id"}, {"op": "add", "path": "/items/0", "value": {"id": 0}}],
        "rejected",
    ),
    (
        "shift-single-move-into-same-array",
        ITEMS,
        {"items": [{"id": 1}, {"id": 2}], "other": []},
        [{"op": "move", "from": "/items/1/id", "path": "/items/0"}],
        "rejected",
    ),
    (
        "shift-valid-combination",
        INTS,
        {"a": [1, 2]},
        [{"op": "replace", "path": "/a/1", "value": 5}, {"op": "add", "path": "/a/0", "value": 0}],
        "accepted",
    ),
    (
        "replaced-then-removed",
        INTS,
        {"a": [1, 2]},
        [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "remove", "path": "/a/1"}],
        "accepted",
    ),
    (
        "added-then-overwritten",
        INTS,
        {"a": [1]},
        [{"op": "add", "path": "/a/-", "value": "X"}, {"op": "replace", "path": "/a/1", "value": 2}],
        "accepted",
    ),
    # a key matched by properties and patternProperties must satisfy both
    ("property-and-pattern-minimum", MIX, {"k0": 1}, [{"op": "replace", "path": "/k0", "value": -1}], "rejected"),
    ("property-and-second-pattern", MIX, {"k0": 1}, [{"op": "replace", "path": "/k0", "value": 60}], "rejected"),
    ("property-and-patterns-ok", MIX, {"k0": 1}, [{"op": "replace", "path": "/k0", "value": 7}], "accepted"),
    ("two-matching-patterns", TWO_PATTERNS, {}, [{"op": "add", "path": "/xy", "value": -5}], "rejected"),
    ("two-matching-patterns-ok", TWO_PATTERNS, {}, [{"op": "add", "path": "/xy", "value": 5}], "accepted"),
    # $ref chains
    (
        "ref-to-ref-with-sibling",
        CHAINED_REF,
        {"x": {"n": 1}},
        [{"op": "replace", "path": "/x/n", "value": "str"}],
        "rejected",
    ),
    ("ref-to-ref-with-sibling-required", CHAINED_REF, {"x": {"n": 1}}, [{"op": "remove", "path": "/x/n"}], "rejected"),
    ("ref-with-sibling-type", REF_WITH_SIBLING, {"x": {}}, [{"op": "add", "path": "/x/n", "value": "str"}], "rejected"),
    (
        "ref-with-sibling-bound",
        REF_WITH_SIBLING,
        {"x": {"a": 1, "b": 2}},
        [{"op": "add", "path": "/x/c", "value": 3}],
        "rejected",
    ),
    (
        "recursive-ref-deep-type",
        TREE,
        {"tree": {"v": 1, "kids": [{"v": 2, "kids": []}]}},
        [{"op": "replace", "path": "/tree/kids/0/v", "value": "x"}],
        "rejected",
    ),
    (
        "recursive-ref-deep-extra",
        TREE,
        {"tree": {"v": 1, "kids": [{"v": 2}]}},
        [{"op": "add", "path": "/tree/kids/0/w", "value": 1}],
        "rejected",
    ),
    (
        "recursive-ref-deep-required",
        TREE,
        {"tree": {"v": 1, "kids": [{"v": 2}]}},
        [{"op": "remove", "path": "/tree/kids/0/v"}],
        "rejected",
    ),
    (
        "recursive-ref-deep-ok",
        TREE,
        {"tree": {"v": 1, "kids": [{"v": 2}]}},
        [{"op": "add", "path": "/tree/kids/0/kids", "value": [{"v": 3}]}],
        "accepted",
    ),
    # prefixItems: index 0 follows prefixItems/0, later ones follow items
    ("prefix-items-first-string", PREFIX, {"t": []}, [{"op": "add", "path": "/t/-", "value": "x"}], "accepted"),
    ("prefix-items-first-int", PREFIX, {"t": []}, [{"op": "add", "path": "/t/-", "value": 1}], "rejected"),
    ("prefix-items-later-int", PREFIX, {"t": ["x"]}, [{"op": "add", "path": "/t/-", "value": 1}], "accepted"),
    ("prefix-items-later-string", PREFIX, {"t": ["x"]}, [{"op": "add", "path": "/t/-", "value": "y"}], "rejected"),
    # whole-keyword locations re-validate the whole node on a change below
    (
        "unique-items-deep-change",
        UNIQUE,
        {"u": [{"a": 1}, {"a": 2}]},
        [{"op": "replace", "path": "/u/1/a", "value": 1}],
        "rejected",
    ),
    (
        "unique-items-deep-ok",
        UNIQUE,
        {"u": [{"a": 1}, {"a": 2}]},
        [{"op": "replace", "path": "/u/1/a", "value": 3}],
        "accepted",
    ),
    ("one-of-both", ONE_OF, {"o": {"a": 1}}, [{"op": "add", "path": "/o/b", "value": 1}], "rejected"),
    ("one-of-neither", ONE_OF, {"o": {"a": 1}}, [{"op": "remove", "path": "/o/a"}], "rejected"),
    ("contains-removed", CONTAINS, {"c": [1, 2]}, [{"op": "remove", "path": "/c/0"}], "rejected"),
    (
        "if-then-deep",
        IF_THEN,
        {"p": {"kind": "num", "v": 1}},
        [{"op": "replace", "path": "/p/v", "value": "x"}],
        "rejected",
    ),
    (
        "if-then-switch",
        IF_THEN,
        {"p": {"kind": "txt", "v": "x"}},
        [{"op": "replace", "path": "/p/kind", "value": "num"}],
        "rejected",
    ),
    ("root-any-of", ROOT_ANYOF, {"a": 1}, [{"op": "remove", "path": "/a"}], "rejected"),
    ("const-object-deep", CONST_OBJ, {"k": {"a": 1}}, [{"op": "replace", "path": "/k/a", "value": 2}], "rejected"),
    # member-set keywords checked on the container
    ("dependent-required-add", DEP_REQ, {"d": {}}, [{"op": "add", "path": "/d/a", "value": 1}], "rejected"),
    ("dependent-required-remove", DEP_REQ, {"d": {"a": 1, "b": 2}}, [{"op": "remove", "path": "/d/b"}], "rejected"),
    ("property-names", NAMES, {"m": {}}, [{"op": "add", "path": "/m/Bad", "value": 1}], "rejected"),
    (
        "property-names-via-move",
        NAMES,
        {"m": {"ok": 1}},
        [{"op": "move", "from": "/m/ok", "path": "/m/NOT"}],
        "rejected",
    ),
    ("min-items", BOUNDS, {"b": [1], "o": {"a": 1}}, [{"op": "remove", "path": "/b/0"}], "rejected"),
    ("max-items", BOUNDS, {"b": [1, 2], "o": {"a": 1}}, [{"op": "add", "path": "/b/-", "value": 3}], "rejected"),
    ("min-properties", BOUNDS, {"b": [1], "o": {"a": 1}}, [{"op": "remove", "path": "/o/a"}], "rejected"),
    (
        "max-properties",
        BOUNDS,
        {"b": [1], "o": {"a": 1, "b": 2}},
        [{"op": "add", "path": "/o/c", "value": 3}],
        "rejected",
    ),
    (
        "bounds-move-keeps-count",
        BOUNDS,
        {"b": [1, 2], "o": {"a": 1, "b": 2}},
        [{"op": "move", "from": "/o/a", "path": "/o/c"}],
        "accepted",
    ),
    ("additional-properties-schema", ADDITIONAL, {"n": {}}, [{"op": "add", "path": "/n/x", "value": 1}], "rejected"),
    (
        "additional-properties-deep",
        ADDITIONAL,
        {"n": {"x": "s"}},
        [{"op": "add", "path": "/n/x", "value": {"y": 1}}],
        "rejected",
    ),
    ("items-false", NO_ITEMS, {"z": []}, [{"op": "add", "path": "/z/-", "value": 1}], "rejected"),
    ("root-replaced-invalid", INTS, {"a": []}, [{"op": "replace", "path": "", "value": {"a": ["x"]}}], "rejected"),
    ("root-replaced-valid", INTS, {"a": []}, [{"op": "replace", "path": "", "value": {"a": [1]}}], "accepted"),
]


def _reference(schema: Any, initial: Any, patch: Any) -> str:
    after = ref_apply(initial, patch)
    if canon(after) == canon(initial):
        return "noop"
    return "accepted" if full_validator(schema).is_valid(after) else "rejected"


@pytest.mark.parametrize(("schema", "initial", "patch", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_incremental_validation_decides_like_full_validation(schema, initial, patch, expected):
    assert _reference(schema, initial, patch) == expected  # the table itself is right
    k = Kernel(make_blueprint(schema, initial))
    d = k.submit(Proposal("admin", patch))
    assert d.record.outcome == expected, f"{d.record.outcome}/{d.stage}: {d.reason}"
    if expected == "rejected":
        assert d.stage == "schema"
        assert canon(k.state) == canon(initial)
    assert full_validator(schema).is_valid(k.state)


def test_schema_rejection_names_the_shifted_path():
    k = Kernel(make_blueprint(INTS, {"a": [1, 2]}))
    d = k.submit(
        Proposal("admin", [{"op": "replace", "path": "/a/1", "value": "X"}, {"op": "add", "path": "/a/0", "value": 0}])
    )
    assert d.stage == "schema" and "/a/2" in (d.reason or "")


def test_events_use_final_paths():
    k = Kernel(make_blueprint(INTS, {"a": [1, 2]}))
    d = k.submit(
        Proposal("admin", [{"op": "replace", "path": "/a/1", "value": 7}, {"op": "add", "path": "/a/0", "value": 0}])
    )
    assert d.accepted
    assert k.state == {"a": [0, 1, 7]}
    assert sorted(e.path for e in d.events) == ["/a/0", "/a/2"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"type": "integer"}},
        # an index a property or a pattern names is not an item (the branches before the items')
        {"type": ["array", "object"], "items": {"type": "integer"}, "properties": {"3": {"type": "string"}}},
        {"type": ["array", "object"], "items": {"type": "integer"}, "patternProperties": {"^[0-4]$": {"type": "null"}}},
        {"type": ["array", "object"], "items": {"type": "integer"}, "patternProperties": {"^[0-9]$": {}, "^3$": {}}},
    ],
)
def test_item_locations_match_a_fresh_index(schema: Any) -> None:
    """Once an array's item location is cached, every index (and ``-``, ``*``) is located as a
    fresh index locates it: the shortcut for items never hides a property or a pattern."""
    from slateboard.kernel.schema import SchemaIndex

    warm = SchemaIndex(schema)
    warm.locate(("0",))  # caches the item location
    for token in ("0", "3", "7", "12", "-", "*", "x"):
        _, got = warm.locate((token,))
        _, want = SchemaIndex(schema).locate((token,))
        assert (got is None) == (want is None), token
        if got is not None and want is not None:
            assert (got.pointer, got.schema, got.any, got.whole) == (want.pointer, want.schema, want.any, want.whole), (
                token
            )
