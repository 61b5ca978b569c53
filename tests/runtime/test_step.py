"""The step engine: one append per step, commit or abort together, one compare-and-set retry loop."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from runtime_testkit import chain_blueprint

import slateboard
from slateboard.kernel.record import Record
from slateboard.runtime import BoardSession, create_board
from slateboard.runtime.accounting import Accounts
from slateboard.runtime.step import cas_retry
from slateboard.stores import open_store
from slateboard.stores.base import AgendaChanges, Conflict, StoreUnavailable

CHAIN = chain_blueprint(max_steps=5)


def writer(view: Any) -> Any:
    return [{"op": "add", "path": "/notes/-", "value": "x"}]


async def test_cas_retry_catches_up_and_tries_again_only_when_allowed() -> None:
    tries: list[int] = []
    caught_up: list[int] = []

    async def attempt(conflicts: int) -> str:
        tries.append(conflicts)
        if conflicts < 2:
            raise Conflict("b", "moved on")
        return "ok"

    async def catch_up() -> None:
        caught_up.append(len(tries))

    assert await cas_retry(attempt, catch_up, retry=True) == "ok"
    assert tries == [0, 1, 2] and caught_up == [1, 2]
    tries.clear()
    with pytest.raises(Conflict):
        await cas_retry(attempt, catch_up, retry=False)
    assert tries == [0]
    tries.clear()
    with pytest.raises(Conflict):
        await cas_retry(attempt, catch_up, retry=True, limit=1)
    assert tries == [0, 1]


def test_src_has_one_compare_and_set_retry_loop() -> None:
    """Only ``cas_retry`` catches a lost compare-and-set outside the stores."""
    root = Path(slateboard.__file__).parent
    catchers: list[str] = []
    for path in root.rglob("*.py"):
        if "stores" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None and "Conflict" in ast.unparse(node.type):
                catchers.append(f"{path.relative_to(root)}:{node.lineno}")
    assert len(catchers) == 1 and catchers[0].startswith("runtime/step.py"), catchers


class FailingAppends:
    """Wraps a store: the next ``fail`` appends raise StoreUnavailable (nothing is written)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.fail = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def append(self, board_id: str, record: Record, *, agenda: AgendaChanges, **kw: Any) -> Any:
        if self.fail:
            self.fail -= 1
            raise StoreUnavailable("injected")
        return await self._store.append(board_id, record, agenda=agenda, **kw)


def _everything_a_step_changes(session: BoardSession) -> tuple[Any, ...]:
    """What one step moves: the kernel's version and state, the scheduler, the agenda, the
    step count and the history (equal before and after means the step left no trace)."""
    return (
        session.kernel.version,
        session.kernel.state_hash,
        session.scheduler.to_json(),
        session.agenda.to_json(),
        session.accounts.steps,
        len(session.history),
    )


async def test_a_failed_append_aborts_kernel_scheduler_mirror_and_accounts_together() -> None:
    inner = await open_store("memory://")
    board = await create_board(inner, CHAIN)
    store = FailingAppends(inner)
    session = BoardSession(store, board, functions={"w": writer})  # type: ignore[arg-type]
    await session.load()
    inv = session.agenda.pop()
    assert inv is not None
    before = _everything_a_step_changes(session)
    store.fail = 1
    with pytest.raises(StoreUnavailable):
        await session.step(inv, "test")
    after = _everything_a_step_changes(session)
    assert after == before
    # The same invocation then steps normally: the rules' invocation and the record land together.
    outcome = await session.step(inv, "test")
    assert outcome.record is not None and outcome.record.outcome == "accepted"
    stored = await inner.agenda(board)
    assert [i.worker for i in stored] == ["w"] and session.agenda.get(stored[0].id) is not None
    assert session.accounts.steps == before[4] + 1 == Accounts.of(await inner.read_records(board)).steps
    await inner.close()
