"""A first team in Python: state, worker, rule, run, result, log (see docs/python-builder.md).

Run: ``python examples/builder_notes.py`` (the ``local`` model runs in process).
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from slateboard import Board, Runner, compile_blueprint, create_board, open_store, ref, replay
from slateboard.builder import APPEND


class State(BaseModel):  # 1. the state
    task: str = ""
    notes: list[str] = []
    answer: str | None = None


board = Board("notes", State)
board.llm_worker(  # 2. the workers
    "writer",
    instruction="Add one short note about the task.",
    reads=[ref(State, lambda s: s.task), ref(State, lambda s: s.notes)],
    writes=[ref(State, lambda s: s.notes[APPEND])],
    ops=["add"],
)
board.llm_worker(
    "decider",
    instruction="Answer the task from the notes.",
    reads=["/**"],
    writes=[ref(State, lambda s: s.answer)],
    ops=["add"],
)
board.rule("writer", on="start")  # 3. the rules
board.rule("writer", on="add", path="/notes/-", when="size(state.notes) < 2")
board.rule("decider", on="add", path="/notes/-", when="size(state.notes) >= 2")
board.settings(done="has(state.answer)", answer="/answer", limits={"max_steps": 12})


async def main(model: str = "local", url: str = "sqlite:///boards.db") -> State:
    """Run the board once (4. run), read the typed result (5. result), replay its log (6. log)."""
    compiled = board.build()
    store = await open_store(url)
    try:
        created = await create_board(store, compiled, inputs={"task": "Plan a picnic"})
        result = await Runner(store, created, model=model).run()
        state: State = compiled.typed_state(result.state)
        records = await store.read_records(result.board_id)
        loaded = await store.load_board(result.board_id)
        report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records)
        assert report.ok, str(report)
        print(result.end_reason, state.notes, state.answer)
        return state
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
