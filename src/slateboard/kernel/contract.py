"""Worker contracts: which paths a worker may read and write, and which operations it may use.

A contract is compiled once, when its blueprint is accepted, and then consulted by the kernel's
``ops``, ``authorise`` and ``stale`` stages, the scheduler and the view builder. It lives in the
kernel because the kernel's stages are its primary reader; the blueprint only builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .pointer import Pattern, Tokens, region_contains


class WorkerTerms(Protocol):
    """The declared terms of one worker, as written in its blueprint (``WorkerSpec`` has them).

    The kernel itself reads none of them; they ride along on the contract so that the
    scheduler, the view builder and worker factories find a worker's settings in one place.
    """

    @property
    def instruction(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def function(self) -> str | None: ...
    @property
    def reads(self) -> Sequence[str]: ...
    @property
    def writes(self) -> Sequence[str]: ...
    @property
    def view_budget(self) -> int: ...
    @property
    def max_invocations(self) -> int | None: ...
    @property
    def untrusted(self) -> bool: ...
    @property
    def pinned(self) -> Sequence[str]: ...
    @property
    def windows(self) -> Mapping[str, int]: ...
    @property
    def output(self) -> str | None: ...
    @property
    def board(self) -> Any:
        """A sub-board worker's ``SubBoardSpec`` (None for every other worker)."""
        ...


@dataclass(frozen=True, slots=True)
class WorkerContract:
    """A worker's compiled contract: read and write patterns and allowed ops.

    ``may_write`` and ``may_read`` are pure functions of the patterns, so the authorise stage
    is a walk over kernel types only.
    """

    name: str
    spec: WorkerTerms
    reads: tuple[Pattern, ...]
    writes: tuple[Pattern, ...]
    ops: frozenset[str]

    def may_write(self, tokens: Tokens) -> bool:
        """True when some write pattern covers the concrete op path."""
        return any(p.covers(tokens) for p in self.writes)

    def may_read(self, tokens: Tokens) -> bool:
        """True when the node at ``tokens`` lies inside some read pattern's region."""
        return any(region_contains(p, tokens) for p in self.reads)
