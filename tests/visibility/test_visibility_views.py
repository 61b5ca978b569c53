"""Views and visibility on entries: a worker's view of a board is byte for byte its view of the
same board without the entries hidden from it, on every path (data, summaries, handles and their
counts, expansion, the triggering event, pinned paths, the view cache, an LLM worker's reply
schema), so no rendered view contains a hidden entry's content or key, and the view hash
changes when, and only when, what the worker may see changes."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from visibility_kit import WORKERS, blueprint_data, make_bp, note, submit

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel
from slateboard.kernel.visibility import Visibility
from slateboard.models import ScriptedModel
from slateboard.views import ViewCache, build_view, kernel_view
from slateboard.workers.llm import LLMWorker

BP = make_bp()
assert BP.visibility is not None
VIS: Visibility = BP.visibility
COLL = VIS.collections[0]
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
NAMES = ["alice", "bob", "carol", "dave", "reviewers", "*"]

# Keys q0..q9 and texts CONTENT-qN: strings that appear nowhere else in a view.
entries = st.dictionaries(
    st.integers(0, 9).map(lambda i: f"q{i}"),
    st.tuples(
        st.integers(0, 200),
        st.none() | st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        st.lists(st.sampled_from(["t1", "t2"]), max_size=3),
    ),
    max_size=8,
).map(
    lambda d: {
        k: {"text": f"CONTENT-{k} " + "x" * n, "tags": tags, **({} if to is None else {"visible_to": to})}
        for k, (n, to, tags) in d.items()
    }
)


def board(notes: dict[str, Any]) -> Any:
    state = BP.initial_state()
    state["notes"] = copy.deepcopy(notes)
    state["log"] = ["l1", "l2"]
    return state


def hidden_from(worker: str, notes: dict[str, Any]) -> set[str]:
    return {k for k, v in notes.items() if not VIS.sees(worker, v, COLL)}


@SETTINGS
@given(
    notes=entries,
    worker=st.sampled_from(WORKERS),
    budget=st.sampled_from([64, 150, 300, 600, 1200, 4000]),
    expand=st.lists(st.integers(0, 10).map(lambda i: f"/notes#q{i}"), max_size=3),
    event_key=st.integers(0, 10),
)
def test_a_view_is_the_view_of_the_board_without_the_hidden_entries(
    notes: dict[str, Any], worker: str, budget: int, expand: list[str], event_key: int
) -> None:
    hidden = hidden_from(worker, notes)
    without = {k: v for k, v in notes.items() if k not in hidden}
    event = {"op": "add", "path": f"/notes/q{event_key}", "version": 3}
    real = build_view(BP, worker, board(notes), 3, budget=budget, expand=expand, event=event)
    absent = build_view(BP, worker, board(without), 3, budget=budget, expand=expand, event=event)
    assert real.render() == absent.render() and real.hash == absent.hash
    shown = real.to_json()
    shown.pop("notes")  # they echo the worker's own expansion requests, whatever they name
    text = json.dumps(shown)
    for k in hidden:
        assert f"CONTENT-{k}" not in text and k not in text, (k, text)
    if event_key and f"q{event_key}" in hidden:
        assert real.event is None  # the triggering event does not name a hidden entry


def test_counts_summaries_and_expansion_show_only_visible_entries() -> None:
    notes = {
        f"q{i}": {"text": f"CONTENT-q{i} " + "x" * 60, **({"visible_to": ["carol"]} if i % 3 else {})} for i in range(9)
    }
    counts: dict[str, set[int | None]] = {"dave": set(), "carol": set()}
    for worker, found in counts.items():
        for budget in range(150, 400, 10):  # small budgets: /notes is summarised by a handle
            handle = build_view(BP, worker, board(notes), 1, budget=budget).handle("#notes")
            if handle is not None:
                found.add(handle.items)
    assert counts == {"dave": {3}, "carol": {9}}  # q0, q3, q6 for dave: the hidden six are not counted
    view = build_view(BP, "dave", board(notes), 1, budget=1200, expand=["/notes#q1", "/notes#nothing"])
    # expanding a hidden entry's handle answers exactly as expanding one that does not exist
    assert list(view.notes) == [
        'expand "/notes#q1" ignored: no such handle inside the read contract',
        'expand "/notes#nothing" ignored: no such handle inside the read contract',
    ]
    assert "CONTENT-q1" not in view.render()


def test_the_view_hash_changes_only_when_what_the_worker_sees_changes() -> None:
    k = Kernel(BP)
    hashes = {w: kernel_view(k, w).hash for w in WORKERS}
    assert submit(k, "bob", note("s", "CONTENT-s", ["carol"])).accepted
    after = {w: kernel_view(k, w).hash for w in WORKERS}
    assert [w for w in WORKERS if after[w] != hashes[w]] == ["carol"]
    # bob, who does not see it, cannot widen it (as if it did not exist); carol, who sees it
    # and may address anyone, shows it to dave too; alice still does not see it
    widen = [{"op": "add", "path": "/notes/s/visible_to/-", "value": "dave"}]
    assert submit(k, "bob", widen).reason == "op 0 (add '/notes/s/visible_to/-'): path '/notes/s' does not exist"
    assert submit(k, "carol", widen).accepted
    again = {w: kernel_view(k, w).hash for w in WORKERS}
    assert [w for w in WORKERS if again[w] != after[w]] == ["carol", "dave"]
    assert "CONTENT-s" in kernel_view(k, "dave").render() and "CONTENT-s" not in kernel_view(k, "alice").render()


def test_pinned_paths_are_cut_too() -> None:
    data = blueprint_data()
    data["workers"]["carol"]["pinned"] = ["/notes"]
    data["workers"]["dave"]["reads"] = ["/notes", "/log"]
    data["workers"]["dave"]["pinned"] = ["/notes"]
    bp = compile_blueprint(data)
    state = board({"h": {"text": "CONTENT-h", "visible_to": ["carol"]}, "v": {"text": "CONTENT-v"}})
    dave = build_view(bp, "dave", state, 1, budget=64)
    assert dave.data["/notes"] == {"v": {"text": "CONTENT-v"}}
    assert "CONTENT-h" in build_view(bp, "carol", state, 1, budget=64).render()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["bob", "carol"]),
            st.integers(0, 4),
            st.sampled_from(["add", "widen", "narrow", "edit", "remove"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_view_cache_changes_no_view_as_entries_come_and_go_and_change_audience(
    steps: list[tuple[str, int, str]],
) -> None:
    k = Kernel(BP)
    caches = {w: ViewCache() for w in WORKERS}
    for author, i, what in steps:
        key = f"/notes/q{i}"
        patch = {
            "add": note(f"q{i}", f"CONTENT-q{i} " + "y" * 40 * i, ["carol"]),
            "widen": [{"op": "add", "path": f"{key}/visible_to/-", "value": "dave"}],
            "narrow": [{"op": "replace", "path": f"{key}/visible_to", "value": ["bob"]}],
            "edit": [{"op": "add", "path": f"{key}/tags/-", "value": "t"}],
            "remove": [{"op": "remove", "path": key}],
        }[what]
        d = submit(k, author, patch)
        for w, cache in caches.items():
            if d.accepted:
                cache.changed(d.events, k.version)
            for budget in (150, 2000):
                cached = build_view(BP, w, k.state, k.version, budget=budget, cache=cache)
                plain = build_view(BP, w, k.state, k.version, budget=budget)
                assert cached.render() == plain.render()


def test_an_llm_workers_reply_schema_names_no_hidden_key() -> None:
    state = board({"qsecret": {"text": "CONTENT", "visible_to": ["carol"]}, "qopen": {"text": "open"}})
    schemas = {}
    for w in ("bob", "carol"):
        worker = LLMWorker(BP, w, ScriptedModel(["{}"]), state=lambda: state)
        schema, used = worker.patch_schema(build_view(BP, w, state, 0))
        assert used == "contract"
        schemas[w] = json.dumps(schema)
    assert "qopen" in schemas["bob"] and "qsecret" not in schemas["bob"]
    assert "qsecret" in schemas["carol"]
