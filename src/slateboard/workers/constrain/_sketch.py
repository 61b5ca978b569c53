"""A partial state rebuilt from a view, for deriving a proposal schema without the real state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...kernel.canonical import JSON
from ...kernel.pointer import PointerError, Tokens, is_array_index, parse_pointer, resolve

if TYPE_CHECKING:
    from ...kernel.protocol import KernelBlueprint


def sketch_state(
    blueprint: KernelBlueprint,
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
    schema = blueprint.schema

    def container_for(tokens: Tokens) -> Any:
        s = schema.fragment(tokens)
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
            ps = schema.fragment(tuple(prefix))
            if isinstance(parent, dict) and tok not in parent:
                if not (isinstance(ps, dict) and tok in (ps.get("required") or ())):
                    break
                made = container_for((*prefix, tok))
                if made is None:
                    break
                parent[tok] = made
            prefix.append(tok)
    return root
