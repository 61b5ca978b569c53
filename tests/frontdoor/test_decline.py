"""Issue 28: a worker may decline. ``{"decline": reason}`` is logged as a no-op at stage
``decline`` (not a rejection): the invocation ends, it is never re-queued, it never trips the
circuit, and the board goes on."""

from __future__ import annotations

from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal, replay
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.workers.parse import parse_reply

BP: dict[str, Any] = {
    "name": "decline",
    "schema": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}, "done": {"type": "boolean"}},
    },
    "initial_state": {"items": [], "done": False},
    "workers": {
        "picky": {"reads": ["/items"], "writes": ["/items/-"]},
        "closer": {"reads": ["/items"], "writes": ["/done"]},
    },
    "rules": [
        {"on": {"op": "add", "path": "/items/-"}, "invoke": "picky"},
        {"on": {"op": "start"}, "invoke": "picky"},
        {"on": {"op": "add", "path": "/items/-"}, "invoke": "closer"},
    ],
    "done": "state.done",
    "circuit": {"max_noops": 1, "max_consecutive_invalid": 2},
}


def test_the_reply_forms_are_read_as_a_decline() -> None:
    for text in ('{"decline": "nothing to add"}', 'I pass.\n```json\n{"decline": "nothing to add"}\n```'):
        parsed = parse_reply(text)
        assert parsed.ok and parsed.patch == {"decline": "nothing to add"} and parsed.how.endswith("+decline")
    # not a decline: another member beside it, or a reason that is not a string
    assert not parse_reply('{"decline": "x", "other": 1}').how.endswith("+decline")
    assert not parse_reply('{"decline": 3}').ok


def test_the_kernel_logs_a_decline_as_a_noop() -> None:
    kernel = Kernel(compile_blueprint(BP))
    decision = kernel.prepare(Proposal("picky", '{"decline": "the list is long enough"}'))
    rec = decision.record
    assert (rec.outcome, rec.stage, rec.reason) == ("noop", "decline", "declined: the list is long enough")
    assert decision.events == [] and kernel.state == BP["initial_state"]
    kernel.commit(decision)
    # the empty patch is still a rejection: it is not the documented way to decline
    empty = kernel.prepare(Proposal("picky", []))
    assert (empty.record.outcome, empty.record.stage) == ("rejected", "ops")


async def test_a_declining_worker_is_a_noop_and_the_board_goes_on() -> None:
    calls = {"picky": 0, "closer": 0}

    def picky(view: Any) -> Any:
        calls["picky"] += 1
        items = view.data.get("/items") or []
        if len(items) >= 3:
            return {"decline": "three items are enough"}
        return [{"op": "add", "path": "/items/-", "value": len(items)}]

    def closer(view: Any) -> Any:
        calls["closer"] += 1
        items = view.data.get("/items") or []
        if len(items) < 3:
            return {"decline": "not yet"}  # declines more often than max_noops, in a row
        return [{"op": "replace", "path": "/done", "value": True}]

    store = await open_store("memory://")
    board = await create_board(store, BP)
    result = await Runner(store, board, functions={"picky": picky, "closer": closer}, parallel=1).run()
    records = await store.read_records(board)
    await store.close()
    declines = [r for r in records if r.stage == "decline"]
    assert result.state["done"] is True and result.end_status == "solved"
    assert result.state["items"] == [0, 1, 2]
    assert "closer" in {r.worker for r in declines}  # at max_noops=1: a plain no-op would trip it
    assert all(r.outcome == "noop" for r in declines)
    assert not [r for r in records if r.kind == "circuit"]
    assert not [r for r in records if r.outcome == "rejected"]
    report = replay(compile_blueprint(BP), BP["initial_state"], records, revalidate=True)
    assert report.ok and report.state == result.state
