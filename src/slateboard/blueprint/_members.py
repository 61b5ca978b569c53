"""Paths checked against the members the state schema declares, when a blueprint is accepted.

``pattern_locations`` (the kernel's schema index) answers which schema locations a pattern
reaches, and takes a location validated whole (a field that is ``X | None``, an ``anyOf``) as
holding anything. Here the schema is walked through ``$ref``, ``anyOf``, ``oneOf`` and ``allOf``,
so a misspelt member below an optional object is found too, and the reason names the object and
its members (``Review has no member 'verdcit' (members: reasons, verdict); did you mean
'verdict'?``). The same walk checks the paths CEL expressions read (``state.x``, ``root.x``, and
``self.x`` below an invariant's location: ``slateboard.kernel.celpaths``).

The walk is lenient: anything it does not model (conditionals, ``not``, unevaluated properties,
references it cannot resolve, a member matched by a pattern) counts as allowing the path. An
object that does not close itself (no ``additionalProperties: false``) allows every member: the
Python builder closes its state models unless they say ``extra="allow"``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.celpaths import member_paths
from ..kernel.pointer import MISSING, Pattern, PointerError, is_array_index, resolve
from ..kernel.schema import SchemaIndex, pattern_locations
from .models import Blueprint

__all__ = ["cel_path_issues", "cel_reference_issues", "path_issue"]

_COMBINATORS = ("anyOf", "oneOf", "allOf")
_STRUCTURE = frozenset({"type", "properties", "items", "prefixItems", "additionalProperties", "patternProperties"})
_UNMODELLED = frozenset({"if", "then", "else", "not", "dependentSchemas", "unevaluatedProperties", "$dynamicRef"})
_OPEN = object()
"""Walk result: the schema allows any member here (or the walk cannot tell)."""


class _Walk:
    def __init__(self, root: JSON) -> None:
        self.root = root
        self.reasons: list[str] = []

    def _resolve(self, node: Any) -> Any:
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#") or ref in seen:
                return True
            seen.add(ref)
            try:
                target = resolve(self.root, ref[1:])
            except PointerError:
                return True
            if target is MISSING:
                return True
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if _STRUCTURE & set(rest) or any(k in rest for k in _COMBINATORS):
                # both apply: keep the walk lenient and take the union of what either allows
                return {"anyOf": [target, rest]}
            node = target
        return node

    def expand(self, node: Any) -> list[Any]:
        """The plain subschemas ``node`` stands for (references resolved, combinators opened)."""
        node = self._resolve(node)
        if not isinstance(node, dict) or not any(k in node for k in _COMBINATORS):
            return [node]
        out: list[Any] = []
        for key in _COMBINATORS:
            for branch in node.get(key) or []:
                out.extend(self.expand(branch))
        rest = {k: v for k, v in node.items() if k not in _COMBINATORS}
        if _STRUCTURE & set(rest):
            out.append(rest)
        return out

    def children(self, node: Any, token: str, at: str) -> list[Any] | object:
        """The subschemas member ``token`` of ``node`` may have, ``_OPEN``, or [] (a reason kept)."""
        if node is False:
            self.reasons.append(f"the schema allows nothing at {at}")
            return []
        if not isinstance(node, dict) or not (_STRUCTURE & set(node)) or _UNMODELLED & set(node):
            return _OPEN
        types = node.get("type")
        kinds = set(types) if isinstance(types, list) else ({types} if isinstance(types, str) else set())
        objectish = "object" in kinds or "properties" in node or "additionalProperties" in node
        arrayish = "array" in kinds or "items" in node or "prefixItems" in node
        if kinds and not objectish and not arrayish:
            self.reasons.append(f"{at} is a {'/'.join(sorted(kinds))}: it has no member {token!r}")
            return []
        found: list[Any] = []
        if arrayish and (is_array_index(token) or token in ("*", "-")):
            if "items" not in node or "prefixItems" in node:
                return _OPEN
            found.append(node["items"])
        if objectish:
            props = node.get("properties") or {}
            additional = node.get("additionalProperties", True)
            patterns = node.get("patternProperties") or {}
            if token == "*":
                if additional is not False or patterns:
                    return _OPEN
                found.extend(props.values())
            elif token in props:
                found.append(props[token])
            elif any(_matches(p, token) for p in patterns) or additional is True:
                return _OPEN
            elif isinstance(additional, dict):
                found.append(additional)
            else:
                self.reasons.append(_no_member(node, token, at, list(props)))
        elif not found:
            self.reasons.append(f"{at} is a list: {token!r} is not an index")
        return found

    def problem(self, tokens: Sequence[str]) -> str | None:
        """Why no path matching ``tokens`` can exist, or None when one can (or it cannot tell)."""
        frontier = self.expand(self.root)
        for i, token in enumerate(tokens):
            if token == "**":
                return None
            at = "/" + "/".join(tokens[:i])
            nxt: list[Any] = []
            for node in frontier:
                got = self.children(node, token, at)
                if got is _OPEN:
                    return None
                assert isinstance(got, list)
                for child in got:
                    nxt.extend(self.expand(child))
            if not nxt:
                named = [r for r in self.reasons if "has no member" in r]
                return (named or self.reasons or [f"nothing is allowed at {at}"])[0]
            frontier = nxt
        return None


def _matches(pattern: str, token: str) -> bool:
    try:
        return re.search(pattern, token) is not None
    except re.error:
        return True


def _no_member(node: dict[str, Any], token: str, at: str, members: list[str]) -> str:
    title = node.get("title")
    where = f"{title} (at {at})" if isinstance(title, str) and title else f"the object at {at}"
    text = f"{where} has no member {token!r} (members: {', '.join(sorted(members)) or 'none'})"
    close = difflib.get_close_matches(token, members, n=1)
    return text + (f"; did you mean {close[0]!r}?" if close else "")


def path_issue(locations: SchemaIndex, schema: JSON | None, tokens: Sequence[str]) -> str | None:
    """None when a pattern's ``tokens`` can reach a location of the state schema; else the reason
    to add to the issue (``": <why>"``, or ``""`` when only the schema index knows). ``schema``
    None (an invalid one) leaves the member walk out."""
    why = None if schema is None else _Walk(schema).problem(tokens)
    if why is not None:
        return f": {why}"
    return None if pattern_locations(locations, tuple(tokens)) else ""


def cel_path_issues(source: str | None, schema: JSON, *, at: str | None = None) -> list[str]:
    """One message per path CEL ``source`` reads that names no location of the state schema:
    ``state.x`` and ``root.x`` from the state's root, ``self.x`` and ``oldSelf.x`` below the
    invariant location ``at`` (when given)."""
    if not source:
        return []
    roots = ["state", "root"]
    base: tuple[str, ...] = ()
    if at is not None:
        try:
            base = Pattern.parse(at).tokens
        except PointerError:
            return []
        roots += ["self", "oldSelf"]
    out: list[str] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for variable, tokens in member_paths(source, roots):
        if not tokens or (variable, tokens) in seen:
            continue
        seen.add((variable, tokens))
        full = (*base, *tokens) if variable in ("self", "oldSelf") else tokens
        why = _Walk(schema).problem(full)
        if why is not None:
            out.append(f"{variable}.{'.'.join(tokens)} names no location of the state schema: {why}")
    return out


def cel_reference_issues(bp: Blueprint) -> list[tuple[str, str]]:
    """(where, message) for every path a CEL expression of ``bp`` reads that names no location
    of its state schema: rule conditions, invariants (``self`` below their ``at``), stages,
    ``done`` and ``fail``."""
    schema = bp.state_schema
    found: list[tuple[str, str]] = []
    for i, rule in enumerate(bp.rules):
        found += [(f"/rules/{i}/when", m) for m in cel_path_issues(rule.when, schema)]
    for i, inv in enumerate(bp.invariants):
        found += [(f"/invariants/{i}/rule", m) for m in cel_path_issues(inv.rule, schema, at=inv.at)]
    for i, stage in enumerate(bp.stages):
        found += [(f"/stages/{i}/enter", m) for m in cel_path_issues(stage.enter, schema)]
        found += [(f"/stages/{i}/exit", m) for m in cel_path_issues(stage.exit, schema)]
    found += [("/done", m) for m in cel_path_issues(bp.done, schema)]
    found += [("/fail", m) for m in cel_path_issues(bp.fail, schema)]
    return found
