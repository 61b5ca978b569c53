"""Long and hostile model replies (issue 46): CPU and wall per team round, by role and reply.

Each cell runs a ``Team.blackboard`` of one round on the memory store where one role (an agent,
a typed agent, the coordinator, the decider) gets the reply, and, for the ``scripted:`` model
string, the time to resolve the string itself (the step that was quadratic: 79 s for 200 KB).
Replies: one long string value (200 KB, 1 MB), a 1 MB array of numbers, and brackets nested
5,000 deep. Run it on two trees to compare, e.g. ``PYTHONPATH=OLD/src python benchmarks/replies.py``
(on the old tree a cell that raises prints its exception instead of a time).

    python benchmarks/replies.py [--sizes 200000 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable

from pydantic import BaseModel

from slateboard.models import ScriptedModel, resolve_model
from slateboard.stores import open_store
from slateboard.team import Agent, Team


class Verdict(BaseModel):
    """The typed roles' output type."""

    verdict: str


def replies(sizes: list[int]) -> dict[str, str]:
    """The replies measured, by label."""
    out = {f"string {n // 1000} KB": json.dumps({"verdict": "x" * n}) for n in sizes}
    out["array 1 MB"] = "[" + ",".join(["1"] * (1 << 19)) + "]"
    out["nested 5,000"] = "[" * 5000 + "]" * 5000
    return out


def team_for(role: str, reply: str) -> Callable[[object], Team]:
    """A one-round team in which ``role`` is answered with ``reply``."""
    fine = json.dumps({"verdict": "ok"})

    def build(store: object) -> Team:
        answer = ScriptedModel([reply], cycle=True, keep_calls=False)
        plain = ScriptedModel([fine], cycle=True, keep_calls=False)
        agents = {
            "a": Agent(model=answer if role == "agent" else plain),
            "t": Agent(model=answer if role == "typed agent" else plain, output_type=Verdict),
        }
        coordinator = Agent(model=answer) if role == "coordinator" else None
        decider = Agent(model=answer if role == "decider" else plain, output_type=Verdict)
        return Team.blackboard(
            agents,
            coordinator=coordinator,
            decider=decider,
            max_rounds=1,
            store=store,  # type: ignore[arg-type]
        )

    return build


async def one(build: Callable[[object], Team]) -> str:
    """Run the team once; its end status or the exception it raised."""
    store = await open_store("memory://")
    try:
        result = await build(store).run("task")
        return str(result.status) if hasattr(result, "status") else "ran"
    except BaseException as exc:  # the old tree raised RecursionError here
        return f"raised {type(exc).__name__}"
    finally:
        await store.close()


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Best-of-``repeat`` wall and CPU seconds of ``fn()``, and its last result."""
    walls, cpus, last = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        last = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), last


def main() -> None:
    """Print one line per role and reply."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'role':<22} {'reply':<16} {'wall ms':>10} {'CPU ms':>10}  outcome")
    for n in args.sizes:
        spec = "scripted:" + json.dumps(["x" * n])
        wall, cpu, _ = timed(lambda spec=spec: resolve_model(spec), 1)  # type: ignore[misc]
        print(
            f"{'scripted: model string':<22} {f'{n // 1000} KB':<16} {wall * 1000:10.1f} {cpu * 1000:10.1f}  resolved"
        )
    for label, reply in replies(args.sizes).items():
        for role in ("agent", "typed agent", "coordinator", "decider"):
            build = team_for(role, reply)
            wall, cpu, outcome = timed(lambda build=build: asyncio.run(one(build)), args.repeat)  # type: ignore[misc]
            print(f"{role:<22} {label:<16} {wall * 1000:10.1f} {cpu * 1000:10.1f}  {outcome}")


if __name__ == "__main__":
    main()
