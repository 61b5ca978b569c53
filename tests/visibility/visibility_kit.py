"""A small board with visibility on entries, shared by the tests of tests/visibility.

``/notes`` is a collection with visibility (entries keyed by id: ``{"text", "visible_to"?,
"tags"?}``); ``/log`` is a plain array every worker reads. Workers: ``alice`` may address only
the label ``reviewers`` (bob and carol) and herself; ``bob`` and ``carol`` any name; ``dave``
reads everything and writes only the log (the outsider most tests hide entries from).
"""

from __future__ import annotations

from typing import Any

from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.kernel.kernel import Decision

WORKERS = ("alice", "bob", "carol", "dave")
ALL_OPS = ["add", "remove", "replace", "move", "copy", "test"]

ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "visible_to": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text"],
    "additionalProperties": False,
}


def blueprint_data(*, required: bool = False, initial_notes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The blueprint as plain data (tests change parts of it)."""
    writes = ["/notes/*", "/notes/*/text", "/notes/*/visible_to", "/notes/*/visible_to/-", "/notes/*/tags/-", "/log/-"]
    return {
        "name": "visibility-kit",
        "schema": {
            "type": "object",
            "properties": {
                "task": {"type": "string"},
                "notes": {"type": "object", "additionalProperties": ENTRY_SCHEMA},
                "log": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["notes", "log"],
        },
        "initial_state": {"task": "t", "notes": dict(initial_notes or {}), "log": []},
        "workers": {
            "alice": {
                "function": "x:y",
                "reads": ["/**"],
                "writes": writes,
                "ops": ALL_OPS,
                "addresses": ["reviewers"],
            },
            "bob": {"function": "x:y", "reads": ["/**"], "writes": writes, "ops": ALL_OPS},
            "carol": {"function": "x:y", "reads": ["/notes", "/log"], "writes": writes, "ops": ALL_OPS},
            "dave": {"function": "x:y", "reads": ["/**"], "writes": ["/log/-"], "ops": ALL_OPS},
        },
        "visibility": {
            "collections": [{"path": "/notes", "required": required}],
            "labels": {"reviewers": ["bob", "carol"]},
        },
    }


def make_bp(**kwargs: Any) -> CompiledBlueprint:
    """The kit's blueprint, compiled."""
    return compile_blueprint(blueprint_data(**kwargs))


def submit(kernel: Kernel, worker: str, patch: Any, **kwargs: Any) -> Decision:
    """Submit and commit one proposal; the decision."""
    return kernel.submit(Proposal(worker=worker, patch=patch, **kwargs))


def note(key: str, text: str, visible_to: list[str] | None = None) -> list[dict[str, Any]]:
    """A patch adding entry ``key``."""
    value: dict[str, Any] = {"text": text}
    if visible_to is not None:
        value["visible_to"] = visible_to
    return [{"op": "add", "path": f"/notes/{key}", "value": value}]
