"""What the README's main job (template ``retention``) costs (issue 33).

Runs it on the embedded default model (``local``: in process, free, so $0) and on a scripted
model, and prices each run's log with a user price table (default: gpt-4o-mini's list price,
$0.15 in / $0.60 out per million tokens, under ``*``) to show what the same tokens would cost on a
paid provider. Prints one JSON line per run: model, end status, proposals, tokens in/out, the
cost as run (``cost_usd``, the board's own prices) and the cost at the user's table.

    python benchmarks/money.py                 # scripted only (seconds)
    python benchmarks/money.py --local         # the local model too (minutes on a small VM)
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from slateboard.blueprint.templates import load_template
from slateboard.models.pricing import PriceTable
from slateboard.runtime import Runner, create_board
from slateboard.runtime.result import cost_of
from slateboard.stores import open_store

QUESTION = "Why did retention drop in March?"
LIST_PRICE = {"*": {"input": 0.15, "output": 0.60}}


def _pick(fact: str, hid: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/hypotheses/-", "value": {"id": hid, "fact": fact}}]})


SCRIPTED = "scripted:" + json.dumps([_pick("f3", "h1"), _pick("f2", "h1"), _pick("f1", "h2")])


async def measure(model: str, table: PriceTable) -> dict[str, Any]:
    """One run of the main job on ``model``: its figures, priced as run and at ``table``."""
    store = await open_store("memory://")
    try:
        board = await create_board(store, load_template("retention"), inputs={"question": QUESTION})
        result = await Runner(store, board, model=model).run()
        records = await store.read_records(board)
    finally:
        await store.close()
    return {
        "model": model.split(":", 1)[0],
        "end_status": result.end_status,
        "proposals": result.steps,
        "tokens_in": sum(u.tokens_in for u in result.usage.values()),
        "tokens_out": sum(u.tokens_out for u in result.usage.values()),
        "cost_usd": result.cost_usd,
        "cost_at_user_table": cost_of(records, table),
    }


def main() -> None:
    """Measure and print one JSON line per model."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--local", action="store_true", help="also run the local model (slow on a small VM)")
    parser.add_argument("--prices", help="a price table JSON file (default: gpt-4o-mini list price under '*')")
    args = parser.parse_args()
    table = PriceTable.from_file(args.prices) if args.prices else PriceTable.from_mapping(LIST_PRICE)
    for model in [SCRIPTED, *(["local"] if args.local else [])]:
        print(json.dumps(asyncio.run(measure(model, table))), flush=True)


if __name__ == "__main__":
    main()
