"""The deterministic kernel: patches, contracts, validation stages, commit, log and replay.

Pure: no I/O, no clock, no model. It is the ground floor: it imports nothing from slateboard
but ``slateboard.errors`` (tests/test_structure.py checks it). What it needs from an accepted
blueprint is the ``KernelBlueprint`` protocol, which ``CompiledBlueprint`` satisfies.
See Kernel for the stages a proposal goes through.
"""

from .canonical import JSON, JSONValue, canonical_bytes, canonical_str, hash_json
from .cel import CelCompileError, CelExpr, compile_cel
from .contract import WorkerContract, WorkerTerms
from .invariants import CompiledInvariant, InvariantContext, PythonInvariant
from .kernel import Decision, Event, Kernel, KernelBusy, Proposal
from .pointer import MISSING, Pattern, PointerError, expand, format_pointer, parse_pointer, resolve
from .protocol import KernelBlueprint
from .record import GENESIS, Record, RecordKind, Usage
from .replay import ReplayReport, replay
from .statehash import state_hash

__all__ = [
    "GENESIS",
    "JSON",
    "MISSING",
    "CelCompileError",
    "CelExpr",
    "CompiledInvariant",
    "Decision",
    "Event",
    "InvariantContext",
    "JSONValue",
    "Kernel",
    "KernelBlueprint",
    "KernelBusy",
    "Pattern",
    "PointerError",
    "Proposal",
    "PythonInvariant",
    "Record",
    "RecordKind",
    "ReplayReport",
    "Usage",
    "WorkerContract",
    "WorkerTerms",
    "canonical_bytes",
    "canonical_str",
    "compile_cel",
    "expand",
    "format_pointer",
    "hash_json",
    "parse_pointer",
    "replay",
    "resolve",
    "state_hash",
]
