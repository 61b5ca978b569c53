"""Kernel benchmark: validation latency, proposal throughput and replay speed vs state size.

For boards whose state holds 100, 10,000 and 100,000 entries, it measures
  - proposals/s through Kernel.submit (prepare + commit), a 3:1 mix of appends and field
    replacements, one in eight proposals rejected (schema or invariant),
  - p50/p99 validation latency (Kernel.prepare, all stages),
  - replay records/s (slateboard.kernel.replay over the log just produced).
The goal it checks: p99 at 100,000 entries within 2x of p99 at 100 entries (validation does
not cost O(size of state)) and replay >= 50,000 records/s.

    python benchmarks/kernel.py [--proposals N] [--sizes 100,10000,100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, replay

# CPU time of this process: on a shared 2-core box wall time mostly measures the neighbours.
clock = time.process_time

ENTRY_SCHEMA = {
    "type": "object",
    "required": ["id", "author", "kind", "content", "refs"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^e[0-9]+$"},
        "author": {"type": "string", "enum": ["hypothesis", "evidence", "critic"]},
        "kind": {"type": "string", "enum": ["claim", "evidence", "critique", "answer"]},
        "content": {"type": "string", "maxLength": 400},
        "refs": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "status": {"type": "string", "enum": ["open", "accepted", "refuted"]},
    },
}

BLUEPRINT: dict[str, Any] = {
    "name": "bench",
    "schema": {
        "type": "object",
        "required": ["task", "entries"],
        "additionalProperties": False,
        "properties": {"task": {"type": "string"}, "entries": {"type": "array", "items": ENTRY_SCHEMA}},
    },
    "initial_state": {"task": "bench", "entries": []},
    "workers": {
        name: {"reads": ["/task", "/entries"], "writes": ["/entries/-", "/entries/*/status"]}
        for name in ("hypothesis", "evidence", "critic")
    },
    "invariants": [
        {"at": "/entries/*", "rule": "self.kind != 'answer' || self.author == 'critic'", "name": "answers-by-critic"},
        {
            "at": "/entries/*",
            "rule": "!has(oldSelf.status) || oldSelf.status == 'open' || self.status == oldSelf.status",
            "name": "status-final",
        },
    ],
}

WORKERS = ("hypothesis", "evidence", "critic")
TEXT = "x" * 200


def entry(i: int, author: str, kind: str = "claim") -> dict[str, Any]:
    return {"id": f"e{i}", "author": author, "kind": kind, "content": f"{i}:{TEXT}", "refs": [f"e{max(i - 1, 0)}"]}


def make_state(n: int) -> dict[str, Any]:
    return {"task": "bench", "entries": [entry(i, WORKERS[i % 3]) | {"status": "open"} for i in range(n)]}


def proposals(n_entries: int, count: int, rng: random.Random) -> list[Proposal]:
    out = []
    size = n_entries
    for i in range(count):
        worker = WORKERS[i % 3]
        roll = rng.random()
        if roll < 0.125:  # invalid: a schema violation or an invariant violation
            bad = entry(size, worker, "answer" if worker != "critic" else "claim") | {"content": 5 if i % 2 else "ok"}
            if worker == "critic":
                bad["content"] = 5
            patch = [{"op": "add", "path": "/entries/-", "value": bad}]
        elif roll < 0.35 and size:
            target = rng.randrange(size)
            patch = [
                {"op": "replace", "path": f"/entries/{target}/status", "value": "open"},
                {"op": "add", "path": f"/entries/{target}/refs/-", "value": f"e{i}"},
            ][:1]
            patch[0]["value"] = rng.choice(["open", "open", "accepted"])
        else:
            patch = [{"op": "add", "path": "/entries/-", "value": entry(size, worker) | {"status": "open"}}]
            size += 1
        out.append(Proposal(worker, json.dumps(patch)))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_size(n: int, count: int, seed: int) -> dict[str, Any]:
    bp = compile_blueprint(BLUEPRINT)
    state = make_state(n)
    initial = json.loads(json.dumps(state))
    kernel = Kernel(bp, state)
    props = proposals(n, count, random.Random(seed))
    for p in props[: min(200, count // 10)]:  # warm-up: caches, CEL programs, validator paths
        kernel.submit(p)
    kernel = Kernel(bp, json.loads(json.dumps(initial)))
    latencies = []
    records = []
    accepted = 0
    t0 = clock()
    for p in props:
        s = clock()
        d = kernel.prepare(p)
        latencies.append(clock() - s)
        records.append(kernel.commit(d))
        accepted += d.accepted
    elapsed = clock() - t0
    # Replay = loading the initial state (hash mirror, O(size), once) + applying the log; the
    # rate is taken over the log alone, between the first and the last record's callback.
    marks: list[float] = []
    t1 = clock()
    report = replay(bp, initial, records, on_state=lambda rec, st: marks.append(clock()))
    load_s = marks[0] - t1 if marks else 0.0
    replay_s = max(marks[-1] - marks[0], 1e-9) if len(marks) > 1 else 1e-9
    if not report.ok or report.state_hash != kernel.state_hash:
        raise SystemExit(f"replay mismatch at n={n}: {report}")
    return {
        "entries": n,
        "proposals": count,
        "accepted": accepted,
        "proposals_per_s": count / elapsed,
        "p50_ms": statistics.median(latencies) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
        "replay_records_per_s": (len(records) - 1) / replay_s,
        "replay_initial_load_s": load_s,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proposals", type=int, default=5000)
    ap.add_argument("--sizes", default="100,10000,100000")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    rows = [run_size(int(s), args.proposals, args.seed) for s in args.sizes.split(",")]
    small, large = rows[0], rows[-1]
    summary = {
        "p99_ratio_largest_vs_smallest": large["p99_ms"] / small["p99_ms"],
        "goal_p99_ratio_max": 2.0,
        "min_replay_records_per_s": min(r["replay_records_per_s"] for r in rows),
        "goal_replay_records_per_s": 50_000,
    }
    if args.json:
        print(json.dumps({"benchmark": "kernel", "rows": rows, "summary": summary}, indent=2))
        return 0
    print("CPU time of this process (time.process_time); replay rec/s excludes the one-off initial state load")
    print(
        f"{'entries':>9} {'proposals/s':>12} {'p50 ms':>8} {'p99 ms':>8} {'replay rec/s':>13} {'load s':>7} {'accepted':>10}"
    )
    for r in rows:
        print(
            f"{r['entries']:>9} {r['proposals_per_s']:>12.0f} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
            f"{r['replay_records_per_s']:>13.0f} {r['replay_initial_load_s']:>7.2f} {r['accepted']:>5}/{r['proposals']}"
        )
    print(
        f"p99 at {large['entries']} vs {small['entries']} entries: {summary['p99_ratio_largest_vs_smallest']:.2f}x "
        f"(goal <= 2x); slowest replay {summary['min_replay_records_per_s']:.0f} records/s (goal >= 50,000)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
