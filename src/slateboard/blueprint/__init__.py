"""Blueprints: the typed task contract, its meta-schema, and acceptance (compilation).

Compilation produces kernel types (``slateboard.kernel``: contracts, invariants, CEL); this
package depends on the kernel, never the other way round.
"""

from .compile import (
    BlueprintError,
    BlueprintIssue,
    CompiledBlueprint,
    compile_blueprint,
    load_blueprint,
)
from .models import (
    Blueprint,
    CircuitSpec,
    InvariantSpec,
    Limits,
    RuleSpec,
    StageSpec,
    Trigger,
    WorkerSpec,
)

__all__ = [
    "Blueprint",
    "BlueprintError",
    "BlueprintIssue",
    "CircuitSpec",
    "CompiledBlueprint",
    "InvariantSpec",
    "Limits",
    "RuleSpec",
    "StageSpec",
    "Trigger",
    "WorkerSpec",
    "compile_blueprint",
    "load_blueprint",
]
