"""The deterministic kernel: patches, contracts, validation stages, commit, log and replay.

Pure: no I/O, no clock, no model. See Kernel for the stages a proposal goes through.
"""

from .canonical import JSON, canonical_bytes, canonical_str, hash_json
from .kernel import Decision, Event, Kernel, KernelBusy, Proposal
from .pointer import Pattern, PointerError, format_pointer, parse_pointer
from .record import GENESIS, STAGES, Record, Usage
from .replay import ReplayReport, replay
from .statehash import StateHasher, state_hash

__all__ = [
    "GENESIS",
    "JSON",
    "STAGES",
    "Decision",
    "Event",
    "Kernel",
    "KernelBusy",
    "Pattern",
    "PointerError",
    "Proposal",
    "Record",
    "ReplayReport",
    "StateHasher",
    "Usage",
    "canonical_bytes",
    "canonical_str",
    "format_pointer",
    "hash_json",
    "parse_pointer",
    "replay",
    "state_hash",
]
