"""Visibility on a real run (the step engine, a store, function workers): what each worker is
handed honours visibility, a widening is a logged rejection at stage ``authorise``, another
worker's rejection reasons never reach a view, and replay (``revalidate=True`` re-runs every
decision) reproduces the board, its rejections and their reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from visibility_kit import blueprint_data

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.views import build_view
from slateboard.vocabulary import OUTCOME_REJECTED

SECRET = "CONTENT-for-carol-only"


def run_blueprint() -> dict[str, Any]:
    data = blueprint_data()
    data["rules"] = [
        {"on": {"op": "start"}, "invoke": "bob"},
        {"on": {"op": "start"}, "invoke": "alice", "priority": 5},
        {"on": {"op": "add", "path": "/notes/*"}, "invoke": "dave"},
        {"on": {"op": "add", "path": "/notes/*"}, "invoke": "carol"},
    ]
    data["done"] = "size(state.log) >= 2"
    return data


class Workers:
    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {"dave": [], "carol": [], "alice": [], "bob": []}

    def functions(self) -> dict[str, Any]:
        def saw(name: str, view: Any) -> None:
            self.seen[name].append(view.render())

        def bob(view: Any) -> Any:
            saw("bob", view)
            return [{"op": "add", "path": "/notes/s1", "value": {"text": SECRET, "visible_to": ["carol"]}}]

        def alice(view: Any) -> Any:
            saw("alice", view)
            if view.rejections:
                return {"decline": "my note may not reach dave"}
            return [{"op": "add", "path": "/notes/a1", "value": {"text": "for dave", "visible_to": ["dave"]}}]

        def reporter(name: str) -> Any:
            def fn(view: Any) -> Any:
                saw(name, view)
                notes = sorted((view.data.get("/notes") or view.data.get("", {}).get("notes") or {}).keys())
                return [{"op": "add", "path": "/log/-", "value": f"{name} sees {notes}"}]

            return fn

        return {"bob": bob, "alice": alice, "dave": reporter("dave"), "carol": reporter("carol")}


async def test_a_run_honours_visibility_and_replays(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    bp_data = run_blueprint()
    board = await create_board(store, bp_data)
    workers = Workers()
    result = await Runner(store, board, functions=workers.functions(), parallel=1).run()
    assert sorted(result.state["log"]) == ["carol sees ['s1']", "dave sees []"]
    # what each worker was handed: the secret reached carol only (and bob, who wrote it, saw
    # none of it: it is not addressed to him)
    assert all(SECRET not in v and "s1" not in v for v in workers.seen["dave"] + workers.seen["alice"])
    assert any(SECRET in v for v in workers.seen["carol"])
    # dave was woken by the add of an entry he may not see: his view names no event
    assert all('"event"' not in v for v in workers.seen["dave"])

    records = await store.read_records(board)
    widening = [r for r in records if r.worker == "alice" and r.outcome == OUTCOME_REJECTED]
    assert [(r.stage, r.reason) for r in widening] == [
        ("authorise", "/notes/a1/visible_to: 'dave' is wider than 'alice' may address (addresses: reviewers)")
    ]
    assert "a1" not in result.state["notes"]  # nothing committed
    # the rejection reached alice's next view, and no one else's
    assert any("wider than" in v for v in workers.seen["alice"])
    assert not any("wider than" in v for w in ("bob", "carol", "dave") for v in workers.seen[w])

    bp = compile_blueprint(bp_data)
    loaded = await store.load_board(board)
    for revalidate in (False, True):
        report = replay(bp, loaded.initial_state, records, revalidate=revalidate)
        assert report.ok, str(report)
        assert report.state == result.state
    await store.close()


def test_another_workers_rejection_reasons_never_reach_a_view() -> None:
    from slateboard.kernel import Kernel, Proposal

    bp = compile_blueprint(blueprint_data())
    k = Kernel(bp)
    rejected = []
    # carol's own entries, rejected by the schema and by the widening check, quote her content
    for patch in (
        [{"op": "add", "path": "/notes/c", "value": {"text": SECRET, "visible_to": ["carol"], "extra": SECRET}}],
        [{"op": "add", "path": "/notes/c", "value": {"text": SECRET, "visible_to": ["nobody-" + SECRET]}}],
    ):
        d = k.submit(Proposal("carol", json.dumps(patch)))
        assert d.record.outcome == OUTCOME_REJECTED
        rejected.append(d.record)
    assert any(SECRET in (r.reason or "") or SECRET in (r.patch or "") for r in rejected)
    for worker in ("alice", "bob", "dave"):
        assert SECRET not in build_view(bp, worker, k.state, k.version, rejections=rejected).render()
    assert SECRET in build_view(bp, "carol", k.state, k.version, rejections=rejected).render()
