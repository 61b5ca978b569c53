"""Issue 18, stages with logged lifecycle records: entering a stage is a ``stage`` record; its
exit condition ends it by itself (autocomplete), ``completed`` when none of its work was still
queued, ``terminated`` when some was, and that queued work is cancelled (named in the record)
instead of running after the stage ended."""

from __future__ import annotations

from typing import Any

from slateboard.runtime import Runner, create_board
from slateboard.scheduling.invocation import CANCELLED, CLAIMED, DONE, PENDING
from slateboard.stores import open_store


def review_board(exit_after: int) -> dict[str, Any]:
    reviewers = ["r1", "r2", "r3"]
    return {
        "name": "review",
        "schema": {
            "type": "object",
            "properties": {
                "draft": {"type": "string"},
                "reviews": {"type": "array", "items": {"type": "string"}},
            },
        },
        "initial_state": {"reviews": []},
        "workers": {
            "writer": {"reads": ["/**"], "writes": ["/draft"]},
            **{r: {"reads": ["/**"], "writes": ["/reviews/-"]} for r in reviewers},
        },
        "stages": [{"name": "review", "enter": "has(state.draft)", "exit": f"size(state.reviews) >= {exit_after}"}],
        "rules": [
            {"on": {"op": "start"}, "invoke": "writer"},
            *({"on": {"op": "add", "path": "/draft"}, "invoke": r, "stage": "review"} for r in reviewers),
        ],
    }


def functions() -> dict[str, Any]:
    def review(name: str) -> Any:
        return lambda view: [{"op": "add", "path": "/reviews/-", "value": name}]

    return {"writer": lambda view: [{"op": "add", "path": "/draft", "value": "text"}]} | {
        r: review(r) for r in ("r1", "r2", "r3")
    }


async def test_exit_terminates_the_stage_and_cancels_its_queued_work_logged() -> None:
    store = await open_store("memory://")
    board = await create_board(store, review_board(2))
    events = []
    runner = Runner(store, board, functions=functions())
    stream = runner.events()
    result = await runner.run()
    async for ev in stream:
        if ev.kind == "stage.changed":
            events.append((ev.data["stage"], ev.data["transition"]))
    assert result.state["reviews"] == ["r1", "r2"]  # no third review after the stage exited
    records = await store.read_records(board)
    stage = [r for r in records if r.kind == "stage"]
    assert [(r.meta["stage"], r.meta["transition"]) for r in stage] == [("review", "entered"), ("review", "terminated")]
    assert all(r.meta["event"] == "stage.changed" for r in stage)
    every = await store.agenda(board, (PENDING, CLAIMED, DONE, CANCELLED))
    cancelled = [i for i in every if i.status == CANCELLED]
    assert [i.worker for i in cancelled] == ["r3"]
    assert stage[1].meta["cancelled"] == [cancelled[0].id] and cancelled[0].id in (stage[1].reason or "")
    # The terminated record follows the commit that made the exit condition hold.
    second = next(r for r in records if r.worker == "r2" and r.outcome == "accepted")
    assert stage[1].seq == second.seq + 1
    assert events == [("review", "entered"), ("review", "terminated")]
    await store.close()


async def test_exit_with_nothing_left_queued_completes_the_stage() -> None:
    store = await open_store("memory://")
    board = await create_board(store, review_board(3))
    result = await Runner(store, board, functions=functions()).run()
    assert result.state["reviews"] == ["r1", "r2", "r3"]
    records = await store.read_records(board)
    stage = [(r.meta["transition"], r.meta["cancelled"]) for r in records if r.kind == "stage"]
    assert stage == [("entered", []), ("completed", [])]
    await store.close()
