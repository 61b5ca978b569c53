"""The optimised view builder equals the frozen reference copy of it (issue 14).

``tests/_views_reference`` is a test-only copy of ``slateboard.views`` as it was before the
issue-14 fill and teardown work. This differential test builds views with both on random
states, budgets, workers (whole board, wildcard reads, deep patterns, pins and windows), events,
recent paths, expansions and rejections, with and without a long-lived ViewCache, after every
commit of random patches, and asserts the views are byte-identical (text, hash, handles, level).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _views_reference as ref
from slateboard.blueprint import compile_blueprint
from slateboard.kernel import GENESIS, Kernel, Proposal, Record, Usage
from slateboard.kernel.canonical import JSON
from slateboard.kernel.pointer import format_pointer
from slateboard.views import ViewCache, build_view, parse_expand_request
from views_testkit import Boards, nodes

WORKERS: dict[str, dict[str, Any]] = {
    "all": {"reads": ["/**"]},
    "some": {"reads": ["/a", "/b/*/x", "/c/**"]},
    "ids": {"reads": ["/a/*/id", "/a/*/t", "/b", "/d/*"]},
    "deep": {"reads": ["/a/*/t", "/c/*/*", "/d/**"]},
    "pinned": {"reads": ["/a", "/b", "/c"], "pinned": ["/b"], "windows": {"/a": 2}},
}
BUDGETS = (60, 150, 400, 1200, 5000)
SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "array", "items": {"required": ["id", "t"]}},
        "b": {"type": "object", "required": ["x", "y"]},
    },
}


def _blueprint() -> Any:
    workers: dict[str, Any] = {
        name: {**spec, "writes": ["/x", "/a/-"], "view_budget": 500} for name, spec in WORKERS.items()
    }
    workers["writer"] = {"reads": [], "writes": ["/**"], "ops": ["add", "remove", "replace", "move", "copy", "test"]}
    return compile_blueprint({"schema": SCHEMA, "initial_state": {}, "workers": workers})


BP = _blueprint()
REF_BP = BP  # the reference package takes the same compiled blueprint

BOARDS = Boards(
    key_names=("id", "t", "x", "y", "0", "é", "a~/b"),
    alphabet='ab\u00e9"\\/\n~ ',
    text_size=40,
    int_max=5000,
    width=5,
    leaves=14,
    a_size=(0, 40),
    b_size=20,
    focus_a=False,
    kinds=("add", "append", "append", "replace", "remove", "move", "copy"),
)
texts, initial = BOARDS.texts, BOARDS.initial
_nodes, _op = nodes, BOARDS.op


def _pointer(data: st.DataObject, state: JSON) -> str:
    return format_pointer(data.draw(st.sampled_from([t for t, _ in _nodes(state)])))


def _same(state: JSON, version: int, worker: str, budget: int, cache: ViewCache | None, **kw: Any) -> Any:
    new = build_view(BP, worker, state, version, budget=budget, cache=cache, **kw)
    old = ref.build_view(REF_BP, worker, state, version, budget=budget, **kw)
    assert new.text == old.text
    assert new.hash == old.hash
    assert [h.to_json() for h in new.handles] == [h.to_json() for h in old.handles]
    assert new.level == old.level
    assert new.size == old.size
    return new


def _rejections(data: st.DataObject) -> list[Record]:
    out = []
    for seq in range(data.draw(st.integers(0, 4))):
        outcome = data.draw(st.sampled_from(["rejected", "rejected", "committed"]))
        out.append(
            Record(
                seq=seq + 1,
                kind="proposal",
                outcome=outcome,
                worker=data.draw(st.sampled_from(list(WORKERS))),
                invocation=None,
                event=None,
                view_hash=None,
                patch=data.draw(texts),
                stage="schema" if outcome == "rejected" else None,
                reason=data.draw(texts) if outcome == "rejected" else None,
                version=0,
                state_before=GENESIS,
                state_after=GENESIS,
                usage=Usage(),
                prev=GENESIS,
            )
        )
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial, st.data())
def test_views_equal_the_reference_builder(state: dict[str, Any], data: st.DataObject) -> None:
    kernel = Kernel(BP, state=state)
    workers = data.draw(st.lists(st.sampled_from(list(WORKERS)), min_size=1, max_size=3, unique=True))
    budgets = data.draw(st.lists(st.sampled_from(BUDGETS), min_size=1, max_size=2, unique=True))
    caches = {(w, b): ViewCache() for w in workers for b in budgets}
    asked: dict[tuple[str, int], tuple[str, ...]] = {}
    event: JSON = None
    for _ in range(data.draw(st.integers(1, 6))):
        recent = [_pointer(data, kernel.state) for _ in range(data.draw(st.integers(0, 2)))]
        rejections = _rejections(data)
        for (worker, budget), cache in caches.items():
            kw: dict[str, Any] = {"event": event, "expand": asked.get((worker, budget), ())}
            kw.update(recent=recent, rejections=rejections)
            view = _same(kernel.state, kernel.version, worker, budget, cache, **kw)
            _same(kernel.state, kernel.version, worker, budget, None, **kw)
            if view.handles and data.draw(st.booleans()):
                picks = data.draw(st.lists(st.sampled_from(view.handles), max_size=3))
                extra = [data.draw(st.sampled_from(["/a#[0:2]", "/b#x", "/nope#1", "/a#i3"]))]
                asked[(worker, budget)] = parse_expand_request({"expand": [h.handle for h in picks] + extra})
            else:
                asked.pop((worker, budget), None)
        patch = [_op(data, kernel.state) for _ in range(data.draw(st.integers(1, 3)))]
        decision = kernel.submit(Proposal("writer", patch))
        if decision.accepted:
            for cache in caches.values():
                cache.changed(decision.events, kernel.version)
            event = decision.events[0].to_json() if decision.events else None
        else:
            event = {"op": "add", "path": _pointer(data, kernel.state), "version": kernel.version}


def test_a_growing_board_equals_the_reference_builder() -> None:
    """The peers/Team workload: an entry appended per step, three workers, small and large budgets."""
    bp = compile_blueprint(
        {
            "schema": {},
            "initial_state": {"task": "t", "entries": []},
            "workers": {
                w: {"reads": ["/task", "/entries"], "writes": ["/entries/-"], "view_budget": 4000}
                for w in ("alpha", "beta", "gamma")
            },
        }
    )
    kernel = Kernel(bp)
    cache = ViewCache()
    for i in range(300):
        worker = ("alpha", "beta", "gamma")[i % 3]
        entry = {"author": worker, "content": f"{i} " + "word " * 40}
        decision = kernel.submit(Proposal(worker, [{"op": "add", "path": "/entries/-", "value": entry}]))
        cache.changed(decision.events, kernel.version)
        event = decision.events[0].to_json()
        for budget in (4000, 100_000):
            new = build_view(bp, worker, kernel.state, kernel.version, event=event, budget=budget, cache=cache)
            old = ref.build_view(bp, worker, kernel.state, kernel.version, event=event, budget=budget)
            assert (new.text, new.hash, new.level) == (old.text, old.hash, old.level)
            assert [h.to_json() for h in new.handles] == [h.to_json() for h in old.handles]
