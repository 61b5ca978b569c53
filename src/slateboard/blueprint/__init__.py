"""Blueprints: the typed task contract, its meta-schema, and acceptance (compilation)."""

from .cel import CelCompileError, CelExpr, compile_cel
from .compile import (
    BlueprintError,
    BlueprintIssue,
    CompiledBlueprint,
    InvariantContext,
    WorkerContract,
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
    "CelCompileError",
    "CelExpr",
    "CircuitSpec",
    "CompiledBlueprint",
    "InvariantContext",
    "InvariantSpec",
    "Limits",
    "RuleSpec",
    "StageSpec",
    "Trigger",
    "WorkerContract",
    "WorkerSpec",
    "compile_blueprint",
    "compile_cel",
    "load_blueprint",
]
