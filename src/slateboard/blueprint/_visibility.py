"""Visibility on entries, checked when a blueprint is accepted (see slateboard.kernel.visibility).

What a collection with visibility must be, so that hiding an entry hides everything about it:
an object keyed by entry id at a concrete pointer, reached through object members only and
present in the initial state (no op may replace it); its schema and its ancestors' schemas
check members one by one (no keyword that counts members, names fixed members or validates the
whole object, whose verdict or message would depend on the hidden entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kernel.pointer import Pattern, PointerError, Tokens, escape_token
from ..kernel.schema import SchemaIndex
from ..kernel.visibility import EVERYONE, Visibility, VisibleCollection
from .models import Blueprint

__all__ = ["Visibility", "visibility_issues"]

# Keywords of a collection's schema whose verdict depends on members other than the one written.
_COUNTING = ("minProperties", "maxProperties", "required", "dependentRequired", "dependentSchemas", "properties")


def visibility_issues(
    bp: Blueprint, workers: list[str], schema: SchemaIndex | None, report: Callable[[str, str], None]
) -> Visibility | None:
    """The compiled visibility terms of ``bp``, or None when it declares none or they have
    issues; each issue is passed to ``report`` as (where in the blueprint, what)."""
    issues: list[tuple[str, str]] = []
    found = _visibility(bp, workers, schema, issues)
    for where, what in issues:
        report(where, what)
    return None if issues else found


def _visibility(
    bp: Blueprint, workers: list[str], schema: SchemaIndex | None, issues: list[tuple[str, str]]
) -> Visibility | None:
    spec = bp.visibility
    known = set(workers)
    if spec is None:
        for name, w in bp.workers.items():
            if w.addresses is not None:
                issues.append((f"/workers/{escape_token(name)}/addresses", "the blueprint declares no 'visibility'"))
        return None
    for label, members in spec.labels.items():
        where = f"/visibility/labels/{escape_token(label)}"
        if label in known or label == EVERYONE:
            issues.append((where, f"label {label!r} is also a worker name (or '*'): pick another"))
        issues.extend((where, f"unknown worker {m!r} in label {label!r}") for m in members if m not in known)
    names = known | set(spec.labels) | {EVERYONE}
    for name, w in bp.workers.items():
        for i, n in enumerate(w.addresses or ()):
            if n not in names:
                issues.append(
                    (f"/workers/{escape_token(name)}/addresses/{i}", f"{n!r} is neither a worker nor a label")
                )
    collections: list[VisibleCollection] = []
    for i, c in enumerate(spec.collections):
        where = f"/visibility/collections/{i}"
        tokens = _concrete(c.path)
        if tokens is None:
            issues.append((f"{where}/path", f"{c.path!r} must be a concrete pointer below the root (no wildcards)"))
            continue
        if not c.field:
            issues.append((f"{where}/field", "the visibility field needs a name"))
            continue
        overlap = next((o for o in collections if _related(o.tokens, tokens)), None)
        if overlap is not None:
            issues.append((f"{where}/path", f"{c.path!r} overlaps the collection {overlap.path!r}"))
            continue
        problem = _shape(bp.initial_state, tokens) or (_schema_problem(schema, tokens) if schema else None)
        if problem is not None:
            issues.append((f"{where}/path", f"{c.path!r}: {problem}"))
            continue
        coll = VisibleCollection(tokens, c.field, c.required)
        collections.append(coll)
        issues.extend(_initial_entries(bp.initial_state, coll, names))
    addresses = {name: w.addresses for name, w in bp.workers.items()}
    return Visibility(collections, spec.labels, workers, addresses)


def _concrete(path: str) -> Tokens | None:
    try:
        tokens = Pattern.parse(path).tokens
    except PointerError:
        return None
    if not tokens or any(t in ("*", "**", "-") for t in tokens):
        return None
    return tokens


def _related(a: Tokens, b: Tokens) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _shape(state: Any, tokens: Tokens) -> str | None:
    """Why the initial state does not hold an object at ``tokens`` reached through objects."""
    node = state
    for depth, token in enumerate(tokens):
        if not isinstance(node, dict) or token not in node:
            return f"the initial state has no object member at {'/' + '/'.join(tokens[: depth + 1])!r}"
        node = node[token]
    if not isinstance(node, dict):
        return "the collection must be an object keyed by entry id (array positions would show hidden entries)"
    return None


def _schema_problem(schema: SchemaIndex, tokens: Tokens) -> str | None:
    chain, loc = schema.locate(tokens)
    if loc is None:
        return "the state schema has no location here"
    for at in (*chain, loc):
        if at.whole:
            return f"the schema at {at.pointer} validates whole objects, which would weigh hidden entries"
    if isinstance(loc.schema, dict):
        found = [k for k in _COUNTING if k in loc.schema]
        if found:
            return f"the collection's schema uses {', '.join(found)}, which would count or name hidden entries"
    return None


def _initial_entries(state: Any, coll: VisibleCollection, names: set[str]) -> list[tuple[str, str]]:
    """Entries of the initial state whose visibility field is malformed, names an unknown name,
    or is missing where the collection requires it."""
    node = state
    for token in coll.tokens:
        node = node[token]
    out: list[tuple[str, str]] = []
    for key, entry in node.items():
        where = f"/initial_state{coll.path}/{escape_token(key)}"
        if not isinstance(entry, dict) or coll.field not in entry:
            if coll.required:
                out.append((where, f"the entry must carry {coll.field!r} (the collection requires it)"))
            continue
        raw = entry[coll.field]
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            out.append((f"{where}/{escape_token(coll.field)}", "must be a list of worker names or labels"))
            continue
        out.extend(
            (f"{where}/{escape_token(coll.field)}", f"{n!r} is neither a worker nor a label")
            for n in raw
            if n not in names
        )
    return out
