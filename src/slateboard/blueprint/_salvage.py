"""Keeping a blueprint's later checks running when its shape is wrong.

Pydantic rejects the whole document on the first shape error (an unknown key, a wrong type, a
missing required field), so the acceptance checks that come after it (JSON Schema, contract
patterns against the schema, CEL) would only run once the author fixed the shape, one phase per
attempt. ``salvage`` instead removes the parts the shape errors name, as narrowly as it can (the
offending field of a worker or rule when the field is optional, else that worker, rule, stage
or invariant), validates again, and hands back a Blueprint for the later checks together with
the shape issues and what it removed, so that every later issue is reported at its place in the
author's document and none is reported about a part that was removed.

``prune_schema`` does the same for the state schema: it removes each keyword the JSON Schema
meta-schema refuses, naming each, so the contract checks still see the schema's locations.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
from pydantic import BaseModel as PydanticModel
from pydantic import ValidationError

from ..kernel.pointer import escape_token
from ..kernel.schema import cut_nonlocal_references
from .models import Blueprint, InvariantSpec, RuleSpec, StageSpec

__all__ = ["Salvaged", "prune_schema", "salvage"]

_LISTS: dict[str, type[PydanticModel] | None] = {
    "rules": RuleSpec,
    "invariants": InvariantSpec,
    "stages": StageSpec,
    "approval": None,
}
"""Top-level list sections: a broken item is dropped (or its optional field), later items keep
their original index in the issues (``Salvaged.original``)."""

_DROPPED = object()
"""Marks a list item removed in this round (None is a value an author may have written)."""

_MAX_ROUNDS = 32
"""Validation rounds at most: each round removes at least one part, and model validators (which
only run once the fields are valid) may name a further part in the next round."""

_MAX_SCHEMA_ISSUES = 50
"""Schema keywords ``prune_schema`` removes (and names) at most before it gives up."""


@dataclass
class Salvaged:
    """What ``salvage`` found and removed.

    ``shape``: (pointer into the author's document, message) per shape error, in order.
    ``blueprint``: the document with the broken parts removed, validated; None when no part
    could be removed (an error at the root). ``schema_broken``: the state schema itself had the
    wrong shape (the schema-dependent checks must not run). ``workers_broken``: the ``workers``
    section itself was missing or not a mapping (unknown-worker checks must not run).
    ``indexes``: per list section, the author's index of each item kept (``original``).
    """

    shape: list[tuple[str, str]] = field(default_factory=list)
    blueprint: Blueprint | None = None
    schema_broken: bool = False
    workers_broken: bool = False
    indexes: dict[str, list[int]] = field(default_factory=dict)

    def original(self, path: str) -> str:
        """``path`` (a pointer into the salvaged document) as a pointer into the author's
        document: list items after a dropped one are shifted back to their own index."""
        parts = path.split("/")
        if len(parts) >= 3 and parts[1] in self.indexes and parts[2].isdigit():
            kept = self.indexes[parts[1]]
            i = int(parts[2])
            if i < len(kept):
                parts[2] = str(kept[i])
        return "/".join(parts)


def _pointer(loc: tuple[Any, ...]) -> str:
    return "".join("/" + escape_token(str("schema" if item == "state_schema" else item)) for item in loc)


def _drop_field_or_item(items: list[Any], i: int, rest: tuple[Any, ...], model: type[PydanticModel] | None) -> bool:
    """Remove the optional field ``rest[0]`` of item ``i`` when it is present, else mark the
    item dropped (replaced by None; the caller removes them). True when something changed."""
    item = items[i]
    if item is _DROPPED:
        return False
    if rest and model is not None and isinstance(item, dict):
        name = str(rest[0])
        info = model.model_fields.get(name)
        if name in item and (info is None or not info.is_required()):
            del item[name]
            return True
    items[i] = _DROPPED
    return True


def _prune(work: dict[str, Any], loc: tuple[Any, ...], out: Salvaged) -> bool:
    """Remove the part of ``work`` that error location ``loc`` names (see module docstring)."""
    if not loc:
        return False
    top = "schema" if loc[0] == "state_schema" else str(loc[0])
    if top == "schema":
        out.schema_broken = True
        if work.get("schema") == {}:
            return False
        work["schema"] = {}
        return True
    if top == "workers":
        workers = work.get("workers")
        if len(loc) == 1 or not isinstance(workers, dict):
            out.workers_broken = True
            if workers == {}:
                return False
            work["workers"] = {}
            return True
        name = str(loc[1])
        spec = workers.get(name)
        if len(loc) >= 3 and isinstance(spec, dict) and str(loc[2]) in spec:
            del spec[str(loc[2])]
            return True
        if spec == {}:
            return False
        workers[name] = {}
        return True
    if top in _LISTS:
        items = work.get(top)
        if len(loc) == 1 or not isinstance(items, list) or not isinstance(loc[1], int) or loc[1] >= len(items):
            if top not in work:
                return False
            del work[top]
            out.indexes.pop(top, None)
            return True
        return _drop_field_or_item(items, loc[1], loc[2:], _LISTS[top])
    if top not in work:
        return False
    section = work[top]
    if len(loc) >= 2 and isinstance(section, dict) and str(loc[1]) in section:
        del section[str(loc[1])]
    else:
        del work[top]
    return True


def salvage(data: dict[str, Any]) -> Salvaged:
    """Validate ``data`` as a Blueprint, removing what each shape error names until the rest
    validates (see module docstring). Never raises for a dict input."""
    out = Salvaged()
    work = copy.deepcopy(data)
    for name in _LISTS:
        if isinstance(work.get(name), list):
            out.indexes[name] = list(range(len(work[name])))
    seen: set[tuple[str, str]] = set()
    for _ in range(_MAX_ROUNDS):
        try:
            out.blueprint = Blueprint.model_validate(work)
            return out
        except ValidationError as exc:
            errors = exc.errors()
        changed = False
        for err in errors:
            issue = (out.original(_pointer(tuple(err["loc"]))), str(err["msg"]))
            if issue not in seen:
                seen.add(issue)
                out.shape.append(issue)
        for err in errors:
            changed = _prune(work, tuple(err["loc"]), out) or changed
        for name in _LISTS:
            items = work.get(name)
            if isinstance(items, list) and name in out.indexes:
                out.indexes[name] = [
                    k for k, item in zip(out.indexes[name], items, strict=True) if item is not _DROPPED
                ]
                work[name] = [item for item in items if item is not _DROPPED]
        if not changed:
            return out
    return out


def _has(node: Any, token: str | int) -> bool:
    if isinstance(node, dict):
        return token in node
    return isinstance(node, list) and isinstance(token, int) and 0 <= token < len(node)


def _remove(schema: Any, path: list[str | int]) -> bool:
    node = schema
    for token in path[:-1]:
        if not _has(node, token):
            return False
        node = node[token]
    last = path[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        # An item of a schema array (allOf, prefixItems...): a true schema keeps the others' places.
        node[last] = True
        return True
    return False


def prune_schema(schema: Any) -> tuple[Any, list[tuple[str, str]]]:
    """A copy of ``schema`` without each keyword the JSON Schema meta-schema refuses, and one
    (pointer inside the schema, message) per keyword removed. A refusal of the whole schema
    (its root) cannot be pruned: it is reported and the schema returned as it is."""
    pruned = copy.deepcopy(schema)
    found: list[tuple[str, str]] = []
    # The meta-schema check fetches an unknown ``$schema`` over the network (issue 29, R6): cut
    # every non-local reference out first (SchemaIndex reports each as a blueprint issue).
    cut_nonlocal_references(pruned)
    for _ in range(_MAX_SCHEMA_ISSUES):
        try:
            jsonschema_rs.meta.validate(pruned)
            return pruned, found
        except jsonschema_rs.ValidationError as exc:
            path = list(exc.instance_path)
            found.append(("".join("/" + escape_token(str(t)) for t in path), exc.message))
            if not path or not _remove(pruned, path):
                return pruned, found
        except Exception as exc:  # referencing errors and friends: no location to prune
            found.append(("", str(exc)))
            return pruned, found
    return pruned, found
