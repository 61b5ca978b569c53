"""``verify_board``: the checks of ``replay --verify`` from Python, with the blueprint and initial
state taken from the store (issue 29: replaying a board created with inputs against the blueprint
``build()`` compiled failed at genesis, a false alarm about the caller's arguments)."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_testkit import chain_blueprint

from slateboard.blueprint import compile_blueprint
from slateboard.kernel.replay import replay
from slateboard.runtime import Runner, create_board, verify_board
from slateboard.stores import open_store
from slateboard.stores.base import BoardNotFound


def _note(view: Any) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/notes/-", "value": "n"}]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'b.db'}"
    st = await open_store(url)
    try:
        yield st
    finally:
        await st.close()


async def test_a_board_created_with_inputs_verifies_from_the_store(store: Any) -> None:
    compiled = compile_blueprint(chain_blueprint(3))
    board = await create_board(store, compiled, inputs={"notes": ["given"]})
    await Runner(store, board, functions={"w": _note}).run()
    records = list(await store.read_records(board))
    # The compiled blueprint the caller holds has another initial state: replay says genesis.
    wrong = replay(compiled, compiled.initial_state(), records)
    assert not wrong.ok and wrong.bad_seq == 0 and "initial state differs" in (wrong.problem or "")
    report = await verify_board(store, board)
    assert report.ok, report.problem
    # three notes, plus the run's own records (its end among them)
    assert report.checked == len(records) and report.state == {"notes": ["given", "n", "n", "n"]}
    assert (await verify_board(store, board, revalidate=True)).ok


async def test_a_board_with_no_record_verifies_and_an_unknown_one_is_named(store: Any) -> None:
    board = await create_board(store, compile_blueprint(chain_blueprint(1)))
    report = await verify_board(store, board)
    assert report.ok and report.checked == 0
    with pytest.raises(BoardNotFound):
        await verify_board(store, "no-such-board")
