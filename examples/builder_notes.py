"""A first team in Python in six concepts: state, worker, rule, run, result, log.

docs/first-team.md shows this code (tests/builder/test_first_team.py keeps the two the same).
Run: ``python examples/builder_notes.py`` (the ``local`` model runs in process).
"""

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from slateboard import Board, Runner, create_board, open_store, ref, verify_board
from slateboard.builder import APPEND

Short = Annotated[str, Field(max_length=80)]  # bounds keep a small model's replies short


class Plan(BaseModel):  # the answer's type
    title: Short
    steps: Annotated[list[Short], Field(min_length=1, max_length=3)]


class State(BaseModel):  # 1. the state
    task: str = ""
    notes: list[Short] = []
    plan: Plan | None = None


board = Board("picnic", State)
board.llm_worker(  # 2. the workers
    "writer",
    instruction="Add one short note about the task.",
    reads=[ref(State, lambda s: s.task), ref(State, lambda s: s.notes)],
    writes=[ref(State, lambda s: s.notes[APPEND])],
    ops=["add"],
)
board.llm_worker(
    "planner",
    instruction="Write a short plan for the task from the notes.",
    reads=["/**"],
    output=ref(State, lambda s: s.plan),  # its reply is one Plan, checked by the kernel
    output_type=Plan,
    ops=["add"],
)
board.rule("writer", on="start")  # 3. the rules
board.rule("writer", on="add", path="/notes/-", when="size(state.notes) < 2")
board.rule("planner", on="add", path="/notes/-", when="size(state.notes) >= 2")
board.settings(done="has(state.plan)", answer="/plan", limits={"max_steps": 12})


async def main(model: str = "local", url: str = "sqlite:///:memory:") -> Plan:
    compiled = board.build()
    store = await open_store(url)
    try:
        board_id = await create_board(store, compiled, inputs={"task": "Plan a picnic"})
        result = await Runner(store, board_id, model=model).run()  # 4. run
        plan = result.answer_as(Plan)  # 5. the result, a Plan
        assert (await verify_board(store, board_id)).ok  # 6. the log: every proposal, replayed
        print(result.end_reason, plan)
        return plan
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
