"""Creating a board: its initial state from a blueprint, inputs and task, and its start invocations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.pointer import parse_pointer
from ..kernel.record import Usage
from ..scheduling.rules import Scheduler
from ..stores.base import Store
from .events import BOARD_SPENT
from .session import BoardSession

__all__ = ["create_board"]


async def create_board(
    store: Store,
    blueprint: CompiledBlueprint | dict[str, Any],
    *,
    inputs: Mapping[str, JSON] | None = None,
    task: str | None = None,
    board_id: str | None = None,
    name: str | None = None,
    meta: Mapping[str, JSON] | None = None,
    spent: Sequence[Usage] = (),
) -> str:
    """Create a board from an accepted blueprint: its initial state (with ``inputs`` merged in at
    the top level, and ``task`` put at the blueprint's task pointer, then re-validated) and the
    invocations of its start rules. ``meta`` is kept on the board (e.g. the model string runner
    processes use). ``spent`` is what making the board cost before it existed (the Architect's
    ``Design.usage``): each is logged as a ``spend`` record with its component, so the board's
    log and results count those tokens too. Returns the id."""
    compiled = blueprint if isinstance(blueprint, CompiledBlueprint) else compile_blueprint(blueprint)
    spec_json = compiled.spec.to_json()
    if task is not None:
        key = parse_pointer(compiled.spec.task)[0]
        props = compiled.spec.state_schema.get("properties")
        if not isinstance(props, dict) or key not in props:
            raise InvalidInput(f"blueprint {compiled.spec.name!r} has no {compiled.spec.task!r} member for the task")
        inputs = {**(inputs or {}), key: task}
    if inputs:
        state = compiled.initial_state()
        if not isinstance(state, dict):
            raise InvalidInput("inputs need a blueprint whose initial state is an object")
        state.update(inputs)
        spec_json["initial_state"] = state
        compiled = compile_blueprint(spec_json)  # re-checks schema and invariants on the new state
    scheduler = Scheduler(compiled)
    start = list(scheduler.start(compiled.initial_state()))
    info = await store.create_board(
        spec_json,
        compiled.initial_state(),
        board_id=board_id,
        name=name or compiled.spec.name,
        meta=dict(meta) if meta else None,
        agenda=start,
    )
    if any(u.tokens_in or u.tokens_out for u in spent):
        session = BoardSession(store, info.board_id, serve=())  # builds no worker: it only logs
        await session.load()
        for usage in spent:
            await session.note_spend(usage, f"{usage.component} spent before the board existed", event=BOARD_SPENT)
    return info.board_id
