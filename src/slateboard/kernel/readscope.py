"""Read isolation, as the kernel enforces it (issue 29, Q1).

A worker may read what its read contract covers, except the quarantine region unless its read
contract names that region literally (a pattern starting with the region's literal path, e.g. the
sanitiser's ``/quarantine``; ``/**`` does not name it). The kernel uses a ``ReadScope`` at its
``authorise`` stage (an op may not read, through ``test`` or the ``from`` of ``move``/``copy``, a
node the worker may not read whole; no op may name the quarantine region unless the worker's
contract names it) and when it words a rejection (a reason never quotes a value the worker may
not read). The view builder cuts the same region out of every view (``slateboard.views``).
"""

from __future__ import annotations

from typing import Any

from .contract import WorkerContract
from .pointer import Pattern, Tokens

__all__ = ["ReadScope", "quarantine_base", "read_scope"]

_WILDCARDS = ("*", "**", "-")


def quarantine_base(region: Pattern | None) -> Tokens | None:
    """The literal leading tokens of a quarantine region pattern (``/quarantine/**`` ->
    ``("quarantine",)``), or None when there is no region or it has no literal root (such a
    region cannot be cut out of the state, so it hides nothing)."""
    if region is None:
        return None
    base: list[str] = []
    for token in region.tokens:
        if token in _WILDCARDS:
            break
        base.append(token)
    return tuple(base) or None


def _names(patterns: tuple[Pattern, ...], base: Tokens) -> bool:
    n = len(base)
    return any(len(p.tokens) >= n and tuple(p.tokens[:n]) == base for p in patterns)


def _related(a: Tokens, b: Tokens) -> bool:
    """True when one path is a prefix of the other (the same node, an ancestor or a descendant)."""
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


class ReadScope:
    """What one worker may read and name (see the module docstring).

    ``hidden`` is the quarantine region's literal root when the worker may not read it (None
    otherwise); ``writes_hidden`` says whether its write contract names that region (an
    untrusted worker appends there without reading it).
    """

    __slots__ = ("contract", "hidden", "reads_everything", "writes_hidden")

    def __init__(self, contract: WorkerContract, quarantine: Pattern | None) -> None:
        self.contract = contract
        base = quarantine_base(quarantine)
        self.hidden: Tokens | None = None if base is None or _names(contract.reads, base) else base
        self.writes_hidden = self.hidden is not None and _names(contract.writes, self.hidden)
        # The common case (a ``/**`` reader on a board without a hidden region) costs nothing.
        self.reads_everything = self.hidden is None and contract.may_read(())

    def touches_hidden(self, tokens: Tokens) -> bool:
        """True when the node at ``tokens`` is in the hidden region or holds part of it."""
        return self.hidden is not None and _related(self.hidden, tokens)

    def may_read(self, tokens: Tokens) -> bool:
        """True when the worker may read the node at ``tokens`` and everything below it."""
        if self.reads_everything:
            return True
        return self.contract.may_read(tokens) and not self.touches_hidden(tokens)

    def may_name(self, tokens: Tokens) -> bool:
        """True when a write op may name ``tokens``: outside the hidden region (and not one of
        its ancestors, which would overwrite it), or inside it when the write contract names it."""
        if self.hidden is None or not _related(self.hidden, tokens):
            return True
        return self.writes_hidden and len(tokens) > len(self.hidden)


def read_scope(blueprint: Any, worker: str) -> ReadScope | None:
    """The ReadScope of ``worker`` on a compiled blueprint (its ``quarantine`` member, when it
    has one, is the region), or None for an unknown worker."""
    contract = blueprint.workers.get(worker)
    if contract is None:
        return None
    region = getattr(blueprint, "quarantine", None)
    return ReadScope(contract, region if isinstance(region, Pattern) else None)
