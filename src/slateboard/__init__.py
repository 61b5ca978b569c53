"""slateboard: LLM multi-agent collaboration on a blackboard.

Specialists share one structured state and change it only through schema-validated,
contract-checked JSON Patch proposals that a deterministic kernel commits or rejects; every step
is logged and replays without calling a model.

This module is the public face: everything a program needs is importable from ``slateboard``
(``tests/test_public_api.py`` guards ``__all__``). The subpackages stay importable for the
details, but their layout may change; these names do not change without notice.

- blueprints: ``load_blueprint``, ``compile_blueprint``, ``Blueprint``, ``CompiledBlueprint``,
  ``Architect`` (a blueprint from a request, with one model call);
- the kernel: ``Kernel``, ``Proposal``, ``Decision``, ``Event``, ``Record``, ``Usage``,
  ``replay``, ``ReplayReport``, ``InvariantContext``;
- runs: ``open_store``, ``Store``, ``create_board``, ``Runner``, ``RunResult``, ``RunEvent``,
  ``verify_board`` (the checks of ``slateboard replay --verify``);
- teams: ``Agent``, ``Team`` (``Team.blackboard(...)``), ``TeamResult``;
- errors: ``SlateboardError`` and its branches (see ``slateboard.errors``).
"""

# The compiled wheel drops class docstrings; restore_docs (below) puts them back (slateboard._native).
from . import _native
from .architect import Architect, ArchitectError
from .blueprint import Blueprint, BlueprintError, CompiledBlueprint, compile_blueprint, load_blueprint
from .builder import Board, ref
from .errors import RunError, SlateboardError, StoreError, UsageError
from .kernel import (
    Decision,
    Event,
    InvariantContext,
    Kernel,
    KernelBusy,
    Proposal,
    Record,
    ReplayReport,
    Usage,
    replay,
)
from .models import ModelError
from .runtime import RunEvent, Runner, RunnerError, RunResult, create_board, verify_board
from .stores import BoardNotFound, Conflict, Store, open_store
from .team import Agent, Team, TeamResult

_native.restore_docs()

__version__ = "0.1.0"
"""The package version (also in pyproject.toml)."""

__all__ = [
    "Agent",
    "Architect",
    "ArchitectError",
    "Blueprint",
    "BlueprintError",
    "Board",
    "BoardNotFound",
    "CompiledBlueprint",
    "Conflict",
    "Decision",
    "Event",
    "InvariantContext",
    "Kernel",
    "KernelBusy",
    "ModelError",
    "Proposal",
    "Record",
    "ReplayReport",
    "RunError",
    "RunEvent",
    "RunResult",
    "Runner",
    "RunnerError",
    "SlateboardError",
    "Store",
    "StoreError",
    "Team",
    "TeamResult",
    "Usage",
    "UsageError",
    "__version__",
    "compile_blueprint",
    "create_board",
    "load_blueprint",
    "open_store",
    "ref",
    "replay",
    "verify_board",
]
