"""A ViewCache never changes a view (issue 14).

``build_view(..., cache=...)`` reuses sizes, names and handles kept from earlier builds of the
same board, forgetting what each committed change may have touched. These tests pin that it is
a pure optimisation: after every commit of random patches (add, replace, remove, move, copy in
objects and arrays, nested, several ops per patch), the view built with a long-lived cache is
byte-identical (text, hash, handles) to a fresh build without one, for several workers (whole
board, wildcard fields, deep patterns, pins and windows), budgets, events and expansions.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from views_testkit import Boards

from slateboard.blueprint import compile_blueprint
from slateboard.kernel.canonical import JSON
from slateboard.kernel.kernel import Event, Kernel, Proposal
from slateboard.views import Handle, ViewCache, _cache, build_view, parse_expand_request
from slateboard.views._cache import _ListHint, _ListMemo, facts
from slateboard.views._measure import Meter

WORKERS: dict[str, dict[str, Any]] = {
    "all": {"reads": ["/**"]},
    "some": {"reads": ["/a", "/b/*/x", "/c/**"]},
    "ids": {"reads": ["/a/*/id", "/a/*/t", "/b", "/d/*"]},
    "pinned": {"reads": ["/a", "/b", "/c"], "pinned": ["/b"], "windows": {"/a": 2}},
}
BUDGETS = (150, 400, 1200)


def _blueprint() -> Any:
    workers: dict[str, Any] = {name: {**spec, "writes": ["/x"], "view_budget": 500} for name, spec in WORKERS.items()}
    workers["writer"] = {
        "reads": ["/**"],  # move/copy read their from (issue 29)
        "writes": ["/**"],
        "ops": ["add", "remove", "replace", "move", "copy", "test"],
    }
    return compile_blueprint({"schema": {}, "initial_state": {}, "workers": workers})


BP = _blueprint()

BOARDS = Boards()
keys, scalars, initial = BOARDS.keys, BOARDS.scalars, BOARDS.initial
_op = BOARDS.op


def _same(cache: ViewCache, state: JSON, version: int, worker: str, budget: int, **kw: Any) -> Any:
    cached = build_view(BP, worker, state, version, budget=budget, cache=cache, **kw)
    fresh = build_view(BP, worker, state, version, budget=budget, **kw)
    assert cached.text == fresh.text
    assert cached.hash == fresh.hash
    assert cached.handles == fresh.handles
    assert cached.level == fresh.level
    return cached


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial, st.data())
def test_views_with_a_kept_cache_equal_fresh_builds_after_every_commit(
    state: dict[str, Any], data: st.DataObject
) -> None:
    kernel = Kernel(BP, state=state)
    caches = {(w, b): ViewCache() for w in WORKERS for b in BUDGETS}
    asked: dict[tuple[str, int], tuple[str, ...]] = {}
    event: JSON = None
    for step in range(data.draw(st.integers(1, 14))):
        for (worker, budget), cache in caches.items():
            view = _same(
                cache, kernel.state, kernel.version, worker, budget, event=event, expand=asked.get((worker, budget), ())
            )
            if view.handles and data.draw(st.booleans()):
                picks = data.draw(st.lists(st.sampled_from(view.handles), max_size=2))
                asked[(worker, budget)] = parse_expand_request({"expand": [h.handle for h in picks]})
            else:
                asked.pop((worker, budget), None)
        patch = [_op(data, kernel.state) for _ in range(data.draw(st.integers(1, 3)))]
        decision = kernel.submit(Proposal("writer", patch))
        if decision.accepted:
            for cache in caches.values():
                cache.changed(decision.events, kernel.version)
            event = decision.events[0].to_json() if decision.events else None
        elif step % 3 == 0:
            event = {"op": "add", "path": "/a/0", "version": kernel.version}
    for (worker, budget), cache in caches.items():
        _same(cache, kernel.state, kernel.version, worker, budget, event=event)


def _peers_blueprint(extra: dict[str, Any] | None = None) -> Any:
    """The peers workload's board: three workers reading one growing list of entries (plus ``extra``)."""
    workers: dict[str, Any] = {
        w: {"reads": ["/task", "/entries"], "writes": ["/entries/-"], "view_budget": 4000}
        for w in ("alpha", "beta", "gamma")
    }
    return compile_blueprint(
        {"schema": {}, "initial_state": {"task": "t", "entries": []}, "workers": workers | (extra or {})}
    )


def test_a_growing_board_reuses_what_it_measured_and_stays_identical() -> None:
    """The peers workload: an entry appended per step, three workers, one cache per board."""
    bp = _peers_blueprint()
    kernel = Kernel(bp)
    cache = ViewCache()
    for i in range(400):
        worker = ("alpha", "beta", "gamma")[i % 3]
        entry = {"author": worker, "content": f"{i} " + "word " * 40}
        decision = kernel.submit(Proposal(worker, [{"op": "add", "path": "/entries/-", "value": entry}]))
        cache.changed(decision.events, kernel.version)
        event = decision.events[0].to_json()
        for budget in (None, 100_000):
            kept = build_view(bp, worker, kernel.state, kernel.version, event=event, budget=budget, cache=cache)
            fresh = build_view(bp, worker, kernel.state, kernel.version, event=event, budget=budget)
            assert (kept.text, kept.hash, kept.handles) == (fresh.text, fresh.hash, fresh.handles)
    scope = cache.scope("alpha", bp.workers["alpha"], 100_000, kernel.version)
    assert scope.lists[("entries",)].facts  # the entries' sizes were kept, not measured again


def test_the_cache_forgets_what_a_change_touched() -> None:
    cache = ViewCache()
    scope = cache.scope("w", object(), 100, 1)
    for p in (("a",), ("a", "3", "l"), ("b",)):
        memo = scope.list_memo(p)
        for i in range(6):
            memo.put_name(i, f"n{i}")
            memo.put_range((i, i + 1, 48), i)
        memo.put_range((0, 6, 48), 9)  # it names 0, 1, 5
        memo.put_range((2, 6, 48), 9)  # and this one 2, 3, 5
        memo.hi = 5
    cache.changed([Event("replace", "/a/1/x", ("a", "1", "x"), "set")], 2)
    a = scope.lists[("a",)]
    assert sorted(a.names) == [0, 2, 3, 4, 5]  # member 1 changed
    assert sorted(a.ranges) == [(0, 1, 48), (2, 3, 48), (2, 6, 48), (3, 4, 48), (4, 5, 48), (5, 6, 48)]
    assert ("a", "3", "l") in scope.lists  # another member's array: untouched
    cache.changed([Event("add", "/a/2", ("a", "2"), "insert")], 3)
    assert sorted(a.names) == [0]  # members from 2 on moved
    assert sorted(a.ranges) == [(0, 1, 48)]
    assert ("a", "3", "l") not in scope.lists  # it moved to /a/4/l
    cache.changed([Event("remove", "/b/9", ("b", "9"), "delete")], 4)
    assert sorted(scope.lists[("b",)].names) == [0, 1, 2, 3, 4, 5]  # past the last kept member
    cache.changed([Event("replace", "/b", ("b",), "set")], 5)
    assert ("b",) not in scope.lists
    cache.changed([Event("replace", "", (), "root")], 6)
    assert cache.scope("w", scope.contract, 100, 6) is not scope
    # a version it was not told about: everything is forgotten
    kept = cache.scope("w", scope.contract, 100, 6)
    kept.list_memo(("a",)).put_name(0, "n")
    assert cache.scope("w", scope.contract, 100, 8) is not kept


@pytest.mark.parametrize("budget", [2, 40, 4000])
def test_without_a_readable_array_the_cache_is_harmless(budget: int) -> None:
    kernel = Kernel(BP, state={"a": [], "b": {"x": {"x": 1}}, "c": "s" * 50, "d": []})
    cache = ViewCache()
    for worker in WORKERS:
        _same(cache, kernel.state, kernel.version, worker, budget)
        _same(cache, kernel.state, kernel.version, worker, budget)


@pytest.mark.parametrize(
    "patch",
    [
        [{"op": "replace", "path": "/a/0/id", "value": "new"}],  # the first member a range names
        [{"op": "replace", "path": "/a/1", "value": {"id": "new", "t": "x"}}],  # the second
        [{"op": "replace", "path": "/a/21/id", "value": "new"}],  # the last
        [{"op": "remove", "path": "/a/0"}],
        [{"op": "add", "path": "/a/3", "value": {"id": "new", "t": "x"}}],
        [{"op": "move", "from": "/a/29", "path": "/a/0"}],
        [{"op": "add", "path": "/a/-", "value": {"id": "new", "t": "x"}}],
        [{"op": "replace", "path": "/a/25/t", "value": "y" * 80}],
        [{"op": "replace", "path": "/a", "value": [{"id": "new", "t": "x"}] * 40}],
    ],
)
def test_a_change_to_a_member_a_handle_names_shows_at_once(patch: list[dict[str, JSON]]) -> None:
    kernel = Kernel(BP, state={"a": [{"id": f"i{i}", "t": "x" * 20} for i in range(30)], "b": {}, "c": 1, "d": []})
    cache = ViewCache()
    before = _same(cache, kernel.state, kernel.version, "all", 600)
    assert any(h.summary == "i0 … i21" for h in before.handles)  # a range naming /a/0, /a/1 and /a/21
    decision = kernel.submit(Proposal("writer", patch))
    assert decision.accepted
    cache.changed(decision.events, kernel.version)
    _same(cache, kernel.state, kernel.version, "all", 600)


flat_values = st.lists(
    scalars
    | st.lists(scalars, max_size=4)
    | st.dictionaries(keys, scalars | st.lists(scalars, max_size=2), max_size=3),
    max_size=6,
) | st.dictionaries(keys, scalars | st.lists(scalars, max_size=3), max_size=4)


@settings(max_examples=300, deadline=None)
@given(flat_values, st.lists(st.integers(0, 160), min_size=1, max_size=4), st.integers(0, 40), st.integers(1, 200))
def test_meter_hints_give_the_sizes_and_work_of_the_walk(value: JSON, limits: list[int], cap: int, bound: int) -> None:
    """A meter told the kept facts measures exactly as one that walks: the same sizes and the
    same work count after every call, so the work cap trips at the same place."""
    plain, told = Meter(cap), Meter(cap)
    memo = _ListMemo()
    if isinstance(value, list):
        hint = told.hints[id(value)] = _ListHint(memo, bound, told.hints)
        told.walks[id(value)] = hint.walk
    else:
        told.hints[id(value)] = facts(value, bound)
    for limit in limits:
        got, want = told.size(value, limit), plain.size(value, limit)
        assert (got <= limit) == (want <= limit)
        if want <= limit:
            assert got == want
        assert told.work == plain.work
        assert told.flat == plain.flat


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial, st.data())
def test_one_cache_shared_by_a_board_s_workers_equals_fresh_builds(state: dict[str, Any], data: st.DataObject) -> None:
    """One ViewCache per board, as the step engine keeps it: every worker (different contracts,
    windows, pins) builds from it in a random order and at a random budget per step, sharing
    the members' sizes and pointer sizes it keeps, and every view equals a fresh build."""
    kernel = Kernel(BP, state=state)
    cache = ViewCache()
    for _ in range(data.draw(st.integers(1, 10))):
        for worker in data.draw(st.permutations(list(WORKERS))):
            _same(cache, kernel.state, kernel.version, worker, data.draw(st.sampled_from(BUDGETS)))
        patch = [_op(data, kernel.state) for _ in range(data.draw(st.integers(1, 3)))]
        decision = kernel.submit(Proposal("writer", patch))
        if decision.accepted:
            cache.changed(decision.events, kernel.version)
    for worker in WORKERS:
        _same(cache, kernel.state, kernel.version, worker, BUDGETS[-1])


def _peers() -> tuple[Any, Kernel, ViewCache]:
    """The service benchmark's board: three workers reading one growing list of entries."""
    bp = _peers_blueprint({"editor": {"reads": ["/**"], "writes": ["/**"], "ops": ["add", "replace"]}})
    kernel, cache = Kernel(bp), ViewCache()
    for i in range(12):
        worker = ("alpha", "beta", "gamma")[i % 3]
        entry = {"author": worker, "content": f"{i} " + "word " * 40, "tags": ["a", "b"]}
        decision = kernel.submit(Proposal(worker, [{"op": "add", "path": "/entries/-", "value": entry}]))
        cache.changed(decision.events, kernel.version)
        for w in ("alpha", "beta", "gamma"):
            build_view(bp, w, kernel.state, kernel.version, budget=100_000, cache=cache)
    return bp, kernel, cache


def test_a_board_s_workers_share_one_memo_of_the_sizes_they_measured() -> None:
    """The sizes of the same members do not depend on the worker: kept once per board, not
    once per worker (each worker keeps only its own names and handles)."""
    bp, kernel, cache = _peers()
    scopes = [cache.scope(w, bp.workers[w], 100_000, kernel.version) for w in ("alpha", "beta", "gamma")]
    memos = [scope.lists[("entries",)] for scope in scopes]
    assert memos[0].facts and memos[0].prefix
    assert memos[0].facts is memos[1].facts is memos[2].facts
    assert memos[0].prefix is memos[1].prefix is memos[2].prefix
    assert scopes[0].pointer_sizes is scopes[1].pointer_sizes is scopes[2].pointer_sizes
    # a change forgets the shared sizes of the member it touched, for every worker
    patch: list[dict[str, JSON]] = [{"op": "replace", "path": "/entries/3/content", "value": "new"}]
    decision = kernel.submit(Proposal("editor", patch))
    assert decision.accepted
    cache.changed(decision.events, kernel.version)
    assert sorted(memos[0].facts) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11]
    assert len(memos[0].prefix) == 3
    for w in ("alpha", "beta", "gamma"):
        _same_view(bp, cache, kernel, w)


def _same_view(bp: Any, cache: ViewCache, kernel: Kernel, worker: str) -> None:
    kept = build_view(bp, worker, kernel.state, kernel.version, budget=100_000, cache=cache)
    fresh = build_view(bp, worker, kernel.state, kernel.version, budget=100_000)
    assert (kept.text, kept.hash, kept.handles) == (fresh.text, fresh.hash, fresh.handles)


def test_kept_sizes_are_flat_tuples_the_collector_stops_tracking() -> None:
    """A long board keeps a few facts per step for as long as it lives: they must not be
    objects the garbage collector scans at every collection of the older generations."""
    _, _, cache = _peers()
    scope = next(iter(cache._scopes.values()))
    kept = list(scope.lists[("entries",)].facts.values())
    assert len(kept) == 12
    gc.collect()
    assert not any(gc.is_tracked(known) for known in kept)
    assert all(type(known) is tuple for known in kept)


def test_a_memo_keeps_no_tables_until_it_writes_one() -> None:
    """A board keeps an array memo per worker and readable array for as long as it lives, and
    most never name a member or price a range (issue 41): their four tables are one shared,
    read-only empty mapping until written, and a write makes a table of that memo's own."""
    nothing: Any = getattr(_cache, "_NOTHING", None)
    bp, kernel, cache = _peers()
    memos = [cache.scope(w, bp.workers[w], 100_000, kernel.version).lists[("entries",)] for w in ("alpha", "beta")]
    for memo in (*memos, _ListMemo()):
        assert all(t is nothing for t in (memo.names, memo.items, memo.ranges, memo.rhandles))
        assert type(memo.names) is not dict
    with pytest.raises(TypeError):
        nothing[0] = "n"
    a, b = memos
    a.put_name(3, "n3")
    a.put_range((0, 4, 48), 17)
    a.put_rhandle((0, 4, 48), (Handle("/entries#[0:4]", "/entries", "[0:4]", items=4), 40))
    a.item_table(2)[48] = (Handle("/entries#2", "/entries", "2", path="/entries/2"), 30)
    assert (a.names, a.ranges, dict(a.items)[2][48][1]) == ({3: "n3"}, {(0, 4, 48): 17}, 30)
    assert all(type(t) is dict for t in (a.names, a.items, a.ranges, a.rhandles))
    assert all(t is nothing for t in (b.names, b.items, b.ranges, b.rhandles)) and not nothing
    a.hi = 4
    a.drop_member(3)
    b.drop_member(3)  # nothing written: nothing to drop, still shared
    assert not a.names and not a.ranges and not a.rhandles and 2 in a.items
    assert b.names is nothing
    a.drop_from(0)
    assert not a.items
