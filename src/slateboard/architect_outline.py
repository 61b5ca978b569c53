"""The Architect's outline mode: a small model plans the team, slateboard writes the blueprint.

A whole blueprint (schema, contracts, rules, CEL) is about 4,000 tokens of meta-schema and
example to read and hundreds of tokens of exact JSON to write: beyond a 135M in-process model,
whose context the prompt alone filled (issue 28). In outline mode the model answers a much
smaller question, constrained by ``OUTLINE_SCHEMA``: a name, two to four steps (each a worker,
the list it fills and its instruction) and the instruction of the worker that writes the
answer. ``blueprint_from_outline`` turns that plan into a blueprint deterministically: a
``task`` string, one list per step, an ``answer`` string; each step's worker reads the task and
the lists before it and appends to its own; a start rule runs the first step, each append runs
the next, the last step's appends run the writer; done when the answer is set.

Guarantees: every outline that satisfies ``OUTLINE_SCHEMA`` gives a blueprint that
``compile_blueprint`` accepts and that is runnable (start rule, done condition, an answer some
worker may write); names are made into identifiers and de-duplicated, never rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["OUTLINE_SCHEMA", "OUTLINE_SYSTEM", "blueprint_from_outline"]

_NAME = {"type": "string", "pattern": "^[a-z][a-z_]{1,19}$"}
# Words only, bounded: a 135M model left free loops on "1.1.1.1..." until max_tokens.
_SENTENCE = {"type": "string", "pattern": "^[A-Z][a-z ,']{8,79}[.]$"}

OUTLINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "steps", "answer"],
    "properties": {
        "name": _NAME,
        "steps": {
            "type": "array",
            "minItems": 2,
            "maxItems": 4,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["worker", "field", "instruction"],
                "properties": {
                    "worker": _NAME,
                    "field": _NAME,
                    "instruction": _SENTENCE,
                },
            },
        },
        "answer": _SENTENCE,
    },
}
"""What the model fills in outline mode (decoding is constrained by it where the provider can)."""

OUTLINE_SYSTEM = """\
You plan a small team of workers for a task. Reply with one JSON object:
{"name": short name of the team,
 "steps": 2 to 4 steps in order, each {"worker": its name, "field": the list it fills, "instruction": what it adds},
 "answer": the instruction of the worker who writes the final answer from the lists}
Example, for "Summarise this report":
{"name": "summary", "steps": [{"worker": "reader", "field": "points", "instruction": "List the key points of the task."},
{"worker": "checker", "field": "checks", "instruction": "Check each point against the task."}],
"answer": "Write a short summary from the checked points."}"""
"""The outline prompt: a few hundred tokens, so it fits any model's context."""

_RESERVED = {"task", "answer", "writer"}
_ITEMS_PER_LIST = 8


def _identifier(text: Any, fallback: str, taken: set[str]) -> str:
    """``text`` as a lower-case identifier not in ``taken`` (``fallback`` when nothing is left
    of it; ``_2``, ``_3``... when it is taken)."""
    base = re.sub(r"[^a-z0-9_]+", "_", str(text).strip().lower()).strip("_")[:24] or fallback
    if base[0].isdigit():
        base = f"{fallback}_{base}"[:24]
    name, n = base, 2
    while name in taken or name in _RESERVED:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def blueprint_from_outline(outline: Mapping[str, Any], request: str) -> dict[str, Any]:
    """The blueprint (a plain dict, not yet compiled) that ``outline`` plans for ``request``;
    see the module docstring for its shape. ``outline`` must satisfy ``OUTLINE_SCHEMA``."""
    workers_taken: set[str] = set()
    fields_taken: set[str] = set()
    steps: list[tuple[str, str, str]] = []
    for i, step in enumerate(outline["steps"], start=1):
        worker = _identifier(step["worker"], f"step{i}", workers_taken)
        field = _identifier(step["field"], f"list{i}", fields_taken)
        steps.append((worker, field, str(step["instruction"]).strip()))
    properties: dict[str, Any] = {"task": {"type": "string"}}
    for _, field, _ in steps:
        properties[field] = {
            "type": "array",
            "maxItems": _ITEMS_PER_LIST,
            "items": {"type": "string", "minLength": 1, "maxLength": 200},
        }
    properties["answer"] = {"type": "string", "minLength": 1, "maxLength": 300}
    workers: dict[str, Any] = {}
    rules: list[dict[str, Any]] = []
    reads = ["/task"]
    for n, (worker, field, instruction) in enumerate(steps):
        workers[worker] = {"instruction": instruction, "reads": list(reads), "writes": [f"/{field}/-"]}
        if n == 0:
            rules.append({"on": {"op": "start"}, "invoke": worker})
        else:
            rules.append({"on": {"op": "add", "path": f"/{steps[n - 1][1]}/-"}, "invoke": worker})
        reads.append(f"/{field}")
    workers["writer"] = {"instruction": str(outline["answer"]).strip(), "reads": list(reads), "writes": ["/answer"]}
    rules.append({"on": {"op": "add", "path": f"/{steps[-1][1]}/-"}, "invoke": "writer"})
    name = _identifier(outline["name"], "team", set())
    return {
        "name": name,
        "description": f"Planned by the Architect (outline mode) for: {request.strip()[:200]}",
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["task", *(field for _, field, _ in steps)],
            "properties": properties,
        },
        "initial_state": {"task": request.strip(), **{field: [] for _, field, _ in steps}},
        "workers": workers,
        "rules": rules,
        "invariants": [
            {
                "at": f"/{field}",
                "rule": f"size(self) <= {_ITEMS_PER_LIST}",
                "message": f"at most {_ITEMS_PER_LIST} items",
            }
            for _, field, _ in steps
        ],
        "done": "has(state.answer)",
        "answer": "/answer",
    }
