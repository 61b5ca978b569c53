"""The ``output`` of a typed worker, checked when a blueprint is accepted."""

from __future__ import annotations

from ..kernel.pointer import Pattern, PointerError
from ..kernel.schema import SchemaIndex, pattern_locations
from .models import WorkerSpec

__all__ = ["output_issues"]


def output_issues(
    output: str, spec: WorkerSpec, writes: list[Pattern], locations: SchemaIndex | None, where: str
) -> list[tuple[str, str]]:
    """Why a worker's ``output`` pointer cannot be where its typed reply goes: not a concrete
    pointer, not covered by its writes, no ``add`` op, no schema location, or a function worker."""
    if spec.function is not None:
        return [(where, "a function worker returns its own patch; 'output' is for LLM workers")]
    try:
        tokens = Pattern.parse(output).tokens
    except PointerError as exc:
        return [(where, str(exc))]
    if not tokens or "*" in tokens or "**" in tokens or "-" in tokens[:-1]:
        return [(where, f"output {output!r} must be a concrete pointer below the root ('-' only last)")]
    if not any(w.covers(tokens) for w in writes):
        return [(where, f"output {output!r} is not covered by the worker's write patterns")]
    if "add" not in spec.ops:
        return [(where, f"output {output!r} is written with 'add', which the worker's ops do not grant")]
    if locations is not None and not pattern_locations(locations, tokens):
        return [(where, f"output {output!r} matches no location of the state schema")]
    return []
