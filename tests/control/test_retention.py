"""Issue 18 (seed 002, board pollution): a blueprint ``retention`` bound keeps the last N items
of an array. The pruning is a system worker's proposal through the kernel: logged (never
silent), bounded by its contract (it may only remove items of that array), and replayed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.kernel import replay
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

BP: dict[str, Any] = {
    "name": "bounded-notes",
    "schema": {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"}},
    },
    "initial_state": {"notes": [], "count": 0},
    "workers": {"writer": {"reads": ["/count"], "writes": ["/notes/-", "/count"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "state.count < 7", "invoke": "writer"},
    ],
    "retention": [{"path": "/notes", "keep_last": 3}],
}


def writer(view: Any) -> Any:
    n = view.data["/count"] + 1
    return [{"op": "add", "path": "/notes/-", "value": f"n{n}"}, {"op": "replace", "path": "/count", "value": n}]


async def test_the_array_keeps_its_last_items_through_logged_system_proposals(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'retention.db'}"
    store = await open_store(url)
    board = await create_board(store, BP)
    result = await Runner(store, board, functions={"writer": writer}).run()
    assert result.end_reason == "agenda_empty"
    assert result.state == {"notes": ["n5", "n6", "n7"], "count": 7}

    records = await store.read_records(board)
    pruned = [r for r in records if r.worker == "retention:/notes"]
    # Each append past the bound woke the system worker once, and it removed the oldest item.
    assert len(pruned) == 4 and all(r.kind == "proposal" and r.outcome == "accepted" for r in pruned)
    assert all(r.usage.component == "system" and r.meta["retention"]["removed"] == 1 for r in pruned)
    assert [r.meta["retention"]["size"] for r in pruned] == [4, 4, 4, 4]
    assert all(r.patch == '[{"op":"remove","path":"/notes/0"}]' for r in pruned)
    # Top priority: each pruning directly follows the append that overflowed the array.
    for r in pruned:
        before = next(x for x in records if x.seq == r.seq - 1)
        assert before.worker == "writer" and before.outcome == "accepted"
    assert result.usage_by_worker["retention:/notes"].calls == 4

    loaded = await store.load_board(board)
    for revalidate in (False, True):
        report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=revalidate)
        assert report.ok, str(report)
        assert report.state == result.state
    await store.close()


async def test_the_system_worker_may_only_remove_items_of_its_array() -> None:
    bp = compile_blueprint(BP)
    contract = bp.workers["retention:/notes"]
    assert [p.text for p in contract.reads] == ["/notes"]
    assert [p.text for p in contract.writes] == ["/notes/*"] and contract.ops == frozenset({"remove"})
    assert "retention:/notes" not in bp.spec.workers  # compiled, not part of the user's blueprint


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        ({"path": "/notes/*", "keep_last": 2}, "must name one array"),
        ({"path": "/count", "keep_last": 2}, "is not an array of the state schema"),
        ({"path": "/notes", "keep_last": 2, "name": "writer"}, "worker name 'writer' is taken"),
    ],
)
def test_a_bad_retention_bound_is_named(bound: dict[str, Any], expected: str) -> None:
    bp = copy.deepcopy(BP)
    bp["retention"] = [bound]
    with pytest.raises(BlueprintError) as err:
        compile_blueprint(bp)
    assert expected in str(err.value) and "/retention/0" in str(err.value)


def test_a_blueprint_without_retention_keeps_its_digest() -> None:
    plain = copy.deepcopy(BP)
    del plain["retention"]
    assert "retention" not in compile_blueprint(plain).spec.to_json()
    assert compile_blueprint(plain).digest == compile_blueprint({**plain, "retention": []}).digest
