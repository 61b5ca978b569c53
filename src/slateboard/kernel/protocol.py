"""What the kernel needs from an accepted blueprint, as structural protocols.

The kernel is the ground floor: it imports nothing from ``slateboard.blueprint``. A compiled
blueprint (``slateboard.blueprint.CompiledBlueprint``) satisfies ``KernelBlueprint`` by shape,
and so would any other object a library user builds with the same members. Only read access is
declared, so frozen models and plain dataclasses both fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .canonical import JSON
from .contract import WorkerContract
from .invariants import CompiledInvariant
from .pointer import Pattern
from .schema import SchemaIndex


class KernelLimits(Protocol):
    """The hard bounds the kernel and the circuit policy enforce (``blueprint.Limits``)."""

    @property
    def max_steps(self) -> int: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def max_patch_bytes(self) -> int: ...
    @property
    def max_ops(self) -> int: ...
    @property
    def max_depth(self) -> int: ...


class CircuitTerms(Protocol):
    """The circuit policy's thresholds (``blueprint.CircuitSpec``)."""

    @property
    def max_consecutive_invalid(self) -> int: ...
    @property
    def max_noops(self) -> int: ...
    @property
    def cycle_window(self) -> int: ...
    @property
    def stuck_after(self) -> int: ...
    @property
    def on_invalid(self) -> str: ...
    @property
    def retries(self) -> int: ...
    @property
    def max_alternations(self) -> int: ...


class BlueprintTerms(Protocol):
    """The declared part of a blueprint the kernel reads: its limits and circuit thresholds."""

    @property
    def limits(self) -> KernelLimits: ...
    @property
    def circuit(self) -> CircuitTerms: ...


class KernelBlueprint(Protocol):
    """Everything the kernel, replay, circuit policy and view builder read from a blueprint."""

    @property
    def spec(self) -> BlueprintTerms: ...
    @property
    def schema(self) -> SchemaIndex: ...
    @property
    def workers(self) -> Mapping[str, WorkerContract]: ...
    @property
    def approval(self) -> Sequence[Pattern]: ...
    @property
    def all_invariants(self) -> Sequence[CompiledInvariant]: ...
    @property
    def digest(self) -> str:
        """The canonical hash of the blueprint, bound into a log's genesis record."""
        ...

    def initial_state(self) -> JSON:
        """A fresh deep copy of the initial state (the caller may mutate it)."""
        ...
