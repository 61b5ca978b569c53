"""Helpers for the Team.blackboard tests: a fixed clock, event capture, log verification."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import ReplayReport, replay
from slateboard.runtime import RunEvent
from slateboard.stores.base import Store


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that advances one second per call (deterministic timestamps)."""
    state = {"t": start or datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)}

    def now() -> datetime:
        current = state["t"]
        state["t"] = current + timedelta(seconds=1)
        return current

    return now


def decision(terminate: bool = False, agent: str | None = None, instruction: str | None = None) -> str:
    """A coordinator answer as JSON text."""
    return json.dumps({"terminate": terminate, "next_agent": agent, "instruction": instruction})


class Events:
    """Collects events from an on_event callback."""

    def __init__(self) -> None:
        self.items: list[RunEvent] = []

    def __call__(self, event: RunEvent) -> None:
        self.items.append(event)

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.items]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.items if e.kind == kind]


async def verify_log(store: Store, board_id: str, *, revalidate: bool = False) -> ReplayReport:
    """Replay the board's log from its stored blueprint and initial state."""
    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    return replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=revalidate)


def llama_import_problem() -> str | None:
    """Why llama_cpp cannot be imported (probed in a subprocess: a broken native build can kill
    the importing process), or None when it imports and the default weights are installed."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install 'slateboard[local]')"
    probe = subprocess.run(
        [sys.executable, "-c", "import llama_cpp; from slateboard.models import default_weights_path as d; d()"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        return f"the local model cannot be loaded (exit status {probe.returncode}): {tail}"
    return None
