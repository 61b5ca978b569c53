"""Helpers for the scheduling tests: a small blueprint and a kernel-backed board."""

from __future__ import annotations

import copy
from typing import Any

from slateboard.blueprint.compile import CompiledBlueprint, compile_blueprint
from slateboard.kernel import Event, Kernel, Proposal

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "status": {"type": "string"}},
            },
        },
        "notes": {"type": "object", "additionalProperties": {"type": "string"}},
        "phase": {"type": "string"},
        "count": {"type": "integer"},
    },
}

INITIAL: dict[str, Any] = {"claims": [], "notes": {}, "phase": "plan", "count": 0}

WORKERS: dict[str, Any] = {
    "editor": {
        "reads": ["/**"],  # copy and test read their paths (issue 29: read isolation)
        "writes": ["/claims/-", "/claims/*", "/claims/*/status", "/notes/*", "/phase", "/count"],
        "ops": ["add", "replace", "remove", "move", "copy", "test"],
    },
    "verifier": {"writes": ["/claims/*/status"]},
    "planner": {"writes": ["/phase"]},
    "writer": {"writes": ["/notes/*"]},
}


def blueprint(
    rules: list[dict[str, Any]], *, stages: list[dict[str, Any]] | None = None, **extra: Any
) -> CompiledBlueprint:
    """Compile the test blueprint with the given rules (and stages)."""
    workers = copy.deepcopy(WORKERS)
    for name, patch in extra.pop("worker_overrides", {}).items():
        workers[name].update(patch)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "initial_state": copy.deepcopy(INITIAL),
        "workers": workers,
        "rules": rules,
        "stages": stages or [],
        **extra,
    }
    return compile_blueprint(data)


class Board:
    """A kernel plus the events of its last accepted commit."""

    def __init__(self, bp: CompiledBlueprint) -> None:
        self.bp = bp
        self.kernel = Kernel(bp)

    def commit(self, patch: list[dict[str, Any]], worker: str = "editor") -> list[Event]:
        decision = self.kernel.submit(Proposal(worker, patch))
        assert decision.accepted, decision.reason
        return decision.events

    @property
    def state(self) -> Any:
        return self.kernel.state

    @property
    def version(self) -> int:
        return self.kernel.version
