"""Which ops and values a target admits now: container bounds, no-op avoidance, fresh ids."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...kernel.canonical import JSON
from ...kernel.jsonvalue import json_equal
from ...kernel.pointer import resolve
from ._targets import Target

if TYPE_CHECKING:
    from ...kernel.schema import SchemaIndex


def _container_bounds(schema: SchemaIndex, state: JSON, t: Target) -> tuple[bool, bool]:
    """(may add here, may remove here) given the parent's size bounds and required members."""
    if not t.tokens:
        return True, False
    parent_tokens = t.tokens[:-1]
    parent = resolve(state, parent_tokens)
    ps = schema.fragment(parent_tokens)
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
