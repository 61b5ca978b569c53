"""Function guards on a running board: a refusal is a rejection at ``guard:<name>`` fed back to
the worker, which then proposes again; a guard that raises, hangs or returns no verdict refuses
(nothing committed); the verdicts are in the records, and ``rerun_function_guards`` (``replay
--revalidate``) says where a function now disagrees with the log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import guards_testkit
import pytest
from guards_testkit import board, notes

from slateboard.blueprint import compile_blueprint
from slateboard.guards import GuardVerdict, rerun_function_guards
from slateboard.guards._run import function_verdict
from slateboard.kernel.guardstage import GUARDS_META
from slateboard.runtime import Runner, create_board, verify_board
from slateboard.stores import open_store
from slateboard.stores.base import Store


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'b.db'}"
    st = await open_store(url)
    try:
        yield st
    finally:
        await st.close()


async def _run(store: Store, guards: list[dict[str, Any]], *texts: str, **options: Any) -> tuple[str, Any, list[Any]]:
    bp = compile_blueprint(board(guards, **options))
    board_id = await create_board(store, bp)
    worker = notes(*texts)
    result = await Runner(store, board_id, functions={"w": worker}).run()
    records = [r for r in await store.read_records(board_id) if r.kind == "proposal"]
    return board_id, result, [(r, worker) for r in records]


async def test_a_refusal_is_fed_back_and_the_worker_tries_again(store: Store) -> None:
    guard = {"name": "clean", "function": "guards_testkit:no_bad", "shares_reason": True}
    board_id, result, rows = await _run(store, [guard], "a bad note", "a good note")
    (refused, worker), (accepted, _), _decline = rows
    assert (refused.outcome, refused.stage) == ("rejected", "guard:clean")
    assert refused.reason == "note 'a bad note' contains 'bad'"
    assert worker.feedback[1] == refused.reason  # the retry carried it
    assert accepted.accepted and accepted.meta[GUARDS_META] == [
        {"name": "clean", "by": "function", "function": "guards_testkit:no_bad", "ok": True, "reason": "clean"}
    ]
    assert result.state["notes"] == ["a good note"]
    assert (await verify_board(store, board_id)).ok and (await verify_board(store, board_id, revalidate=True)).ok


async def test_guards_run_in_order_and_stop_at_the_first_refusal(store: Store) -> None:
    guards = [
        {"name": "clean", "function": "guards_testkit:no_bad"},
        {"name": "grows", "function": "guards_testkit:grows"},
        {"name": "who", "function": "guards_testkit:async_ok"},
    ]
    _board, _result, rows = await _run(store, guards, "bad", "good")
    assert [v["name"] for v in rows[0][0].meta[GUARDS_META]] == ["clean"]
    assert [(v["name"], v["ok"]) for v in rows[1][0].meta[GUARDS_META]] == [
        ("clean", True),
        ("grows", True),
        ("who", True),
    ]
    assert rows[1][0].meta[GUARDS_META][2]["reason"] == "from w"  # async, and given the worker


@pytest.mark.parametrize(
    ("function", "error", "words"),
    [
        ("guards_testkit:boom", "raised", "guard raised RuntimeError: the checker is broken"),
        ("guards_testkit:hang", "timeout", "guard timed out after 0.05 s"),
        ("guards_testkit:no_verdict", "verdict", "guard returned a str, not a verdict"),
    ],
)
async def test_a_guard_that_fails_refuses_and_nothing_is_committed(
    store: Store, function: str, error: str, words: str
) -> None:
    guard = {"name": "g", "function": function, "timeout": 0.05, "shares_reason": True}
    guards_testkit.RELEASE.clear()
    try:
        board_id, result, rows = await _run(store, [guard], "one", max_steps=2)
    finally:
        guards_testkit.RELEASE.set()  # the hanging guard's thread returns
    rec = rows[0][0]
    assert (rec.outcome, rec.stage) == ("rejected", "guard:g") and (rec.reason or "").startswith(words)
    assert rec.meta[GUARDS_META][0]["error"] == error
    assert result.state["notes"] == [] and all(not r.accepted for r, _ in rows)
    assert (await verify_board(store, board_id)).ok


async def test_revalidate_re_runs_functions_and_names_a_disagreement(store: Store) -> None:
    guard = {"name": "clean", "function": "guards_testkit:no_bad"}
    board_id, _result, _rows = await _run(store, [guard], "bad", "good")
    loaded = await store.load_board(board_id)
    records = list(await store.read_records(board_id))
    bp = compile_blueprint(loaded.blueprint)
    assert await rerun_function_guards(bp, loaded.initial_state, records) == []
    guards_testkit.STRICT["on"] = False
    try:
        (line,) = await rerun_function_guards(bp, loaded.initial_state, records)
    finally:
        guards_testkit.STRICT["on"] = True
    assert line.startswith("record 1: guard 'clean' logged ok=False, now says ok=True")
    assert (await verify_board(store, board_id)).ok  # the log still decides: it verifies


def test_what_a_function_may_return() -> None:
    assert function_verdict("g", True) == (True, "")
    assert function_verdict("g", False) == (False, "guard 'g' refused the patch")
    assert function_verdict("g", (False, "no")) == (False, "no")
    assert function_verdict("g", {"ok": True, "reason": "fine"}) == (True, "fine")
    assert function_verdict("g", GuardVerdict(False, "x" * 5000)) == (False, "x" * 2000)
    for wrong in (None, 1, "yes", (True,), {"ok": 1}, {"ok": True, "reason": 3}):
        assert function_verdict("g", wrong) is None


def test_replay_revalidate_says_when_a_function_disagrees(tmp_path: Path) -> None:
    import asyncio
    import json

    from typer.testing import CliRunner

    from slateboard.cli import app

    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def make() -> str:
        st = await open_store(url)
        try:
            board_id, _result, _rows = await _run(
                st, [{"name": "clean", "function": "guards_testkit:no_bad"}], "bad", "ok"
            )
            return board_id
        finally:
            await st.close()

    board_id = asyncio.run(make())
    env = {"SLATEBOARD_STORE": url, "COLUMNS": "200"}
    guards_testkit.STRICT["on"] = False
    try:
        text = CliRunner().invoke(app, ["replay", board_id, "--verify", "--revalidate"], env=env)
        data = CliRunner().invoke(app, ["replay", board_id, "--verify", "--revalidate", "--json"], env=env)
    finally:
        guards_testkit.STRICT["on"] = True
    assert text.exit_code == 0 and "guard: record 1: guard 'clean' logged ok=False, now says ok=True" in text.output
    (line,) = json.loads(data.stdout)["guard_disagreements"]
    assert line.startswith("record 1: guard 'clean'")
    plain = CliRunner().invoke(app, ["replay", board_id, "--verify", "--json"], env=env)
    assert json.loads(plain.stdout)["guard_disagreements"] == []  # only --revalidate re-runs them
