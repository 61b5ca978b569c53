"""Expanding a worker's write patterns over the current state into concrete targets.

Authorisation is the kernel's: every target is filtered through ``WorkerContract.may_write``,
the very check of the ``authorise`` stage, and value schemas come from ``SchemaIndex.fragment``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...kernel.canonical import JSON
from ...kernel.pointer import Tokens, expand, format_pointer, is_array_index, resolve

if TYPE_CHECKING:
    from ...kernel.protocol import KernelBlueprint


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


def _is_plain_map(node_schema: Any) -> bool:
    if not isinstance(node_schema, dict):
        return node_schema is True
    if node_schema.get("properties") or node_schema.get("patternProperties") or "propertyNames" in node_schema:
        return False
    add = node_schema.get("additionalProperties", True)
    return add is not False


def write_targets(blueprint: KernelBlueprint, worker: str, state: JSON) -> list[Target]:
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
                        node_schema = schema.fragment(parent)
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
