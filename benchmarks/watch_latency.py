"""Watch latency: how long after ``store.append`` returns a ``watch`` of the board yields it.

One board per store; a writer appends N records, each after a random pause (5-50 ms, so the
appends fall anywhere in a watcher's poll interval); a watcher (``slateboard.watch`` with its
default ``poll`` of 0.1 s) follows the board through a second store object (another connection,
as another process would; memory: the same object). Printed per store: p50, p90 and max of the
delay between an append's return and the watcher's receiving that record.

Stores: memory, sqlite (a temporary file), and postgresql (a private schema) when a server
answers ($SLATEBOARD_TEST_PG or postgresql://postgres@127.0.0.1:5432/test).

    python benchmarks/watch_latency.py [--records 60] [--json] [--no-postgres]

Run it against two trees (``PYTHONPATH=<tree>/src``) to compare them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from slateboard.runtime.watch import watch
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.testing.kit import Board, entry


async def measure(writer: Store, reader: Store, records: int) -> list[float]:
    board = await Board.create(writer)
    sent: dict[int, float] = {}
    got: dict[int, float] = {}

    async def follow() -> None:
        async for rec in watch(reader, board.board_id):
            got[rec.seq] = time.perf_counter()

    async def write() -> None:
        rng = random.Random(7)
        for i in range(records):
            await asyncio.sleep(rng.uniform(0.005, 0.05))
            await board.step(f"w{i % 3}", entry(f"w{i % 3}", f"n{i}"))
            sent[i + 1] = time.perf_counter()
        await asyncio.sleep(0.3)
        await writer.set_status(board.board_id, "done", "finished: benchmark")

    await asyncio.gather(follow(), write())
    # A watcher may read a record before append() has returned to the writer: that counts as 0.
    return [max(0.0, got[s] - sent[s]) * 1000 for s in sorted(sent)]


def summary(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=10)
    return {"p50_ms": round(statistics.median(ms), 2), "p90_ms": round(q[8], 2), "max_ms": round(max(ms), 2)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    results: dict[str, dict[str, float]] = {}

    memory = await open_store("memory://")
    results["memory"] = summary(await measure(memory, memory, args.records))
    await memory.close()

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'watch.db'}"
        writer, reader = await open_store(url), await open_store(url)
        results["sqlite"] = summary(await measure(writer, reader, args.records))
        await writer.close()
        await reader.close()

    if not args.no_postgres:
        dsn = os.environ.get("SLATEBOARD_TEST_PG") or "postgresql://postgres@127.0.0.1:5432/test"
        schema = f"sb_bench_watch_{uuid.uuid4().hex[:8]}"
        url = f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
        try:
            writer, reader = await open_store(url), await open_store(url)
        except Exception as exc:  # no server: skip that store
            print(f"postgresql skipped: {exc}")
        else:
            try:
                results["postgresql"] = summary(await measure(writer, reader, args.records))
            finally:
                await writer.close()
                await reader.close()
                import psycopg

                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    if args.json:
        print(json.dumps(results))
    else:
        for name, row in results.items():
            print(f"{name:11} p50 {row['p50_ms']:7.2f} ms   p90 {row['p90_ms']:7.2f} ms   max {row['max_ms']:7.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
