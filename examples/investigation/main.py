"""The seed's investigation team on a slateboard board: hypothesis, evidence, critic, a
coordinator that picks who contributes next, and a decider that writes the answer.

Two ways to run the same investigation:

* ``--mode team`` (default): ``Team.blackboard`` (the seed's API). Agents reply in plain text;
  each reply becomes one public entry that the kernel validates (authorship, schema) and logs.
  The evidence agent may call the ``monthly_metrics`` tool over ``metrics.csv``.
* ``--mode template``: the built-in ``investigation`` blueprint (what ``slateboard run
  investigation`` runs): typed hypotheses, evidence and critiques written as JSON Patch
  proposals under contract-constrained decoding, with invariants (a hypothesis is judged
  supported only with supporting evidence about it on the board).

Both run offline on the embedded local model by default (``--model`` picks another) and keep
the board in the default SQLite store (``--store``/``$SLATEBOARD_STORE`` to change), so
``slateboard log BOARD`` shows every decision afterwards.

    .venv/bin/python examples/investigation/main.py
    .venv/bin/python examples/investigation/main.py --mode template --model openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from slateboard import Agent, Runner, Team, create_board, open_store
from slateboard.blueprint.templates import load_template
from slateboard.models import Model
from slateboard.progress import progress, run_with_progress

HERE = Path(__file__).resolve().parent
METRICS = HERE / "metrics.csv"
TASK = "Why did retention drop in March?"
STORE_ENV = "SLATEBOARD_STORE"

# Short replies keep a small local model from rambling; a contribution is a few sentences.
REPLY_TOKENS = 160


def monthly_metrics(month: str) -> dict[str, str]:
    """The product metrics of one month (YYYY-MM): customers active at its start, cancellations,
    retention rate, plan prices, support tickets and the app release shipped that month."""
    with METRICS.open(newline="", encoding="utf-8") as f:
        rows = {row["month"]: row for row in csv.DictReader(f)}
    if month not in rows:
        raise ValueError(f"no metrics for {month!r}; months: {', '.join(sorted(rows))}")
    return rows[month]


def build_team(model: Model | str, *, store: str, max_rounds: int) -> Team:
    """The investigation team of the seed's usage example, every role on ``model``."""
    hypothesis = Agent(
        "Propose one hypothesis that could explain the problem, in one or two sentences.",
        max_tokens=REPLY_TOKENS,
    )
    evidence = Agent(
        "Find evidence for or against the newest hypothesis and add it to the board. "
        "You can look up the monthly product metrics.",
        tools=[monthly_metrics],
        max_tokens=REPLY_TOKENS,
    )
    critic = Agent(
        "Critique the current top hypothesis: does the evidence on the board support it?",
        max_tokens=REPLY_TOKENS,
    )
    coordinator = Agent(
        "Read the blackboard. Decide which agent contributes next, or terminate when the problem is solved.",
        max_tokens=96,
    )
    decider = Agent("Read the full blackboard and produce the final answer.", max_tokens=REPLY_TOKENS)
    return Team.blackboard(
        agents={"hypothesis": hypothesis, "evidence": evidence, "critic": critic},
        coordinator=coordinator,
        decider=decider,
        model=model,
        max_rounds=max_rounds,
        store=store,
        name="investigation-team",
    )


@dataclass(frozen=True)
class Outcome:
    """What one run of the example produced (the board stays in the store)."""

    board_id: str
    end_reason: str
    answer: str
    tokens: int
    store: str


async def run_team(task: str, *, model: Model | str = "local", store: str, max_rounds: int = 6) -> Outcome:
    """Run the team (``Team.blackboard``) on ``task``."""
    result = await build_team(model, store=store, max_rounds=max_rounds).run(task)
    return Outcome(result.board_id, result.end_reason, result.output, result.total_tokens, store)


async def run_template(task: str, *, model: Model | str = "local", store: str, max_steps: int | None = None) -> Outcome:
    """Run the built-in ``investigation`` blueprint on ``task``."""
    st = await open_store(store)
    try:
        board = await create_board(st, load_template("investigation"), task=task)
        runner = Runner(st, board, model=model, max_steps=max_steps)
        # On a terminal: what the board is doing and for how long (nothing when piped).
        result = await run_with_progress(runner, "investigation board")
    finally:
        await st.close()
    answer = result.answer if isinstance(result.answer, str) else ""
    return Outcome(board, result.end_reason, answer, result.total_tokens, store)


def default_store() -> str:
    """``$SLATEBOARD_STORE``, else the SQLite file ``slateboard`` commands use by default."""
    from slateboard.stores.sqlite import default_path

    return os.environ.get(STORE_ENV) or f"sqlite:///{default_path()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: run, then print the answer, the end reason and the board id."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--task", default=TASK, help=f"the question (default: {TASK!r})")
    ap.add_argument("--model", default="local", help="model string for every role (default: local)")
    ap.add_argument("--mode", choices=["team", "template"], default="team")
    ap.add_argument("--store", default=None, help="store URL (default: $SLATEBOARD_STORE or the default SQLite file)")
    ap.add_argument("--max-rounds", type=int, default=6, help="team mode: coordinator rounds (default 6)")
    ap.add_argument("--max-steps", type=int, default=None, help="template mode: stop after this many proposals")
    ap.add_argument("--json", action="store_true", help="print the outcome as JSON")
    args = ap.parse_args(argv)
    store = args.store or default_store()
    if args.mode == "team":
        with progress(f"investigation team: up to {args.max_rounds} rounds"):
            outcome = asyncio.run(run_team(args.task, model=args.model, store=store, max_rounds=args.max_rounds))
    else:
        outcome = asyncio.run(run_template(args.task, model=args.model, store=store, max_steps=args.max_steps))
    print_outcome(outcome, as_json=args.json)
    return 0


def print_outcome(outcome: Outcome, *, as_json: bool) -> None:
    """The answer, end reason, board id and tokens; then how to inspect the board."""
    if as_json:
        print(json.dumps(asdict(outcome), indent=2))
        return
    print(f"answer:     {outcome.answer or '(none)'}")
    print(f"end reason: {outcome.end_reason}")
    print(f"board:      {outcome.board_id}")
    print(f"tokens:     {outcome.tokens:,}")
    print(f"inspect:    slateboard log {outcome.board_id} --store {outcome.store}")


if __name__ == "__main__":
    sys.exit(main())
