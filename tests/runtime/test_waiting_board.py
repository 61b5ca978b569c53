"""What a board keeps alive while its worker waits on the model (issue 41, memory per board).

With many boards at once most of them are waiting on a model call at any moment, so what each
holds across that await is memory per board, and every object of it that the garbage collector
tracks is walked by each collection that reaches it. These tests look at the await chain from
inside the model's call: which coroutines wait on it, and what their frames hold.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from _support.boards import NOTE_REPLY, note_loop
from slateboard._native import native_mode
from slateboard.models import Generation, GenerationUsage
from slateboard.runtime import Runner, create_board
from slateboard.runtime.runner import Runner as RunnerClass
from slateboard.stores import open_store
from slateboard.streaming import invocation_scope

pure = pytest.mark.skipif(native_mode() == "compiled", reason="compiled coroutines have no Python frames to walk")


def _chain(task: asyncio.Task[Any]) -> list[types.CoroutineType[Any, Any, Any]]:
    """The coroutines suspended ``task`` awaits, outermost first."""
    chain = []
    coro: Any = task.get_coro()
    while isinstance(coro, types.CoroutineType):
        chain.append(coro)
        coro = coro.cr_await
    return chain


class ChainModel:
    """Answers with a note; records, at each call, the await chain above it (looked at while the
    call is suspended, as it is while a real model answers)."""

    name = "chain"

    def __init__(self) -> None:
        self.chains: list[list[tuple[str, dict[str, Any]]]] = []

    def _look(self, task: asyncio.Task[Any]) -> None:
        chain = _chain(task)
        names = [c.cr_code.co_qualname for c in chain]
        mine = names.index("ChainModel.generate")  # this call and what it awaits are left out
        # a suspended coroutine always has its frame (cr_frame is None only once it finished)
        self.chains.append(
            [(c.cr_code.co_qualname, dict(c.cr_frame.f_locals or {})) for c in chain[:mine] if c.cr_frame]
        )

    async def generate(self, messages: Any, **_: Any) -> Generation:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_soon(self._look, task)  # runs while this call waits below
        await asyncio.sleep(0.01)
        return Generation(NOTE_REPLY, GenerationUsage(10, 10), "stop", self.name, 0.0)


async def _run_chain_model() -> ChainModel:
    store = await open_store("memory://")
    model = ChainModel()
    board = await create_board(store, note_loop("waiting", until=3))
    result = await Runner(store, board, model=model).run()
    assert result.state["notes"] == ["n", "n", "n"]
    await store.close()
    return model


@pure
async def test_a_waiting_board_has_one_coroutine_per_layer_that_needs_one() -> None:
    """From the task's outermost coroutine to the model's own call: the run, its loop, the step,
    the propose half, the worker's propose. The Runner's ``_invoke``, the step's inner halves,
    the worker's ``_generate``/``_call`` and ``models.streamed.generate`` hand the model's call
    up instead of waiting on it in a coroutine of their own (without a spend hook, tracing or a
    token stream)."""
    model = await asyncio.create_task(_run_chain_model())
    assert len(model.chains) == 3
    for chain in model.chains:
        names = [name for name, _ in chain]
        assert names == [
            "_run_chain_model",
            "Runner.run",
            "Runner._run",
            "StepEngine.step",
            "StepEngine.propose",
            "LLMWorker.propose",
        ]


@pure
async def test_the_worker_keeps_no_prompt_blocks_across_the_model_call() -> None:
    """The prompt blocks and the board text are dropped once the messages are built: the
    messages hold the prompt text, nothing else of it waits with the call."""
    model = await asyncio.create_task(_run_chain_model())
    for chain in model.chains:
        frames = dict(chain)
        held = frames["LLMWorker.propose"]
        assert "messages" in held
        assert not {"system", "user", "payload"} & held.keys()


def test_the_run_loop_has_no_closure_cells() -> None:
    """``Runner._run`` lives as long as the run: a comprehension there that reads its locals
    would make them cells (garbage-collector tracked objects) for the whole run."""
    code = RunnerClass._run.__code__
    assert code.co_cellvars == ()


def test_an_unstreamed_invocation_scope_is_one_shared_no_op() -> None:
    """Without a tap nothing is made per worker call (it would live for the whole call)."""
    first = invocation_scope("b", "w", "i1")
    assert invocation_scope("b2", "w2", "i2") is first
    with first:
        pass
