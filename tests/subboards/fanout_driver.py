"""Run (or resume) one board to its end in this process and print its answer as JSON: the
process the kill tests of tests/subboards SIGKILL mid fan-out. Usage: fanout_driver.py URL BOARD."""

from __future__ import annotations

import asyncio
import json
import sys

from slateboard.runtime import Runner
from slateboard.stores import open_store


async def main(url: str, board: str) -> None:
    store = await open_store(url)
    try:
        result = await Runner(store, board, lease_s=2.0).run()
        print(json.dumps({"end_reason": result.end_reason, "answer": result.answer}), flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
