"""The deterministic kernel: patches, contracts, validation stages, commit, log and replay.

Pure: no I/O, no clock, no model, and no import from any other slateboard package: it is the
ground floor. What it needs from an accepted blueprint is the ``KernelBlueprint`` protocol.
See Kernel for the stages a proposal goes through.
"""

from .canonical import JSON, canonical_bytes, canonical_str, hash_json
from .cel import CelCompileError, CelExpr, compile_cel
from .contract import WorkerContract, WorkerTerms
from .invariants import CompiledInvariant, InvariantContext, PythonInvariant
from .kernel import Decision, Event, Kernel, KernelBusy, Proposal
from .pointer import MISSING, Missing, Pattern, PointerError, format_pointer, parse_pointer, resolve
from .protocol import KernelBlueprint
from .record import GENESIS, STAGES, Record, Usage
from .replay import ReplayReport, replay
from .statehash import StateHasher, state_hash

__all__ = [
    "GENESIS",
    "JSON",
    "MISSING",
    "STAGES",
    "CelCompileError",
    "CelExpr",
    "CompiledInvariant",
    "Decision",
    "Event",
    "InvariantContext",
    "Kernel",
    "KernelBlueprint",
    "KernelBusy",
    "Missing",
    "Pattern",
    "PointerError",
    "Proposal",
    "PythonInvariant",
    "Record",
    "ReplayReport",
    "StateHasher",
    "Usage",
    "WorkerContract",
    "WorkerTerms",
    "canonical_bytes",
    "canonical_str",
    "compile_cel",
    "format_pointer",
    "hash_json",
    "parse_pointer",
    "replay",
    "resolve",
    "state_hash",
]
