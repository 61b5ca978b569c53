"""The runner end to end with function workers on real stores: completion, answers, events,
retries with feedback, circuit halts, timeouts, stale proposals in parallel mode, resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _support.boards import notes_blueprint
from slateboard.kernel import replay
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.stores.base import Store

NOTES = notes_blueprint(6)


def note(author: str, text: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/notes/-", "value": {"author": author, "text": text}}]


@pytest.fixture(params=["memory", "sqlite", "sqlite-thread"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    urls = {"memory": "memory://", "sqlite": f"sqlite:///{tmp_path / 'boards.db'}"}
    url = urls.get(request.param, f"sqlite:///{tmp_path / 'boards.db'}?writer=thread")
    s = await open_store(url)
    yield s
    await s.close()


async def verify(store: Store, board_id: str) -> None:
    from slateboard.blueprint import compile_blueprint

    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records)
    assert report.ok, str(report)


async def test_runs_to_done_with_answer_and_events(store: Store) -> None:
    board = await create_board(store, NOTES, inputs={"task": "write notes"})
    feedback_seen: list[Any] = []
    calls = {"b": 0}

    def b(view: Any, event: Any = None) -> Any:
        calls["b"] += 1
        if calls["b"] == 2:
            return note("b", "")  # violates the invariant: rejected, retried with feedback
        return note("b", "reply")

    def a(view: Any) -> Any:
        return note("a", "note")

    runner = Runner(
        store,
        board,
        functions={"a": a, "b": b, "decider": lambda view: [{"op": "add", "path": "/answer", "value": "six"}]},
    )
    events = runner.events()
    result = await runner.run()
    kinds = [e.kind async for e in events]
    assert result.end_reason == "done"
    assert result.answer == "six"
    assert len(result.state["notes"]) == 6
    assert result.rejected == 1 and result.accepted == 7
    assert kinds[0] == "run.started" and kinds[-1] == "run.ended"
    decided = [k for k in kinds if k == "proposal.decided"]
    assert len(decided) == 8
    records = await store.read_records(board)
    rejected = [r for r in records if r.outcome == "rejected"]
    assert rejected[0].stage == "invariants" and "notes are not empty" in (rejected[0].reason or "")
    assert records[-1].kind == "run" and records[-1].reason == "done"
    info = await store.board_info(board)
    assert info.status == "done" and info.reason == "done"
    del feedback_seen
    await verify(store, board)


async def test_invalid_worker_is_halted_by_the_circuit_policy(store: Store) -> None:
    board = await create_board(store, NOTES)
    runner = Runner(
        store, board, functions={"a": lambda view: "this is not a patch", "b": lambda v: [], "decider": lambda v: []}
    )
    result = await runner.run()
    assert result.end_reason.startswith("circuit:")
    records = await store.read_records(board)
    assert [r.stage for r in records if r.kind == "proposal"] == ["parse"] * len(
        [r for r in records if r.kind == "proposal"]
    )
    assert any(r.kind == "circuit" for r in records)
    assert result.version == 0 and result.state["notes"] == []
    await verify(store, board)


async def test_worker_timeout_becomes_a_model_rejection(store: Store) -> None:
    # A timed-out call is a failed call (stage ``model``, the timeout as the reason), not a
    # reply that was "not valid JSON" (issue 16; this test asserted stage ``parse`` before).
    board = await create_board(store, NOTES)

    async def slow(view: Any) -> Any:
        await asyncio.sleep(5)
        return note("a", "late")

    runner = Runner(
        store, board, functions={"a": slow, "b": lambda v: [], "decider": lambda v: []}, worker_timeout=0.05
    )
    result = await runner.run()
    records = await store.read_records(board)
    first = next(r for r in records if r.kind == "proposal")
    assert first.outcome == "rejected" and first.stage == "model"
    assert "timed out after 0.05 s" in str(first.reason)
    assert "timed out" in str(first.meta.get("error"))
    assert result.state["notes"] == []


CONFLICT: dict[str, Any] = {
    "name": "conflict",
    "schema": {
        "type": "object",
        "properties": {"slot": {"type": "string"}, "log": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"slot": "empty", "log": []},
    "workers": {
        "left": {"reads": ["/slot"], "writes": ["/slot", "/log/-"]},
        "right": {"reads": ["/slot"], "writes": ["/slot", "/log/-"]},
    },
    "rules": [{"on": {"op": "start"}, "invoke": "left"}, {"on": {"op": "start"}, "invoke": "right"}],
}


async def test_parallel_conflicting_proposals_one_commit_per_version_and_stale_requeued(store: Store) -> None:
    board = await create_board(store, CONFLICT)
    seen: dict[str, list[int]] = {"left": [], "right": []}

    def writer(name: str) -> Any:
        async def propose(view: Any) -> Any:
            seen[name].append(view.version)
            await asyncio.sleep(0.05)  # both views are built before either commits
            return [
                {"op": "test", "path": "/slot", "value": "empty"}
                if name == "right"
                else {"op": "add", "path": "/log/-", "value": name},
                {"op": "replace", "path": "/slot", "value": name},
            ]

        return propose

    runner = Runner(store, board, functions={"left": writer("left"), "right": writer("right")}, parallel=2)
    result = await runner.run()
    records = [r for r in await store.read_records(board) if r.kind == "proposal"]
    versions = [r.version for r in records if r.outcome == "accepted"]
    assert versions == sorted(set(versions))  # exactly one commit per version
    stale = [r for r in records if r.stage == "stale"]
    assert len(stale) == 1
    loser = stale[0].worker
    assert loser is not None
    # The stale invocation ran again with a fresh view and was judged on its own merits.
    assert seen[loser][0] == 0 and len(seen[loser]) >= 2 and set(seen[loser][1:]) == {1}
    retried = [r for r in records if r.worker == loser][-1]
    if loser == "right":
        assert retried.outcome == "rejected" and retried.stage == "preconditions"
    else:
        assert retried.outcome == "accepted"
    assert result.end_reason == "agenda_empty"
    await verify(store, board)


async def test_interrupted_run_resumes_from_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'resume.db'}"
    store = await open_store(url)
    board = await create_board(store, NOTES)
    decided = 0
    gate = asyncio.Event()

    def a(view: Any) -> Any:
        return note("a", "note")

    def b(view: Any) -> Any:
        return note("b", "reply")

    first = Runner(store, board, functions={"a": a, "b": b, "decider": lambda v: []}, lease_s=0.2)
    events = first.events()
    task = asyncio.create_task(first.run())
    async for ev in events:
        if ev.kind == "proposal.decided":
            decided += 1
            if decided == 3:
                gate.set()
                break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await store.close()

    store = await open_store(url)
    before = await store.read_records(board)
    second = Runner(
        store,
        board,
        functions={"a": a, "b": b, "decider": lambda v: [{"op": "add", "path": "/answer", "value": "ok"}]},
        lease_s=0.2,
    )
    result = await second.run()
    assert result.end_reason == "done" and result.answer == "ok"
    after = await store.read_records(board)
    assert [r.hash for r in after[: len(before)]] == [r.hash for r in before]  # nothing lost or rewritten
    invocations = [r.invocation for r in after if r.outcome == "accepted"]
    assert len(invocations) == len(set(invocations))  # no invocation committed twice
    assert len(result.state["notes"]) == 6
    await verify(store, board)
    await store.close()


async def test_a_finished_board_is_not_run_again(store: Store) -> None:
    # Issue 20, D4/D16 at the runner: a board that ended at max_steps with work still pending
    # used to be selected forever (its claims need a running board); each resume also appended
    # another run-end record. Now a second run returns the stored result and appends nothing.
    bp = {**NOTES, "limits": {"max_steps": 2}}
    board = await create_board(store, bp, inputs={"task": "write notes"})
    functions = {"a": lambda view: note("a", "note"), "b": lambda view: note("b", "reply"), "decider": lambda v: []}
    first = await Runner(store, board, functions=functions).run()
    assert "max_steps" in first.end_reason
    before = await store.read_records(board)
    again = await asyncio.wait_for(Runner(store, board, functions=functions).run(), 60)
    assert again.end_reason == first.end_reason and again.version == first.version
    assert await store.read_records(board) == before
    await verify(store, board)


async def test_boards_of_one_blueprint_share_its_compiled_form(store: Store) -> None:
    # Many boards of one blueprint in a process: one compiled schema index, rules and CEL
    # programs, not a copy per board; a Python invariant added to one board stays its own.
    functions: dict[str, Any] = {
        "a": lambda view: note("a", "note"),
        "b": lambda view, event=None: note("b", "reply"),
        "decider": lambda view: [{"op": "add", "path": "/answer", "value": "six"}],
    }
    first, second = [await create_board(store, NOTES, inputs={"task": "write notes"}) for _ in range(2)]
    one, other = Runner(store, first, functions=functions), Runner(store, second, functions=functions)
    await one.open()
    await other.open()
    assert one.blueprint.schema is other.blueprint.schema
    assert one.blueprint.rules is other.blueprint.rules and one.blueprint.invariants is other.blueprint.invariants
    one.blueprint.add_invariant("/notes/*", lambda ctx: "refused on this board only", name="only-here")
    assert [i.name for i in one.blueprint.extra_invariants] == ["only-here"]
    assert other.blueprint.extra_invariants == []
    result = await other.run()
    assert result.end_reason == "done" and len(result.state["notes"]) == 6
