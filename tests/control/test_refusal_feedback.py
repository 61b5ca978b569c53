"""Issue 18: a refused approval asks the worker again with the refusal as feedback (bounded).

The refused patch itself is never committed (proposed again it is a no-op at stage
``approval``: never held for a person a second time); the worker's
next invocation is on the store's agenda, so another process resuming the board runs it; past
``limits.max_refusals`` the invocation fails with an ``invocation.failed`` record and the run's
end reason names the lost work."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from _support.boards import approved_answer
from slateboard.blueprint import compile_blueprint
from slateboard.cli import app
from slateboard.kernel import replay
from slateboard.models import ScriptedModel
from slateboard.runtime import Runner, approve, create_board, held_proposals, refuse
from slateboard.status import end_status
from slateboard.stores import open_store

BP = approved_answer("refused-answer", decider={"instruction": "Write the answer."})


def writer(view: Any) -> Any:
    return [{"op": "add", "path": "/notes/-", "value": "evidence"}]


def answer(value: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/answer", "value": value}]})


async def verified(store: Any, board: str) -> list[Any]:
    loaded = await store.load_board(board)
    records: list[Any] = await store.read_records(board)
    bp = compile_blueprint(loaded.blueprint)
    for revalidate in (False, True):
        report = replay(bp, loaded.initial_state, records, revalidate=revalidate)
        assert report.ok, str(report)
    return records


async def test_refusal_reaches_the_workers_prompt_and_its_second_proposal_is_committed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    model = ScriptedModel([answer("forty-two"), answer("forty-three")])
    store = await open_store(url)
    board = await create_board(store, BP)
    first = await Runner(store, board, functions={"writer": writer}, model=model).run()
    assert first.end_reason.startswith("paused")
    [held] = await held_proposals(store, board)
    await refuse(store, board, held.seq, by="alice", note="not sourced")
    await store.close()

    store = await open_store(url)  # resumed as another process would
    second = await Runner(store, board, functions={"writer": writer}, model=model).run()
    assert second.end_reason.startswith("paused")  # the new proposal touches /answer: held too
    assert len(model.calls) == 2
    prompt = "\n".join(m.content for m in model.calls[1].messages)
    assert "alice refused record" in prompt and "not sourced" in prompt and "forty-two" in prompt
    assert "not sourced" not in "\n".join(m.content for m in model.calls[0].messages)
    [again] = await held_proposals(store, board)
    assert again.seq != held.seq and "forty-three" in again.patch
    await approve(store, board, again.seq)
    third = await Runner(store, board, functions={"writer": writer}, model=model).run()
    assert third.end_reason == "done" and third.answer == "forty-three"
    assert len(model.calls) == 2  # the approved patch is committed, not asked for again

    records = await verified(store, board)
    refusal = next(r for r in records if r.kind == "approval" and r.meta["decision"] == "refused")
    assert refusal.meta["refusals"] == 1 and refusal.meta["asked_again"] is True
    asked = [r for r in records if r.kind == "proposal" and r.worker == "decider"]
    assert [r.outcome for r in asked] == ["held", "held", "accepted"]
    assert asked[1].invocation == f"refused-{held.seq}" and asked[1].invocation != asked[0].invocation
    assert not any(r.outcome == "accepted" and "forty-two" in (r.patch or "") for r in records)
    assert (await store.board_info(board)).status == "done"
    await store.close()


async def test_the_refused_patch_proposed_again_is_a_noop_not_held_again(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'same.db'}")
    board = await create_board(store, BP)
    model = ScriptedModel([answer("forty-two"), answer("forty-two"), answer("forty-four")])
    await Runner(store, board, functions={"writer": writer}, model=model).run()
    [held] = await held_proposals(store, board)
    await refuse(store, board, held.seq)
    result = await Runner(store, board, functions={"writer": writer}, model=model).run()
    records = await verified(store, board)
    repeat = next(r for r in records if r.seq > held.seq and r.kind == "proposal")
    assert (repeat.outcome, repeat.stage) == ("noop", "approval")
    assert f"refused by a human (held record {held.seq})" in (repeat.reason or "")
    # Nothing to hold, nothing committed, and the worker (asked once more) has had its turn:
    # the board ends without an answer, and says so.
    assert await held_proposals(store, board) == [] and len(model.calls) == 2
    assert result.end_reason == "agenda_empty" and result.answer is None
    info = await store.board_info(board)
    assert end_status(info.status, info.reason, answered=False) == "exhausted"
    await store.close()


async def test_past_max_refusals_the_invocation_fails_with_a_record_and_the_end_says_so(tmp_path: Path) -> None:
    bp = copy.deepcopy(BP)
    bp["limits"] = {"max_refusals": 1}
    store = await open_store(f"sqlite:///{tmp_path / 'bound.db'}")
    board = await create_board(store, bp)
    model = ScriptedModel([answer("one"), answer("two"), answer("three")])
    await Runner(store, board, functions={"writer": writer}, model=model).run()
    [first] = await held_proposals(store, board)
    await refuse(store, board, first.seq, note="no")
    await Runner(store, board, functions={"writer": writer}, model=model).run()
    [second] = await held_proposals(store, board)
    refusal = await refuse(store, board, second.seq, note="still no")
    assert refusal.meta["refusals"] == 2 and refusal.meta["asked_again"] is False

    records = await store.read_records(board)
    failed = records[-1]
    assert failed.meta.get("event") == "invocation.failed" and failed.seq == refusal.seq + 1
    assert failed.invocation == f"refused-{first.seq}" and failed.worker == "decider"
    assert "refused its proposal 2 time(s)" in (failed.reason or "")
    assert await store.agenda(board) == []  # nothing queued: the worker is not asked a third time

    result = await Runner(store, board, functions={"writer": writer}, model=model).run()
    assert len(model.calls) == 2
    assert result.end_reason.startswith("agenda_empty; lost work: 1 invocation(s) failed")
    assert f"refused-{first.seq}" in result.end_reason
    assert "answer" not in result.state
    info = await store.board_info(board)
    assert end_status(info.status, info.reason, answered=result.answer is not None) == "exhausted"
    await verified(store, board)
    await store.close()


def test_the_cli_says_the_worker_is_asked_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"

    async def paused() -> str:
        store = await open_store(url)
        board = await create_board(store, BP)
        await Runner(store, board, functions={"writer": writer}, model=ScriptedModel([answer("x")])).run()
        await store.close()
        return board

    board = asyncio.run(paused())
    shown = CliRunner().invoke(app, ["refuse", board, "--store", url, "--note", "no"])
    assert shown.exit_code == 0, shown.output
    assert "decider will be asked again with the refusal as feedback (refusal 1)" in " ".join(shown.stdout.split())
