"""Issue 18: parallelism where the blueprint's contracts allow it. Workers none of which writes
what another reads or writes can never make each other's proposals stale, so a Runner with
``parallel="auto"`` (the default) runs them at once; a worker that may conflict with one in
flight waits for it, and a board whose workers all conflict runs one step at a time."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from slateboard.blueprint import compile_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.scheduling.parallel import conflict_map, conflicting_workers, default_parallelism, patterns_overlap
from slateboard.stores import open_store

INDEPENDENT: dict[str, Any] = {
    "name": "independent",
    "schema": {
        "type": "object",
        "properties": {w: {"type": "array", "items": {"type": "string"}} for w in ("a", "b", "c")},
    },
    "initial_state": {"a": [], "b": [], "c": []},
    "workers": {w: {"reads": [f"/{w}"], "writes": [f"/{w}/-"]} for w in ("a", "b", "c")},
    "rules": [
        *({"on": {"op": "start"}, "invoke": w} for w in ("a", "b", "c")),
        *({"on": {"op": "add", "path": f"/{w}/-"}, "when": f"size(state.{w}) < 3", "invoke": w} for w in "abc"),
    ],
}


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("/a", "/a/-", True),  # ancestor and descendant
        ("/a/*", "/a/3/x", True),
        ("/a/-", "/a/-", True),
        ("/**", "/z", True),
        ("/a", "/b", False),
        ("/a/x", "/a/y", False),
    ],
)
def test_patterns_overlap(a: str, b: str, overlap: bool) -> None:
    tokens = [t for t in a.split("/")[1:]], [t for t in b.split("/")[1:]]
    assert patterns_overlap(*tokens) is overlap
    assert patterns_overlap(*reversed(tokens)) is overlap


def test_what_makes_workers_conflict() -> None:
    assert conflicting_workers(compile_blueprint(INDEPENDENT)) == []
    assert default_parallelism(compile_blueprint(INDEPENDENT)) == 3
    reader = copy.deepcopy(INDEPENDENT)
    reader["workers"]["c"] = {"reads": ["/**"], "writes": ["/c/-"]}  # reads what a and b write
    assert conflicting_workers(compile_blueprint(reader)) == [("a", "c"), ("b", "c")]
    assert default_parallelism(compile_blueprint(reader)) == 1
    shared = copy.deepcopy(INDEPENDENT)
    shared["workers"]["b"] = {"reads": ["/b"], "writes": ["/a/-"]}  # appends where a appends
    assert ("a", "b") in conflicting_workers(compile_blueprint(shared))
    bounded = copy.deepcopy(INDEPENDENT)
    bounded["retention"] = [{"path": "/a", "keep_last": 2}]  # the system worker edits a's array
    assert conflicting_workers(compile_blueprint(bounded)) == [("a", "retention:/a")]


async def run(bp: dict[str, Any], **kw: Any) -> tuple[Runner, Any, list[Any]]:
    store = await open_store("memory://")
    board = await create_board(store, bp)
    in_flight: list[str] = []
    peak: list[int] = [0]
    overlaps: list[frozenset[str]] = []  # the workers in flight whenever one starts

    def make(name: str) -> Any:
        async def propose(view: Any) -> Any:
            in_flight.append(name)
            peak[0] = max(peak[0], len(in_flight))
            overlaps.append(frozenset(in_flight))
            for _ in range(3):  # yield so that other invocations in flight can start
                await asyncio.sleep(0)
            in_flight.remove(name)
            return [{"op": "add", "path": f"/{name}/-", "value": "x"}]

        return propose

    runner = Runner(store, board, functions={w: make(w) for w in ("a", "b", "c")}, **kw)
    result = await runner.run()
    records = await store.read_records(board)
    await store.close()
    return runner, (result, peak[0], overlaps), records


async def test_auto_runs_independent_workers_at_once_and_loses_nothing() -> None:
    runner, (result, peak, _), records = await run(INDEPENDENT)  # "auto" is the default
    assert runner.parallel == 3 and peak > 1
    assert result.end_reason == "agenda_empty"
    assert result.state == {"a": ["x"] * 3, "b": ["x"] * 3, "c": ["x"] * 3}
    assert not any(r.stage == "stale" for r in records)


async def test_auto_never_overlaps_workers_that_may_conflict() -> None:
    bp = copy.deepcopy(INDEPENDENT)
    bp["workers"]["c"] = {"reads": ["/**"], "writes": ["/c/-"]}  # reads what a and b write
    assert conflict_map(compile_blueprint(bp))["c"] == {"a", "b", "c"}
    runner, (result, peak, overlaps), records = await run(bp)
    assert runner.parallel == 3 and peak == 2  # a and b together, never c with either
    assert all(len(o) == 1 for o in overlaps if "c" in o)
    assert result.state == {"a": ["x"] * 3, "b": ["x"] * 3, "c": ["x"] * 3}
    assert not any(r.stage == "stale" for r in records)


async def test_auto_is_sequential_when_every_worker_may_conflict() -> None:
    bp = copy.deepcopy(INDEPENDENT)
    bp["workers"] = {w: {"reads": ["/**"], "writes": [f"/{w}/-"]} for w in ("a", "b", "c")}
    runner, (result, peak, _), _ = await run(bp)
    assert runner.parallel == 1 and peak == 1
    assert result.state == {"a": ["x"] * 3, "b": ["x"] * 3, "c": ["x"] * 3}


async def test_an_explicit_parallel_1_is_sequential_even_for_independent_workers() -> None:
    runner, (result, peak, _), _ = await run(INDEPENDENT, parallel=1)
    assert runner.parallel == 1 and peak == 1
    assert result.state == {"a": ["x"] * 3, "b": ["x"] * 3, "c": ["x"] * 3}


def test_parallel_must_be_positive_or_auto() -> None:
    with pytest.raises(ValueError, match="'auto'"):
        Runner(None, "b", parallel=0)  # type: ignore[arg-type]
