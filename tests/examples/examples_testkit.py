"""Helpers for the example tests: load an example's main.py as a module, check a board's log by
replay, and a scripted model that answers by role."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.kernel.record import Record
from slateboard.kernel.replay import ReplayReport
from slateboard.models import Message
from slateboard.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load_example(name: str) -> ModuleType:
    """``examples/<name>/main.py`` imported under a name of its own (examples are not a package)."""
    path = EXAMPLES / name / "main.py"
    module_name = f"example_{name}_main"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


async def verify_board(store_url: str, board_id: str) -> tuple[ReplayReport, list[Record]]:
    """Replay the board's log from its stored blueprint and initial state, re-validating every
    accepted patch (no model is called); the report (with the state the log leads to) and the
    records."""
    store = await open_store(store_url)
    try:
        loaded = await store.load_board(board_id)
        records = await store.read_records(board_id)
    finally:
        await store.close()
    assert records, f"board {board_id} has no records"
    return replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True), records


def by_role(replies: dict[str, Sequence[str]]) -> Callable[[Sequence[Message]], str]:
    """A scripted reply function: the next reply of the first role whose marker appears in the
    system message (an agent's instructions, or ``worker 'name'`` of an LLM worker)."""
    queues = {marker: list(texts) for marker, texts in replies.items()}

    def reply(messages: Sequence[Message]) -> str:
        system = next((m.content for m in messages if m.role == "system"), "")
        for marker, queue in queues.items():
            if marker in system:
                if not queue:
                    raise AssertionError(f"no scripted reply left for {marker!r}")
                return queue.pop(0)
        raise AssertionError(f"no scripted role matches the system message: {system[:120]!r}")

    return reply
