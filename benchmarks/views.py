"""View-building benchmark: CPU per ``build_view`` with and without a ViewCache (issue 14).

The peers workload's board (benchmarks/peers.py): three workers read ``/task`` and ``/entries``;
each step appends one 200-character entry and builds the next worker's view, as the step engine
does. Measured: CPU microseconds per build (process time around ``build_view`` only; a child's
JSON also gives the wall time, ``wall_us_per_build``) after N entries, over ``--steps`` further
steps, at the peers' budget (4,000 characters) and at ``Team.blackboard``'s default (100,000). Each mode runs in its own child process, modes
interleaved, ``--repeat`` times; the median is shown. The cached views are checked to equal
uncached ones once per run (outside the timing).

    python benchmarks/views.py [--n 1000,5000] [--steps 600] [--budgets 4000,100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import store as store_bench


def child(n: int, steps: int, budget: int, cached: bool) -> dict[str, Any]:
    from slateboard.blueprint import compile_blueprint
    from slateboard.kernel.kernel import Kernel, Proposal
    from slateboard.views import ViewCache, build_view

    bp = compile_blueprint(peers.runner_blueprint(10**7))
    kernel = Kernel(bp)
    texts = store_bench.entry_texts(n + steps)
    workers = peers.WORKERS

    def add(i: int) -> Any:
        w = workers[i % 3]
        patch = [{"op": "add", "path": "/entries/-", "value": {"author": w, "content": texts[i]}}]
        return kernel.submit(Proposal(w, patch))

    for i in range(n):
        add(i)
    cache = ViewCache() if cached else None
    cpu = wall = 0.0
    for i in range(n, n + steps):
        decision = add(i)
        if cache is not None:
            cache.changed(decision.events, kernel.version)
        event = decision.events[0].to_json()
        t0, w0 = time.process_time(), time.perf_counter()
        view = build_view(bp, workers[i % 3], kernel.state, kernel.version, event=event, budget=budget, cache=cache)
        cpu += time.process_time() - t0
        wall += time.perf_counter() - w0
    fresh = build_view(bp, workers[(n + steps - 1) % 3], kernel.state, kernel.version, event=event, budget=budget)
    assert view.text == fresh.text and view.hash == fresh.hash and view.handles == fresh.handles
    return {"us_per_build": cpu / steps * 1e6, "wall_us_per_build": wall / steps * 1e6, "view_chars": view.size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000,5000")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--budgets", default="4000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        n, steps, budget, cached = (int(x) for x in args.child)
        print(json.dumps(child(n, steps, budget, bool(cached))))
        return 0
    print(f"{'N':>6} {'budget':>7} {'uncached us':>12} {'cached us':>10} {'saved':>6} {'view chars':>11}")
    for n in (int(x) for x in args.n.split(",")):
        for budget in (int(x) for x in args.budgets.split(",")):
            runs: dict[int, list[float]] = {0: [], 1: []}
            chars = 0
            for _ in range(args.repeat):
                for cached in (0, 1):
                    cmd = [sys.executable, __file__, "--child", str(n), str(args.steps), str(budget), str(cached)]
                    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                    runs[cached].append(out["us_per_build"])
                    chars = out["view_chars"]
            plain, kept = statistics.median(runs[0]), statistics.median(runs[1])
            print(f"{n:>6} {budget:>7} {plain:>12.0f} {kept:>10.0f} {1 - kept / plain:>6.0%} {chars:>11,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
