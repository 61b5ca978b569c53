"""A seeded kernel and view workload whose every outcome is printed as JSON (``test_wheel.py``).

Run as ``python -m _native_workload`` once with the compiled wheel installed and once on the
sources (``test_wheel.py``); the two outputs must be equal. It mixes proposals that commit with ones
each kernel stage rejects (parse, pointer, contract, schema, apply, invariant) and builds every
worker's view at several budgets after each step, so the records, state hashes and views of both
builds are compared.
"""

from __future__ import annotations

import json
import random
from typing import Any

from slateboard._native import native_mode
from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.views import ViewCache, build_view

SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "array", "items": {"type": "object", "required": ["id", "t"]}},
        "b": {"type": "object", "required": ["x", "y"], "properties": {"x": {"type": "integer"}}},
        "n": {"type": "integer"},
    },
}
WORKERS: dict[str, Any] = {
    "all": {"reads": ["/**"], "writes": ["/a/-", "/b/**", "/n"], "ops": ["add", "replace", "remove", "test"]},
    "some": {"reads": ["/a", "/b"], "writes": ["/a/-"], "windows": {"/a": 3}},
    "writer": {
        "reads": ["/a", "/c/**"],
        "writes": ["/**"],
        "ops": ["add", "remove", "replace", "move", "copy", "test"],
    },
}
BLUEPRINT = {
    "schema": SCHEMA,
    "initial_state": {"a": [], "b": {"x": 1, "y": "y"}, "n": 0},
    "workers": WORKERS,
    "invariants": [{"at": "/n", "rule": "self < 30", "message": "n stays small"}],
}
TEXT = 'ab\u00e9"\\/\n~ xyz'


def _patch(rng: random.Random, i: int) -> Any:
    kind = rng.randrange(12)
    word = "".join(rng.choice(TEXT) for _ in range(rng.randrange(1, 40)))
    if kind <= 3:
        return [{"op": "add", "path": "/a/-", "value": {"id": i, "t": word}}]
    if kind == 4:
        return [{"op": "add", "path": "/a/-", "value": {"id": i}}]  # schema: no "t"
    if kind == 5:
        return [{"op": "replace", "path": "/n", "value": rng.randrange(80)}]  # the invariant rejects 30 and more
    if kind == 6:
        return [{"op": "remove", "path": "/b/x"}]  # schema: x is required
    if kind == 7:
        return [{"op": "add", "path": f"/c/{word[:3]}", "value": {"k": [i, word]}}]
    if kind == 8:
        return [{"op": "test", "path": "/n", "value": rng.randrange(3)}, {"op": "replace", "path": "/b/x", "value": i}]
    if kind == 9:
        return [{"op": "copy", "from": f"/a/{rng.randrange(4)}", "path": "/a/-"}]
    if kind == 10:
        return f'[{{"op": "add", "path": "/a/-", "value": {{"id": {i}, "t": "{word[:2]}"'  # truncated text
    return [{"op": "replace", "path": f"/a/{rng.randrange(-1, 99)}/t", "value": word}]


def main(seed: int = 20261124, steps: int = 120) -> list[list[Any]]:
    rng = random.Random(seed)
    bp = compile_blueprint(BLUEPRINT)
    kernel = Kernel(bp)
    names = sorted(WORKERS)
    caches = {name: ViewCache() for name in names}
    rows: list[list[Any]] = []
    for i in range(steps):
        worker = names[rng.randrange(len(names))]
        decision = kernel.submit(Proposal(worker, _patch(rng, i)))
        record = decision.record
        rows.append([record.outcome, worker, record.stage, record.reason, record.hash, record.state_after])
        for cache in caches.values():
            cache.changed(decision.events, kernel.version)
        event = decision.events[0].to_json() if decision.events else None
        for name in names:
            for budget in (120, 600, 4000):
                view = build_view(
                    bp, name, kernel.state, kernel.version, event=event, budget=budget, cache=caches[name]
                )
                rows.append(["view", name, budget, view.level, view.hash, len(view.text), len(view.handles)])
    return rows


if __name__ == "__main__":
    print(json.dumps([native_mode(), main()]))
