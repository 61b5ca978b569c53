"""Run K NOTES_PAIR boards at once in this process under a descriptor limit, for the
back-pressure tests: ``python run_boards.py JSON`` with keys ``store``, ``k``, ``model`` (a model
string), ``nofile`` (soft RLIMIT_NOFILE, set first) and ``exhaust`` (take every free descriptor
before the boards run). Prints one JSON line: each board's status and reason, the answers, and
the exceptions that escaped ``Runner.run``."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from typing import Any

ARGS: dict[str, Any] = json.loads(sys.argv[1])
if ARGS.get("nofile"):
    resource.setrlimit(resource.RLIMIT_NOFILE, (ARGS["nofile"], resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

from scale_testkit import NOTES_PAIR  # noqa: E402  (after the limit: imports open files)

from slateboard.runtime import Runner, create_board  # noqa: E402
from slateboard.stores import open_store  # noqa: E402


async def main() -> None:
    store = await open_store(ARGS["store"])
    ids = [await create_board(store, NOTES_PAIR, task=f"board {i}") for i in range(ARGS["k"])]
    held: list[int] = []
    if ARGS.get("exhaust"):
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
    runs = await asyncio.gather(*(Runner(store, b, model=ARGS["model"]).run() for b in ids), return_exceptions=True)
    for fd in held:
        os.close(fd)
    infos = [await store.board_info(b) for b in ids]
    answers = [r.state.get("answer") for r in runs if not isinstance(r, BaseException)]
    await store.close()
    out = {
        "boards": [[i.status, i.reason] for i in infos],
        "answers": answers,
        "escaped": [f"{type(r).__name__}: {r}" for r in runs if isinstance(r, BaseException)],
    }
    print(json.dumps(out))


asyncio.run(main())
