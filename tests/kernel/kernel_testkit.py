"""Helpers for the kernel test suite: hypothesis profiles, blueprint builders, an independent
reference implementation of RFC 6901/6902 and contract matching, the schema family used by the
property tests, and a random session driver.

Everything that *checks* the kernel here is written independently of ``slateboard.kernel``
(own pointer parser, own patch applier, own pattern matcher, ``jsonschema_rs.validator_for``
on the whole state), so a bug in the kernel cannot hide itself by being shared with its oracle.
The only kernel functions used as oracles are the ones the brief names:
``slateboard.kernel.statehash.state_hash`` and ``slateboard.kernel.invariants.check_all_invariants``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.kernel import Decision, InvariantContext, Kernel, Proposal, Record
from slateboard.kernel.statehash import state_hash

# --------------------------------------------------------------------------------------------
# hypothesis profiles
# --------------------------------------------------------------------------------------------

settings.register_profile(
    "kernel-ci",
    derandomize=True,  # the same examples on every run: CI never flakes on a new random draw
    database=None,
    deadline=None,
    print_blob=True,
    # No shrinking in CI: a failing property reports its (reproducible) example at once instead
    # of spending minutes minimising it; each known failure also has a small targeted test.
    phases=(Phase.explicit, Phase.generate, Phase.target),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)
settings.register_profile(
    "kernel-debug",  # the CI examples, shrunk to a minimal failing case
    parent=settings.get_profile("kernel-ci"),
    phases=tuple(Phase),
)
settings.register_profile(
    "kernel-thorough",  # new random examples, 10x as many, shrunk
    parent=settings.get_profile("kernel-ci"),
    derandomize=False,
    phases=tuple(Phase),
)

PROFILE = os.environ.get("SLATEBOARD_KERNEL_HYPOTHESIS", "kernel-ci")
"""``kernel-ci`` (default), ``kernel-debug`` or ``kernel-thorough`` (see the profiles above)."""

_SCALE = 10 if PROFILE == "kernel-thorough" else 1


def kernel_settings(max_examples: int) -> settings:
    """Per-test hypothesis settings on top of the kernel profile (never loaded globally, so
    other test packages keep their own hypothesis configuration)."""
    return settings(settings.get_profile(PROFILE), max_examples=max_examples * _SCALE)


# --------------------------------------------------------------------------------------------
# canonical helpers
# --------------------------------------------------------------------------------------------


def canon(value: Any) -> bytes:
    """Sorted-key compact JSON bytes (independent of slateboard.kernel.canonical)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def clone(value: Any) -> Any:
    return json.loads(json.dumps(value))


# --------------------------------------------------------------------------------------------
# blueprints
# --------------------------------------------------------------------------------------------

ALL_OPS = ["add", "remove", "replace", "move", "copy", "test"]


def make_blueprint(
    schema: dict[str, Any],
    initial: Any = None,
    *,
    workers: dict[str, dict[str, Any]] | None = None,
    invariants: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> CompiledBlueprint:
    """A compiled blueprint; by default a single worker ``admin`` that may do anything."""
    data: dict[str, Any] = {
        "schema": schema,
        "initial_state": {} if initial is None else initial,
        "workers": workers or {"admin": {"reads": ["/**"], "writes": ["/**"], "ops": ALL_OPS}},
    }
    if invariants:
        data["invariants"] = invariants
    data.update(extra)
    return compile_blueprint(data)


def submit(kernel: Kernel, worker: str, patch: Any, **kw: Any) -> Decision:
    return kernel.submit(Proposal(worker, patch, **kw))


@dataclass
class Snapshot:
    """Everything a rejected proposal must leave exactly as it was."""

    state: bytes
    hash: str
    version: int
    seq: int
    last_hash: str

    @classmethod
    def of(cls, k: Kernel) -> Snapshot:
        return cls(canon(k.state), k.state_hash, k.version, k.seq, k.last_hash)


# -- the claims board used by the example-based tests ----------------------------------------

CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "status": {"enum": ["open", "done"]},
                    "score": {"type": "integer"},
                },
                "required": ["text", "status"],
                "additionalProperties": False,
            },
        },
        "notes": {"type": "object", "additionalProperties": {"type": "string"}},
        "secret": {"type": "string"},
        "count": {"type": "integer"},
        "log": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["claims"],
    "additionalProperties": False,
}

CLAIMS_INITIAL: dict[str, Any] = {
    "claims": [{"text": "a", "status": "open"}],
    "notes": {},
    "secret": "s",
    "count": 0,
    "log": [],
}

CLAIMS_WORKERS: dict[str, dict[str, Any]] = {
    # default ops (add, replace, test); may read claims/notes/count, write a few places
    "writer": {
        "reads": ["/claims", "/notes", "/count"],
        "writes": ["/claims/-", "/claims/*/status", "/notes/*", "/count"],
    },
    # appends to the log only, reads nothing that others change in these tests
    "appender": {"reads": ["/notes"], "writes": ["/log/-"]},
    # granted every op everywhere
    "admin": {"reads": ["/**"], "writes": ["/**"], "ops": ALL_OPS},
}


def claims_blueprint(**limits: int) -> CompiledBlueprint:
    return make_blueprint(
        CLAIMS_SCHEMA,
        CLAIMS_INITIAL,
        workers=CLAIMS_WORKERS,
        limits={"max_patch_bytes": 4096, "max_ops": 8, "max_depth": 16, **limits},
    )


# --------------------------------------------------------------------------------------------
# independent RFC 6901 / RFC 6902 / contract reference
# --------------------------------------------------------------------------------------------


class RefError(Exception):
    """The reference implementation refuses a patch (any reason)."""


def ref_parse_pointer(p: Any) -> list[str]:
    if not isinstance(p, str):
        raise RefError("pointer not a string")
    if p == "":
        return []
    if p[0] != "/":
        raise RefError("pointer must start with /")
    out = []
    for raw in p[1:].split("/"):
        tok, i = [], 0
        while i < len(raw):
            c = raw[i]
            if c == "~":
                if i + 1 < len(raw) and raw[i + 1] in "01":
                    tok.append("~" if raw[i + 1] == "0" else "/")
                    i += 2
                    continue
                raise RefError("bad escape")
            tok.append(c)
            i += 1
        out.append("".join(tok))
    return out


def ref_json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(ref_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(ref_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _ref_index(token: str, n: int, *, end_ok: bool) -> int:
    if token == "-" and end_ok:
        return n
    if not (token.isascii() and token.isdigit()) or (len(token) > 1 and token[0] == "0"):
        raise RefError(f"bad index {token!r}")
    i = int(token)
    if i > (n if end_ok else n - 1):
        raise RefError("index out of range")
    return i


def ref_get(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for t in tokens:
        if isinstance(node, dict):
            if t not in node:
                raise RefError("missing")
            node = node[t]
        elif isinstance(node, list):
            node = node[_ref_index(t, len(node), end_ok=False)]
        else:
            raise RefError("not a container")
    return node


def ref_apply(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """Apply an RFC 6902 patch to a copy of ``doc`` (all six ops); raises RefError."""
    doc = copy.deepcopy(doc)

    def add(doc: Any, tokens: list[str], value: Any) -> Any:
        if not tokens:
            return value
        parent = ref_get(doc, tokens[:-1])
        last = tokens[-1]
        if isinstance(parent, dict):
            parent[last] = value
        elif isinstance(parent, list):
            parent.insert(_ref_index(last, len(parent), end_ok=True), value)
        else:
            raise RefError("parent not a container")
        return doc

    def remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
        if not tokens:
            raise RefError("remove root")
        parent = ref_get(doc, tokens[:-1])
        last = tokens[-1]
        if isinstance(parent, dict):
            if last not in parent:
                raise RefError("missing")
            return doc, parent.pop(last)
        if isinstance(parent, list):
            return doc, parent.pop(_ref_index(last, len(parent), end_ok=False))
        raise RefError("parent not a container")

    for op in patch:
        if not isinstance(op, dict):
            raise RefError("op not an object")
        name = op.get("op")
        path = ref_parse_pointer(op.get("path"))
        if name == "add":
            if "value" not in op:
                raise RefError("no value")
            doc = add(doc, path, copy.deepcopy(op["value"]))
        elif name == "remove":
            doc, _ = remove(doc, path)
        elif name == "replace":
            if "value" not in op:
                raise RefError("no value")
            ref_get(doc, path)
            if not path:
                doc = copy.deepcopy(op["value"])
            else:
                doc, _ = remove(doc, path)
                doc = add(doc, path, copy.deepcopy(op["value"]))
        elif name == "move":
            frm = ref_parse_pointer(op.get("from"))
            if path[: len(frm)] == frm and path != frm:
                raise RefError("move into own child")
            ref_get(doc, frm)
            if frm != path:
                doc, value = remove(doc, frm)
                doc = add(doc, path, value)
        elif name == "copy":
            frm = ref_parse_pointer(op.get("from"))
            doc = add(doc, path, copy.deepcopy(ref_get(doc, frm)))
        elif name == "test":
            if "value" not in op:
                raise RefError("no value")
            if not ref_json_equal(ref_get(doc, path), op["value"]):
                raise RefError("test failed")
        else:
            raise RefError(f"unknown op {name!r}")
    return doc


def ref_covers(pattern: str, path: str) -> bool:
    """Write-contract coverage: ``*`` is one segment, ``-`` only an append, final ``**`` a subtree."""
    pt, p = ref_parse_pointer(pattern), ref_parse_pointer(path)
    if pt and pt[-1] == "**":
        pt = pt[:-1]
        if len(p) < len(pt):
            return False
        p = p[: len(pt)]
    elif len(pt) != len(p):
        return False
    return all(a == "*" or a == b for a, b in zip(pt, p, strict=True))


def ref_reads(pattern: str, path: str) -> bool:
    """Read-contract region: the node a read pattern names or anything below it."""
    pt, p = ref_parse_pointer(pattern), ref_parse_pointer(path)
    if pt and pt[-1] == "**":
        pt = pt[:-1]
    return len(p) >= len(pt) and all(a == "*" or a == b for a, b in zip(pt, p, strict=False))


def json_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((json_depth(v) for v in value), default=0)
    return 0


# --------------------------------------------------------------------------------------------
# the schema family for property tests
# --------------------------------------------------------------------------------------------

ITEM = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "label": {"type": "string"},
        "status": {"enum": ["open", "done"]},
        "refs": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    },
    "required": ["id", "status"],
    "additionalProperties": False,
}

DEFS = {
    "node": {
        "type": "object",
        "properties": {
            "v": {"type": "integer"},
            "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}},
        },
        "required": ["v"],
        "additionalProperties": False,
    },
    "base": {"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "string"}}},
    "ext": {"$ref": "#/$defs/base", "required": ["n"]},
}

COMPONENTS: dict[str, dict[str, Any]] = {
    # name: schema, a valid initial value, write patterns, read patterns
    "title": {"schema": {"type": "string", "maxLength": 8}, "init": "t", "writes": ["/title"]},
    "count": {"schema": {"type": "integer", "minimum": 0, "maximum": 100}, "init": 5, "writes": ["/count"]},
    "status": {"schema": {"enum": ["open", "closed", "draft"]}, "init": "open", "writes": ["/status"]},
    "tags": {
        "schema": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 4},
        "init": ["a", "b"],
        "writes": ["/tags/-", "/tags/*"],
    },
    "items": {
        "schema": {"type": "array", "maxItems": 4, "items": ITEM},
        "init": [{"id": 1, "status": "open"}, {"id": 2, "status": "done", "label": "b"}],
        "writes": ["/items/-", "/items/*/status", "/items/*/label", "/items/*/refs/-"],
    },
    "grid": {
        "schema": {
            "type": "array",
            "maxItems": 3,
            "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}},
        },
        "init": [[1], [2, 3]],
        "writes": ["/grid/*/-", "/grid/*/*"],
    },
    "node": {
        "schema": {"$ref": "#/$defs/node"},
        "init": {"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4}]}]},
        "writes": ["/node/kids/-", "/node/v", "/node/kids/*/v"],
    },
    "map": {
        "schema": {
            "type": "object",
            "patternProperties": {"^k[0-9]$": {"type": "integer"}},
            "additionalProperties": False,
            "maxProperties": 4,
        },
        "init": {"k1": 3},
        "writes": ["/map/*"],
    },
    "uniq": {
        "schema": {"type": "array", "uniqueItems": True, "items": {"type": ["integer", "string"]}},
        "init": [1, "a"],
        "writes": ["/uniq/-"],
    },
    "pair": {
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "dependentRequired": {"a": ["b"]},
            "additionalProperties": False,
        },
        "init": {"a": 1, "b": 2},
        "writes": ["/pair/a", "/pair/b"],
    },
    "choice": {
        "schema": {"oneOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 3}]},
        "init": 12,
        "writes": ["/choice"],
    },
    "notes": {
        "schema": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 10}},
        "init": {"x": "y"},
        "writes": ["/notes/*"],
    },
    # a $ref whose target is itself a $ref with a sibling keyword
    "ext": {"schema": {"$ref": "#/$defs/ext"}, "init": {"n": 1}, "writes": ["/ext/n", "/ext/m"]},
    # a key matched by both properties and patternProperties must satisfy both
    "mix": {
        "schema": {
            "type": "object",
            "properties": {"k0": {"type": "integer"}},
            "patternProperties": {"^k": {"minimum": 0}, "0$": {"maximum": 50}},
            "additionalProperties": False,
        },
        "init": {"k0": 1},
        "writes": ["/mix/*"],
    },
    # prefixItems: index 0 is a string, later ones integers
    "prefix": {
        "schema": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "maxItems": 4},
        "init": ["s", 1],
        "writes": ["/prefix/-"],
    },
}

# structured components first: hypothesis favours early choices, and they exercise the most
COMPONENT_ORDER = [
    "items",
    "mix",
    "ext",
    "grid",
    "node",
    "map",
    "pair",
    "notes",
    "tags",
    "uniq",
    "prefix",
    "count",
    "choice",
    "title",
    "status",
]
assert sorted(COMPONENT_ORDER) == sorted(COMPONENTS)

CEL_INVARIANTS: dict[str, list[dict[str, Any]]] = {
    "items": [
        {
            "name": "short-label",
            "at": "/items/*",
            "rule": "!has(self.label) || size(self.label) <= 5",
            "message": "label too long",
        }
    ],
    "count": [{"name": "unlucky", "at": "/count", "rule": "self != 13"}],
    "tags": [{"name": "few-tags", "at": "", "rule": "!has(self.tags) || size(self.tags) <= 3"}],
    "node": [{"name": "kid-values", "at": "/node/kids/*", "rule": "self.v >= 0"}],
    "grid": [{"name": "row-sum", "at": "/grid/*", "rule": "size(self) < 3 || self[0] != self[1]"}],
}
ROOT_INVARIANT = {"name": "id-bound", "at": "/items/*", "rule": "!has(root.count) || self.id <= root.count + 20"}
TRANSITION_INVARIANT = {"name": "count-monotonic", "at": "/count", "rule": "self >= oldSelf"}


def _no_bad_note(ctx: InvariantContext) -> str | None:
    return "notes may not say BAD" if ctx.value == "BAD" else None


def _map_total(ctx: InvariantContext) -> str | None:
    total = sum(v for v in ctx.value.values() if isinstance(v, (int, float)) and not isinstance(v, bool))
    return None if total <= 100 else f"map total {total} over 100"


PY_INVARIANTS: dict[str, list[tuple[str, Callable[[InvariantContext], str | None]]]] = {
    "notes": [("/notes/*", _no_bad_note)],
    "map": [("/map", _map_total)],
}


@dataclass
class Family:
    """One generated blueprint configuration (kept as plain data so failures print readably)."""

    components: list[str]
    required: list[str]
    closed: bool
    editor_writes: list[str]
    editor_reads: list[str]
    editor_ops: list[str]
    invariants: list[dict[str, Any]]
    py_invariants: list[str]
    limits: dict[str, int]
    initial: dict[str, Any]
    schema: dict[str, Any] = field(default_factory=dict)

    def workers(self) -> dict[str, dict[str, Any]]:
        return {
            "admin": {"reads": ["/**"], "writes": ["/**"], "ops": ALL_OPS},
            "editor": {"reads": self.editor_reads, "writes": self.editor_writes, "ops": self.editor_ops},
        }

    def blueprint(self) -> CompiledBlueprint:
        bp = compile_blueprint(
            {
                "schema": self.schema,
                "initial_state": self.initial,
                "workers": self.workers(),
                "invariants": self.invariants,
                "limits": self.limits,
            }
        )
        for comp in self.py_invariants:
            for at, func in PY_INVARIANTS[comp]:
                bp.add_invariant(at, func)
        return bp


@st.composite
def families(
    draw: st.DrawFn,
    *,
    allow: tuple[str, ...] | None = None,
    transition: bool = True,
    root_invariant: bool = True,
) -> Family:
    names = list(allow if allow is not None else COMPONENT_ORDER)
    comps = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    comps.sort(key=names.index)
    required = [c for c in comps if draw(st.booleans())]
    closed = draw(st.booleans())
    props = {c: COMPONENTS[c]["schema"] for c in comps}
    schema: dict[str, Any] = {"type": "object", "properties": props, "$defs": DEFS}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    initial = {c: clone(COMPONENTS[c]["init"]) for c in comps if c in required or draw(st.integers(0, 3))}
    pool = [w for c in comps for w in COMPONENTS[c]["writes"]]
    writes = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
    read_pool = ["/" + c for c in comps] + ["/**"]
    reads = draw(st.lists(st.sampled_from(read_pool), max_size=2, unique=True))
    extra = draw(st.lists(st.sampled_from(["remove", "move", "copy"]), unique=True))
    ops = ["add", "replace", "test", *extra]
    invariants = [inv for c in comps if c in CEL_INVARIANTS and draw(st.booleans()) for inv in CEL_INVARIANTS[c]]
    if root_invariant and "items" in comps and "count" in comps and draw(st.booleans()):
        invariants.append(ROOT_INVARIANT)
    if transition and "count" in comps and draw(st.booleans()):
        invariants.append(TRANSITION_INVARIANT)
    py = [c for c in comps if c in PY_INVARIANTS and draw(st.booleans())]
    limits = {
        "max_ops": draw(st.sampled_from([8, 8, 3])),
        "max_patch_bytes": draw(st.sampled_from([4096, 4096, 4096, 4096, 300])),
        "max_depth": 16,
    }
    fam = Family(comps, required, closed, writes, reads, ops, invariants, py, limits, initial, schema)
    return fam


# -- values ---------------------------------------------------------------------------------

_INDEX = [st.integers(0, n - 1) for n in range(1, 65)]


# Note: hypothesis favours the bounds of integer ranges, so rare branches below test for a
# middle value (``== 17``), never for 0.


def pick(data: st.DataObject, seq: Any, label: str | None = None) -> Any:
    """Draw one element of ``seq`` (cheaper than building ``st.sampled_from(seq)`` every time)."""
    seq = list(seq)
    n = len(seq)
    return seq[data.draw(_INDEX[n - 1] if n <= 64 else st.integers(0, n - 1), label=label)]


STRINGS = ["", "a", "ab", "open", "done", "closed", "draft", "BAD", "k1", "xxxxxxx", "é", "日本語", "ßßß"]
INTS = [-1, 0, 1, 2, 5, 10, 12, 13, 50, 60, 99, 100, 101]


def _resolve(root: dict[str, Any], schema: Any) -> Any:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 8:
        target: Any = root
        for t in schema["$ref"][2:].split("/"):
            target = target[t.replace("~1", "/").replace("~0", "~")]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra} if isinstance(target, dict) else target
        seen += 1
    return schema


def fragment_for(root: dict[str, Any], tokens: list[str]) -> Any:
    """Approximate schema of the node at ``tokens`` (for generating mostly-valid values only)."""
    import re

    schema: Any = _resolve(root, root)
    for i, t in enumerate(tokens):
        if not isinstance(schema, dict):
            return True
        if t in (schema.get("properties") or {}):
            schema = schema["properties"][t]
        elif "prefixItems" in schema and t.isdigit() and int(t) < len(schema["prefixItems"]):
            schema = schema["prefixItems"][int(t)]
        elif "items" in schema and (t.isdigit() or t == "-"):
            schema = schema["items"]
        else:
            for pat, sub in (schema.get("patternProperties") or {}).items():
                if re.search(pat, t):
                    schema = sub
                    break
            else:
                add = schema.get("additionalProperties", True)
                schema = add if isinstance(add, dict) else True
        schema = _resolve(root, schema)
        del i
    return schema


def gen_value(data: st.DataObject, root: dict[str, Any], schema: Any, depth: int = 0) -> Any:
    """A value that is usually valid for ``schema``, sometimes not."""
    schema = _resolve(root, schema)
    if data.draw(st.integers(0, 7), label="junk?") == 5 or not isinstance(schema, dict) or depth > 3:
        return data.draw(SMALL_JSON, label="junk")
    if "enum" in schema:
        return pick(data, schema["enum"])
    if "oneOf" in schema:
        return gen_value(data, root, pick(data, schema["oneOf"]), depth + 1)
    types = schema.get("type")
    if isinstance(types, list):
        types = pick(data, types)
    if types is None:
        types = (
            "object"
            if ("properties" in schema or "patternProperties" in schema or "additionalProperties" in schema)
            else ("array" if "items" in schema else "integer")
        )
    if types == "string":
        return pick(data, STRINGS)
    if types == "integer":
        return pick(data, INTS)
    if types == "array":
        n = data.draw(st.integers(0, 2))
        prefix = schema.get("prefixItems") or []
        out = []
        for i in range(n):
            sub = prefix[i] if i < len(prefix) else schema.get("items", True)
            out.append(gen_value(data, root, sub, depth + 1))
        return out
    if types == "object":
        out_obj: dict[str, Any] = {}
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name in schema.get("required", []) or data.draw(st.booleans()):
                out_obj[name] = gen_value(data, root, sub, depth + 1)
        for pat, sub in (schema.get("patternProperties") or {}).items():
            if data.draw(st.booleans()):
                key = "k" + str(data.draw(st.integers(0, 9))) if pat.startswith("^k") else "x"
                out_obj[key] = gen_value(data, root, sub, depth + 1)
        add = schema.get("additionalProperties", True)
        if isinstance(add, dict) and data.draw(st.booleans()):
            out_obj[pick(data, ["x", "y", "zz"])] = gen_value(data, root, add, depth + 1)
        return out_obj
    return data.draw(SMALL_JSON)


def small_json(max_leaves: int = 4) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(INTS),
        st.sampled_from([1.0, 2.5, -0.5]),
        st.sampled_from(STRINGS),
    )
    return st.recursive(
        scalars,
        lambda kids: st.one_of(
            st.lists(kids, max_size=2),
            st.dictionaries(st.sampled_from(["a", "id", "v", "k1", "status", "n"]), kids, max_size=2),
        ),
        max_leaves=max_leaves,
    )


SMALL_JSON = small_json()


# -- patches --------------------------------------------------------------------------------


def existing_pointers(state: Any, prefix: str = "", limit: int = 200) -> list[str]:
    out = [prefix]
    stack: list[tuple[Any, str]] = [(state, prefix)]
    while stack and len(out) < limit:
        node, where = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                p = f"{where}/{k.replace('~', '~0').replace('/', '~1')}"
                out.append(p)
                stack.append((v, p))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                p = f"{where}/{i}"
                out.append(p)
                stack.append((v, p))
    return out


def target_pointers(state: Any, fam: Family) -> list[str]:
    """Existing pointers, append/insert positions, new keys, and a few broken ones."""
    out = existing_pointers(state)
    stack: list[tuple[Any, str]] = [(state, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                stack.append((v, f"{where}/{k.replace('~', '~0').replace('/', '~1')}"))
            out += [f"{where}/k2", f"{where}/zz", f"{where}/label"]
        elif isinstance(node, list):
            out += [f"{where}/-", f"{where}/{len(node)}", f"{where}/{len(node) + 1}", f"{where}/0"]
            for i, v in enumerate(node):
                stack.append((v, f"{where}/{i}"))
    out += ["/" + c for c in fam.components]
    if len(out) % 3 == 0:
        out += ["/nope/deeper", "/items/-/id", "/items/01", "/tags/x"]
    return out


MALFORMED_OPS: list[Any] = [
    {"op": "frob", "path": "/count"},
    {"op": "add", "path": "/count"},
    {"op": "add", "value": 1},
    {"path": "/count", "value": 1},
    {"op": "add", "path": "count", "value": 1},
    {"op": "add", "path": "/a~2b", "value": 1},
    {"op": "copy", "path": "/count"},
    {"op": "move", "path": "/x", "from": 3},
    {"op": "replace", "path": 7, "value": 1},
    5,
    "add",
    None,
]


def instantiate(pattern: str, state: Any) -> list[str]:
    """Concrete pointers a write pattern covers in ``state`` ('*' over existing members)."""
    tokens = ref_parse_pointer(pattern)
    if tokens and tokens[-1] == "**":
        tokens = tokens[:-1]
    out: list[tuple[list[str], Any]] = [([], state)]
    for t in tokens:
        nxt: list[tuple[list[str], Any]] = []
        for prefix, node in out:
            if t == "*" and isinstance(node, dict):
                nxt += [([*prefix, k], v) for k, v in node.items()] + [([*prefix, "k2"], None)]
            elif t == "*" and isinstance(node, list):
                nxt += [([*prefix, str(i)], v) for i, v in enumerate(node)] + [([*prefix, "-"], None)]
            elif isinstance(node, dict):
                nxt.append(([*prefix, t], node.get(t)))
            elif isinstance(node, list) and t.isdigit() and int(t) < len(node):
                nxt.append(([*prefix, t], node[int(t)]))
            else:
                nxt.append(([*prefix, t], None))
        out = nxt
    return ["".join("/" + x.replace("~", "~0").replace("/", "~1") for x in p) for p, _ in out]


def draw_op(
    data: st.DataObject, state: Any, fam: Family, ops: list[str], *, json_only: bool, worker: str = "admin"
) -> Any:
    if data.draw(st.integers(0, 39), label="malformed?") == 17:
        return pick(data, MALFORMED_OPS)
    kind = pick(data, ALL_OPS if data.draw(st.integers(0, 9), label="any op?") == 4 else ops, "op")
    exist = existing_pointers(state)
    if len(exist) > 1 and data.draw(st.integers(0, 19), label="root ok?") != 7:
        exist = exist[1:]  # the root only now and then: moving or removing it is rarely what we want
    targets = target_pointers(state, fam)
    if worker == "editor" and data.draw(st.integers(0, 4), label="outside contract?") != 2:
        # mostly stay inside the contract, so that the later stages get exercised too
        covered = [p for w in fam.editor_writes for p in instantiate(w, state)]
        exist = [p for p in covered if not p.endswith("/-")] or exist
        targets = covered or targets
    if kind in ("remove", "test", "replace"):
        path = pick(data, targets if data.draw(st.integers(0, 4), label="any path?") == 3 else exist, "path")
    else:
        path = pick(data, targets, "path")
    op: dict[str, Any] = {"op": kind, "path": path}
    if kind in ("move", "copy"):
        op["from"] = pick(data, exist, "from")
    if kind in ("add", "replace", "test"):
        tokens = ref_parse_pointer(path)
        if kind == "test" and data.draw(st.booleans()):
            try:
                op["value"] = copy.deepcopy(ref_get(state, tokens))
            except RefError:
                op["value"] = None
        else:
            op["value"] = gen_value(data, fam.schema, fragment_for(fam.schema, tokens))
        if not json_only and data.draw(st.integers(0, 49), label="non-json?") == 23:
            op["value"] = pick(data, [math.nan, math.inf, (1, 2), {1, 2}, 2**70])
    return op


def array_pointers(state: Any) -> list[str]:
    return [p for p in existing_pointers(state) if isinstance(ref_get(state, ref_parse_pointer(p)), list)]


def draw_array_combo(data: st.DataObject, state: Any, fam: Family) -> list[Any] | None:
    """Several ops on one array in one patch: a change at an index, then an insert or remove
    before it (or the other way round), so later ops shift what earlier ops touched."""
    arrays = [p for p in array_pointers(state) if len(ref_get(state, ref_parse_pointer(p))) >= 2]
    if not arrays:
        return None
    arr = pick(data, arrays, "combo array")
    items = ref_get(state, ref_parse_pointer(arr))
    i = data.draw(st.integers(1, len(items) - 1), label="combo index")
    j = data.draw(st.integers(0, i - 1), label="combo shift index")  # strictly before the touched item
    item_schema = fragment_for(fam.schema, [*ref_parse_pointer(arr), "0"])
    children = existing_pointers(items[i], f"{arr}/{i}")
    touch = {"op": "replace", "path": pick(data, children, "combo path")}
    if data.draw(st.booleans(), label="combo junk?"):
        touch["value"] = pick(data, [None, "x", -1, [], {}, {"id": "x"}], "combo junk")
    else:
        touch["value"] = gen_value(data, fam.schema, fragment_for(fam.schema, ref_parse_pointer(touch["path"])))
    shift = data.draw(
        st.sampled_from(
            [
                {"op": "add", "path": f"{arr}/{j}", "value": clone(items[j])},
                {"op": "remove", "path": f"{arr}/{j}"},
                {"op": "move", "from": f"{arr}/{j}", "path": f"{arr}/-"},
                {"op": "copy", "from": f"{arr}/{j}", "path": f"{arr}/{j}"},
            ]
        ),
        label="combo shift",
    )
    del item_schema
    return [shift, touch] if data.draw(st.booleans(), label="shift first?") else [touch, shift]


def draw_patch(data: st.DataObject, state: Any, fam: Family, worker: str, *, json_only: bool = False) -> list[Any]:
    ops = ALL_OPS if worker == "admin" else fam.editor_ops
    if worker == "admin" and data.draw(st.integers(0, 3), label="combo?") == 2:
        combo = draw_array_combo(data, state, fam)
        if combo is not None:
            return combo
    r = data.draw(st.integers(0, 99), label="n_ops")
    n = (
        0
        if r in (40, 41)
        else 9
        if r in (60, 61)
        else 2
        if 42 <= r < 60
        else 3
        if 62 <= r < 80
        else 4
        if 80 <= r < 90
        else 1
    )
    return [draw_op(data, state, fam, ops, json_only=json_only, worker=worker) for _ in range(n)]


def encode_patch(data: st.DataObject, patch: list[Any]) -> Any:
    """The same patch as a Python list, JSON text or UTF-8 bytes."""
    form = pick(data, ["py", "py", "py", "text", "bytes"], "form")
    if form == "py":
        return patch
    try:
        text = json.dumps(patch, ensure_ascii=data.draw(st.booleans()))
    except (TypeError, ValueError):
        return patch
    return text if form == "text" else text.encode("utf-8")


# -- sessions -------------------------------------------------------------------------------


@dataclass
class Step:
    proposal: Proposal
    decision: Decision
    before: bytes
    after: bytes
    before_hash: str
    after_hash: str
    version_before: int
    version_after: int
    scratch_hash: str


@dataclass
class Session:
    fam: Family
    bp: CompiledBlueprint
    initial: Any
    kernel: Kernel
    steps: list[Step]

    @property
    def records(self) -> list[Record]:
        return [s.decision.record for s in self.steps]


def run_session(
    data: st.DataObject,
    fam: Family,
    *,
    steps: int,
    stale: bool = True,
    json_only: bool = False,
    on_step: Callable[[Session, Step], None] | None = None,
) -> Session:
    bp = fam.blueprint()
    kernel = Kernel(bp)
    session = Session(fam, bp, bp.initial_state(), kernel, [])
    n = data.draw(st.integers(1, steps), label="steps")
    for _ in range(n):
        workers = (
            ["admin", "editor"] * 5 if json_only else ["admin", "editor"] * 2 + ["ghost"] + ["admin", "editor"] * 3
        )
        worker = pick(data, workers, "worker")
        patch = draw_patch(data, kernel.state, fam, worker, json_only=json_only)
        raw = encode_patch(data, patch)
        viewed = None
        if stale and data.draw(st.booleans(), label="viewed?"):
            viewed = max(0, kernel.version - pick(data, [0, 0, 1, 2, 3], "lag"))
        proposal = Proposal(worker, raw, viewed_version=viewed)
        before, before_hash, v0 = canon(kernel.state), kernel.state_hash, kernel.version
        decision = kernel.submit(proposal)
        step = Step(
            proposal,
            decision,
            before,
            canon(kernel.state),
            before_hash,
            kernel.state_hash,
            v0,
            kernel.version,
            state_hash(kernel.state),
        )
        session.steps.append(step)
        if on_step is not None:
            on_step(session, step)
    return session


def full_validator(schema: dict[str, Any]) -> Any:
    return jsonschema_rs.validator_for(schema)


def accepted_ops(rec: Record) -> list[dict[str, Any]]:
    assert rec.patch is not None
    ops: list[dict[str, Any]] = orjson.loads(rec.patch)
    return ops
