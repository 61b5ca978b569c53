"""Read isolation for the quarantine region (issue 18): what untrusted workers wrote is readable
only by a worker whose read contract names the region (the sanitiser); and visibility on entries
(issue 44): an entry of a collection with visibility is readable only by the workers its
visibility field names (``slateboard.kernel.visibility``).

``build_view`` applies ``readable_state`` to the state it is given, so every view, whoever builds
it (the step engine, the dashboard, a caller of ``build_view`` or ``kernel_view``), and so every
worker reading through a view (LLM workers and function workers alike) honours it; an LLM
worker that reads the live state for its reply schema applies it too.
"""

from __future__ import annotations

from typing import Any

from ..kernel.canonical import JSON
from ..kernel.readscope import read_scope
from ..kernel.visibility import Visibility

__all__ = ["quarantine_hidden", "readable_state"]


def quarantine_hidden(blueprint: Any, worker: str) -> tuple[str, ...] | None:
    """The tokens of the quarantine region a worker must not read, or None when it may read it:
    only a worker whose read contract names the region (a pattern starting with the region's
    literal path, e.g. the sanitiser's ``/quarantine``) reads it; ``/**`` or ``/*`` does not
    name it, so a trusted worker with a broad contract never sees injected text. ``blueprint``
    is a compiled blueprint (one without a ``quarantine`` region hides nothing). The kernel's
    ``ReadScope`` decides it, so views and the authorise stage agree."""
    scope = read_scope(blueprint, worker)
    return None if scope is None else scope.hidden


def readable_state(blueprint: Any, worker: str, state: JSON) -> JSON:
    """``state`` as ``worker`` may read it: without the quarantine region unless the worker's
    read contract names it (``quarantine_hidden``), and without the entries hidden from it
    (``Visibility.cut``). Copies only the paths it cuts; cutting an already cut state changes
    nothing."""
    vis = getattr(blueprint, "visibility", None)
    if isinstance(vis, Visibility):
        state = vis.cut(state, worker)
    hidden = quarantine_hidden(blueprint, worker)
    if hidden is None:
        return state

    def cut(node: JSON, rest: tuple[str, ...]) -> JSON:
        if isinstance(node, dict):
            key = rest[0]
            if key not in node:
                return node
            if len(rest) == 1:
                return {k: v for k, v in node.items() if k != key}
            return {**node, key: cut(node[key], rest[1:])}
        if isinstance(node, list) and rest[0].isdigit() and int(rest[0]) < len(node):
            i = int(rest[0])
            if len(rest) == 1:
                return node[:i] + node[i + 1 :]
            return [*node[:i], cut(node[i], rest[1:]), *node[i + 1 :]]
        return node

    return cut(state, hidden)
