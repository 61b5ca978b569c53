"""The proposal schema itself: grouping targets by op and value schema into one ``anyOf``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...kernel.canonical import JSON, canonical_str
from ...kernel.pointer import resolve
from ...kernel.readscope import read_scope
from ._fragments import ANY_VALUE, REFERS_TO, _Refs, _regex_for, _resolve_references, _tighten_strings
from ._targets import Target, write_targets
from ._values import _changing, _container_bounds, _new_item_schema

if TYPE_CHECKING:
    from ...kernel.protocol import KernelBlueprint
    from ...kernel.schema import SchemaIndex

PATCH_KEY = "patch"
"""The member of the wrapper object that holds the patch array."""

DEFAULT_MAX_OPS = 4
"""Default ``maxItems`` of the patch array."""

DEFAULT_MAX_ENUM = 24
"""Default number of concrete paths listed per op group before a regex or truncation is used."""

CACHE_SIZE = 256
"""Derived schemas kept (least recently used dropped first), over all blueprints and workers."""

_cache: OrderedDict[Hashable, ConstrainedSchema] = OrderedDict()
"""Finished schemas by (blueprint digest, worker, options, op groups with their targets): the
schema is a function of exactly these (the state enters only through the targets and their
fragments, and fragments that refer to state values, ``x-refers-to``, are never cached), so a
worker whose writable targets did not change since its last call reuses the schema instead of
resolving, tightening and assembling it again. A new blueprint (or contract) has a new digest."""


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


def clear_caches() -> None:
    """Forget every derived schema (tests; a process never needs to)."""
    _cache.clear()


def proposal_schema(
    blueprint: KernelBlueprint,
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

    scope = read_scope(blueprint, worker)
    for t in targets:
        if scope is not None and not scope.may_name(t.tokens):
            continue  # the quarantine region, which the kernel's authorise stage refuses
        probe = (*t.tokens[:-1], "x") if t.open_key else t.tokens
        frag = schema.fragment(probe)
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
            if include_test and "test" in ops and (scope is None or scope.may_read(t.tokens)):
                add("test", t, frag)
        elif "add" in ops and may_add:
            created = _new_item_schema(frag, parent) if new_item else frag
            if created is not None:
                add("add", t, created)

    if not groups:
        return None
    key: Hashable = None
    derived: ConstrainedSchema | None = None
    if not any(REFERS_TO in k for k in frags):
        key = (
            blueprint.digest, worker, max_ops, max_enum, include_test, string_max_length, json_safe_strings,
            tuple((op, k, tuple(members)) for (op, k), members in groups.items()),
        )  # fmt: skip
        derived = _cache.get(key)
        if derived is not None:
            _cache.move_to_end(key)
            if derived.targets != tuple(targets):
                # Same groups, other targets (one that offers no op now, say): the schema is the
                # same, the targets must be this state's.
                derived = ConstrainedSchema(
                    derived.schema, tuple(targets), derived.ops, derived.truncated, derived.paths, derived.defs
                )
    if derived is None:
        derived = _assemble(schema, refs, groups, frags, targets, state, max_ops, max_enum,
                            string_max_length, json_safe_strings)  # fmt: skip
        if key is not None:
            _cache[key] = derived
            if len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return _with_handles(derived, handles)


def _with_handles(derived: ConstrainedSchema, handles: Sequence[str]) -> ConstrainedSchema:
    # A fresh top-level dict (callers may pop members such as ``$defs`` off what they get), with
    # the handles of this view (they change with every view, the rest does not).
    wrapper = dict(derived.schema)
    if handles:
        props_top = dict(wrapper["properties"])
        props_top["expand"] = {"type": "array", "maxItems": 4, "items": {"enum": list(dict.fromkeys(handles))}}
        wrapper["properties"] = props_top
    # Built directly (dataclasses.replace introspects the fields on every call: once per step).
    return ConstrainedSchema(wrapper, derived.targets, derived.ops, derived.truncated, derived.paths, derived.defs)


def _assemble(
    schema: SchemaIndex,
    refs: _Refs,
    groups: dict[tuple[str, str], list[Target]],
    frags: dict[str, Any],
    targets: Sequence[Target],
    state: JSON,
    max_ops: int,
    max_enum: int,
    string_max_length: int | None,
    json_safe_strings: bool,
) -> ConstrainedSchema:
    """The schema of the grouped targets: value schemas resolved and tightened, paths listed
    (or as a regex), wrapped as ``{"patch": [...]}`` (without the view's ``expand`` handles)."""
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
