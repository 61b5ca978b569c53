"""Data discovery on a board: function workers profile the CSV files in ``data/`` (customers,
subscriptions, orders), model workers propose answers that cite the profiled columns, a critic
judges them, and a decider writes the final answer. ``blueprint.yaml`` holds the schema, the
contracts, the rules and the invariants (an answer may only cite columns that were profiled).

Runs offline on the embedded local model by default (``--model`` picks another) and keeps the
board in the default SQLite store (``--store``/``$SLATEBOARD_STORE`` to change):

    .venv/bin/python examples/data_discovery/main.py
    .venv/bin/python examples/data_discovery/main.py --data path/to/csvs --task "Which plan churns most?"

The same board runs from the CLI too (function workers are imported from the blueprint's folder):

    slateboard run examples/data_discovery/blueprint.yaml --task "Why did retention drop in March?"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the blueprint names its function workers "csv_profiles:..."
    sys.path.insert(0, str(HERE))

import csv_profiles  # noqa: E402

from slateboard import CompiledBlueprint, Runner, RunResult, create_board, load_blueprint, open_store  # noqa: E402
from slateboard.models import Model  # noqa: E402
from slateboard.progress import run_with_progress  # noqa: E402

BLUEPRINT = HERE / "blueprint.yaml"
TASK = "Why did retention drop in March 2024?"
STORE_ENV = "SLATEBOARD_STORE"


def blueprint() -> CompiledBlueprint:
    """The example's blueprint, compiled and accepted."""
    return load_blueprint(BLUEPRINT)


@dataclass(frozen=True)
class Outcome:
    """What one run of the example produced (the board stays in the store)."""

    board_id: str
    end_reason: str
    answer: str
    tokens: int
    store: str


async def run(
    task: str = TASK,
    *,
    model: Model | str = "local",
    store: str,
    data: Path | None = None,
    max_steps: int | None = None,
) -> tuple[Outcome, RunResult]:
    """Create the board (the question, the dataset folder) and run it to its end."""
    st = await open_store(store)
    try:
        inputs = {"dataset": str(data.resolve()) if data is not None else ""}
        board = await create_board(st, blueprint(), task=task, inputs=inputs)
        functions: dict[str, Callable[..., Any]] = {"catalog": csv_profiles.catalog, "profiler": csv_profiles.profile}
        runner = Runner(st, board, model=model, functions=functions, max_steps=max_steps)
        # On a terminal: what the board is doing and for how long (nothing when piped).
        result = await run_with_progress(runner, "data discovery board")
    finally:
        await st.close()
    answer = result.answer if isinstance(result.answer, str) else ""
    return Outcome(board, result.end_reason, answer, result.total_tokens, store), result


def default_store() -> str:
    """``$SLATEBOARD_STORE``, else the SQLite file ``slateboard`` commands use by default."""
    from slateboard.stores.sqlite import default_path

    return os.environ.get(STORE_ENV) or f"sqlite:///{default_path()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: run, then print the answer, the end reason and the board id."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--task", default=TASK, help=f"the question (default: {TASK!r})")
    ap.add_argument("--model", default="local", help="model string for the model workers (default: local)")
    ap.add_argument("--data", type=Path, default=None, help="folder of CSV files (default: the bundled data/)")
    ap.add_argument("--store", default=None, help="store URL (default: $SLATEBOARD_STORE or the default SQLite file)")
    ap.add_argument("--max-steps", type=int, default=None, help="stop after this many proposals")
    ap.add_argument("--json", action="store_true", help="print the outcome as JSON")
    args = ap.parse_args(argv)
    outcome, _ = asyncio.run(
        run(args.task, model=args.model, store=args.store or default_store(), data=args.data, max_steps=args.max_steps)
    )
    if args.json:
        print(json.dumps(asdict(outcome), indent=2))
    else:
        print(f"answer:     {outcome.answer or '(none)'}")
        print(f"end reason: {outcome.end_reason}")
        print(f"board:      {outcome.board_id}")
        print(f"tokens:     {outcome.tokens:,}")
        print(f"inspect:    slateboard log {outcome.board_id} --store {outcome.store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
