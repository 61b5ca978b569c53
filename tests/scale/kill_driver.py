"""Run boards of one SQLite store at once in this process, for the kill test of the default
writer's group commit: ``python kill_driver.py STORE_URL BOARD_ID...``.

Each board is the 3-worker round-robin board of ``kill_blueprint`` driven by a Runner; the model
answers after 0-3 ms, so the boards' appends meet in the same turns of the loop and commit
together. For every proposal committed (the runner's ``proposal.decided`` event comes after the
store acknowledged the append) it prints ``ack BOARD SEQ``, flushed at once: what a kill -9
must not lose. Every 20 acks it prints ``stats APPENDS FLUSHES`` (the store's commit counters).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from slateboard.models import Generation, GenerationUsage
from slateboard.runtime import Runner
from slateboard.stores import open_store
from slateboard.vocabulary import PROPOSAL_DECIDED

WORKERS = ("alpha", "beta", "gamma")


def kill_blueprint(steps: int) -> dict[str, Any]:
    """Three workers appending entries round-robin, ``steps`` proposals in all."""
    nxt = {w: WORKERS[(i + 1) % 3] for i, w in enumerate(WORKERS)}
    return {
        "name": "kill-group-commit",
        "schema": {
            "type": "object",
            "properties": {
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["author", "n"],
                        "properties": {"author": {"type": "string"}, "n": {"type": "integer"}},
                    },
                }
            },
        },
        "initial_state": {"entries": []},
        "workers": {
            w: {"instruction": f"You are {w}.", "reads": ["/entries"], "writes": ["/entries/-"], "ops": ["add"]}
            for w in WORKERS
        },
        "rules": [
            {"on": {"op": "start"}, "invoke": WORKERS[0]},
            *(
                {"on": {"op": "add", "path": "/entries/-"}, "when": f"value.author == '{w}'", "invoke": nxt[w]}
                for w in WORKERS
            ),
        ],
        "limits": {"max_steps": steps},
    }


class Model:
    """Answers with the asking worker's next entry after 0-3 ms."""

    name = "kill"

    async def generate(self, messages: Any, **_: Any) -> Generation:
        await asyncio.sleep(random.uniform(0, 0.003))
        head = messages[0].content[:200]
        author = next(w for w in WORKERS if f"'{w}'" in head)
        text = json.dumps({"patch": [{"op": "add", "path": "/entries/-", "value": {"author": author, "n": 1}}]})
        return Generation(text, GenerationUsage(1, 1), "stop", self.name, 0.0)


async def main(url: str, boards: list[str]) -> None:
    store = await open_store(url)
    acks = 0

    async def drive(board: str) -> None:
        nonlocal acks
        runner = Runner(store, board, model=Model())
        events = runner.events()
        run = asyncio.create_task(runner.run())
        async for event in events:
            if event.kind == PROPOSAL_DECIDED:
                print(f"ack {board} {event.data['seq']}", flush=True)
                acks += 1
                if acks % 20 == 0:
                    stats = store.commit_stats()  # type: ignore[attr-defined]
                    print(f"stats {stats.appends} {stats.flushes}", flush=True)
        await run

    await asyncio.gather(*(drive(b) for b in boards))
    await store.close()
    print("finished", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
