"""Budgeted context views: read contract, budget, handles, expansion, determinism, feedback."""

from __future__ import annotations

import copy
import gc
import hashlib
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import slateboard.views._build as views_build
from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.errors import UsageError
from slateboard.kernel import GENESIS, Kernel, Proposal, Record, Usage
from slateboard.kernel.canonical import canonical_str
from slateboard.kernel.pointer import MISSING, Pattern, Tokens, escape_token, parse_pointer, region_contains, resolve
from slateboard.kernel.record import Outcome
from slateboard.views import Handle, View, ViewCache, build_view, kernel_view, parse_expand_request
from slateboard.views._build import MAX_EXPAND, MAX_REJECTIONS, UnknownWorker, ViewBudgetError, visible_pointers


@pytest.fixture(autouse=True)
def strict_accounting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every build in these tests also checks that the predicted size equals the rendered one."""
    monkeypatch.setattr(views_build, "_STRICT", True)


STATUS = {"enum": ["open", "supported", "refuted"]}
SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "text"],
                "properties": {
                    "id": {"type": "string"},
                    "text": {"type": "string"},
                    "status": STATUS,
                    "notes": {"type": "string"},
                },
            },
        },
        "evidence": {"type": "object", "additionalProperties": {"type": "string"}},
        "secret": {"type": "string"},
    },
}


def make_bp(budget: int = 4000) -> CompiledBlueprint:
    return compile_blueprint(
        {
            "schema": SCHEMA,
            "initial_state": {"query": "", "claims": []},
            "workers": {
                "verifier": {
                    "reads": ["/query", "/claims/*/id", "/claims/*/text", "/evidence/**"],
                    "writes": ["/claims/*/status"],
                    "view_budget": budget,
                },
                "texts": {"reads": ["/claims/*/text"], "writes": ["/claims/-"], "view_budget": budget},
                "all": {"reads": ["/**"], "writes": ["/claims/-", "/query"], "view_budget": budget},
                "blind": {"reads": [], "writes": ["/query"], "view_budget": budget},
            },
        }
    )


BP = make_bp()


def claim(i: int, text: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": f"c{i}", "text": text or f"claim {i}", "status": "open", "notes": f"SECRET-note-{i}", **extra}


def board(n: int = 3, text_len: int = 0) -> dict[str, Any]:
    return {
        "query": "Which river flows through Paris?",
        "claims": [claim(i, (f"text {i} " * (text_len // 7 + 1))[:text_len] if text_len else None) for i in range(n)],
        "evidence": {"e1": "The Seine flows through Paris.", "e2": "The Loire does not."},
        "secret": "SECRET-top",
    }


def reject(seq: int, worker: str, reason: str = "bad", patch: str = "[]", outcome: Outcome = "rejected") -> Record:
    return Record(
        seq=seq,
        kind="proposal",
        outcome=outcome,
        worker=worker,
        invocation=None,
        event=None,
        view_hash=None,
        patch=patch,
        stage="schema" if outcome == "rejected" else None,
        reason=reason if outcome == "rejected" else None,
        version=0,
        state_before=GENESIS,
        state_after=GENESIS,
        usage=Usage(),
        prev=GENESIS,
    )


def check_view(view: View, bp: CompiledBlueprint, state: Any) -> None:
    """The invariants every view must satisfy (contract, budget, exact values, hash)."""
    contract = bp.workers[view.worker]
    text = view.render()
    assert len(text) == view.size <= view.budget
    assert view.hash == hashlib.sha256(text.encode()).hexdigest()
    assert canonical_str(orjson.loads(text)) == text
    keys = [parse_pointer(k) for k in view.data]
    for k in keys:
        assert contract.may_read(k), f"{k} is outside the read contract"
        node = resolve(state, k)
        assert node is not MISSING
        assert canonical_str(node) == canonical_str(view.data["".join("/" + escape_token(t) for t in k)])
    for a in keys:
        for b in keys:
            assert a == b or b[: len(a)] != a, "data keys overlap"
    for ptr in visible_pointers(view):
        assert contract.may_read(parse_pointer(ptr))
    for h in view.handles:
        for where in (h.pointer, h.path):
            if where is not None:
                assert in_region(contract.reads, parse_pointer(where)), f"handle {h.handle} outside the region"


def in_region(reads: tuple[Pattern, ...], tokens: Tokens) -> bool:
    """True when ``tokens`` is readable or lies on the way to readable nodes."""
    for p in reads:
        pt = p.tokens[:-1] if p.deep else p.tokens
        if all(a == "*" or a == b for a, b in zip(pt, tokens, strict=False)):
            return True
    return False


# -- shape and contract ---------------------------------------------------------------------------
def test_small_state_is_shown_exactly_with_its_frame() -> None:
    state = board()
    view = build_view(BP, "verifier", state, 7)
    check_view(view, BP, state)
    assert view.version == 7 and view.handles == () and view.level == 0
    assert view.data == {
        "/query": "Which river flows through Paris?",
        "/claims/0/id": "c0",
        "/claims/0/text": "claim 0",
        "/claims/1/id": "c1",
        "/claims/1/text": "claim 1",
        "/claims/2/id": "c2",
        "/claims/2/text": "claim 2",
        "/evidence": {"e1": "The Seine flows through Paris.", "e2": "The Loire does not."},
    }
    # the schema fragment of a '*' pattern over an array is the item's member schema, not `true`
    assert view.writable == ({"path": "/claims/*/status", "ops": ["add", "replace", "test"], "schema": STATUS},)
    assert "SECRET" not in view.render()
    assert view.to_json()["data"] == view.data and view.to_json()["hash"] == view.hash


def test_a_view_holds_its_text_and_parses_its_members_when_read() -> None:
    """Issue 41: with many boards waiting on their models, a view's parsed members were what a
    waiting view held. A view holds its text (and handles); data, writable, event, rejections
    and notes are that text's members, parsed when read, and no parse stays with the view."""
    state = board(5, text_len=60)
    recs = [reject(1, "verifier", reason="nope")]
    view = build_view(BP, "verifier", state, 7, event={"op": "add", "path": "/claims/4"}, rejections=recs)
    held = gc.get_referents(view)
    assert not any(isinstance(o, (dict, list)) for o in held)
    assert [o for o in held if isinstance(o, tuple)] == [view.handles]
    shown = orjson.loads(view.text)
    assert view.rejections and view.event is not None
    assert view.data == shown["data"] and view.writable == tuple(shown["writable"])
    assert view.event == shown.get("event") and view.rejections == tuple(shown["rejections"])
    assert view.notes == tuple(shown.get("notes", ()))
    assert not any(isinstance(o, (dict, list)) for o in gc.get_referents(view))  # read, still not held
    # a value read is the view's own (parsed from its text), never the state's
    assert view.data["/evidence"] == state["evidence"] and view.data["/evidence"] is not state["evidence"]
    # another view read in between: each still reads as its text
    other = build_view(BP, "texts", state, 7)
    assert other.data == orjson.loads(other.text)["data"] and view.data == shown["data"]
    again = build_view(BP, "verifier", state, 7, event={"op": "add", "path": "/claims/4"}, rejections=recs)
    assert again == view and hash(again) == hash(view) and again.to_json() == view.to_json()
    assert view.to_json()["data"] is not view.data


def test_field_pattern_exposes_only_that_field() -> None:
    state = board()
    view = build_view(BP, "texts", state, 0)
    check_view(view, BP, state)
    assert view.data == {f"/claims/{i}/text": f"claim {i}" for i in range(3)}
    shown = canonical_str(view.data)
    for hidden in ("c0", "open", "SECRET", "query", "evidence"):
        assert hidden not in shown
    assert "SECRET" not in view.render() and "Paris" not in view.render()
    # an append pattern offers only the ops that can append, and the item schema
    (entry,) = view.writable
    assert entry["path"] == "/claims/-" and entry["ops"] == ["add"]
    assert entry["schema"] == SCHEMA["properties"]["claims"]["items"]  # type: ignore[index]


def test_whole_state_pattern_and_empty_contract() -> None:
    state = board()
    view = build_view(BP, "all", state, 0)
    check_view(view, BP, state)
    assert view.data == {"": state}
    blind = build_view(BP, "blind", state, 0)
    check_view(blind, BP, state)
    assert blind.data == {} and blind.handles == ()
    assert "SECRET" not in blind.render() and "Paris" not in blind.render()


def test_unknown_worker_and_bad_budget() -> None:
    with pytest.raises(KeyError, match="unknown worker"):
        build_view(BP, "nobody", board(), 0)
    with pytest.raises(ValueError, match="at least 2"):
        build_view(BP, "all", board(), 0, budget=1)


def test_view_errors_are_usage_errors_with_their_standard_bases() -> None:
    """Issue 12: the narrow classes are UsageErrors and keep KeyError/ValueError for old callers;
    an unknown worker's text is the message itself, not its repr (a plain KeyError quotes it)."""
    with pytest.raises(UnknownWorker) as unknown:
        build_view(BP, "nobody", board(), 0)
    assert isinstance(unknown.value, UsageError) and isinstance(unknown.value, KeyError)
    assert str(unknown.value).startswith("unknown worker 'nobody' (workers: ")
    with pytest.raises(ViewBudgetError) as small:
        build_view(BP, "all", board(), 0, budget=1)
    assert isinstance(small.value, UsageError) and isinstance(small.value, ValueError)


def test_no_secret_at_any_budget() -> None:
    state = board(40, text_len=90)
    for worker in ("verifier", "texts"):
        for budget in range(2, 4000, 61):
            view = build_view(BP, worker, state, 0, budget=budget)
            check_view(view, BP, state)
            assert "SECRET" not in view.render()
            if worker == "texts":
                assert '"c1' not in view.render()  # ids are not readable: handles use indices


# -- budget ------------------------------------------------------------------------------------------
def test_large_collection_is_summarised_newest_first() -> None:
    state = board(200, text_len=60)
    view = build_view(BP, "verifier", state, 3, budget=2000)
    check_view(view, BP, state)
    assert view.size <= 2000
    assert view.data["/query"] == state["query"]  # small active fields first
    assert "/claims/199/text" in view.data and "/claims/0/text" not in view.data  # newest first
    ranges = [h for h in view.handles if h.is_range]
    assert ranges and sum(h.items or 0 for h in ranges) + sum(1 for k in view.data if k.endswith("/text")) >= 200
    covered = {int(k.split("/")[2]) for k in view.data if k.startswith("/claims/")}
    for h in ranges:
        if h.pointer == "/claims":
            a, b = map(int, h.id.strip("[]").split(":"))
            assert not covered & set(range(a, b))
            assert h.summary == f"c{a} … c{b - 1}"


def test_big_items_become_item_handles_with_summaries() -> None:
    state = board(6, text_len=900)
    view = build_view(BP, "all", state, 0, budget=2500)
    check_view(view, BP, state)
    items = [h for h in view.handles if not h.is_range]
    assert items
    for h in items:
        assert h.handle == f"{h.pointer}#{h.id}" and h.path is not None and h.summary
        node = resolve(state, parse_pointer(h.path))
        if isinstance(node, str):
            assert h.summary.rstrip("…") == node[: len(h.summary.rstrip("…"))]


def test_tiny_budgets_never_overflow() -> None:
    state = board(30, text_len=200)
    recs = [reject(i, "verifier", reason="r" * 500, patch="p" * 900) for i in range(5)]
    event = {"op": "replace", "path": "/claims/3/status", "version": 9}
    for budget in [*range(2, 200), *range(200, 5000, 97)]:
        view = build_view(
            BP, "verifier", state, 0, budget=budget, rejections=recs, event=event, expand=["/claims#c1", "/x#1"]
        )
        check_view(view, BP, state)
    assert build_view(BP, "verifier", state, 0, budget=2).render() == "{}"


def test_degradation_keeps_the_newest_rejection_and_clips_with_a_marker() -> None:
    state = board(2)
    recs = [reject(i, "verifier", reason=f"reason {i} " + "x" * 900, patch="[" + "y" * 3000 + "]") for i in range(4)]
    big = build_view(BP, "verifier", state, 0, budget=100_000, rejections=recs)
    assert len(big.rejections) == MAX_REJECTIONS and big.level == 0
    assert [r["reason"][:8] for r in big.rejections] == ["reason 3", "reason 2", "reason 1"]
    assert all("…[+" in r["patch"] for r in big.rejections)
    small = build_view(BP, "verifier", state, 0, budget=700, rejections=recs)
    check_view(small, BP, state)
    assert small.level > 0 and len(small.rejections) == 1 and small.rejections[0]["reason"].startswith("reason 3")
    assert "…[+" in small.rejections[0]["reason"]


def test_tightened_budget_halves_the_view() -> None:
    bp = make_bp(budget=3000)
    state = board(100, text_len=50)
    normal = build_view(bp, "verifier", state, 0)
    tight = build_view(bp, "verifier", state, 0, budget=bp.workers["verifier"].spec.view_budget // 2)
    assert normal.budget == 3000 and normal.size <= 3000
    assert tight.budget == 1500 and tight.size <= 1500 and len(tight.data) < len(normal.data)


# -- handles and expansion -------------------------------------------------------------------------
def item_handle(view: View, path: str) -> str:
    for h in view.handles:
        if h.path == path:
            return h.handle
    raise AssertionError(f"no handle for {path} in {[h.handle for h in view.handles]}")


def claim_handles(state: Any) -> tuple[int, View]:
    """A budget at which some claims of ``state`` are summarised by item handles, and that view."""
    for budget in range(300, 3000, 50):
        view = build_view(BP, "verifier", state, 1, budget=budget)
        if any(h.pointer == "/claims" and not h.is_range for h in view.handles):
            return budget, view
    raise AssertionError("no budget gives claim item handles")


def test_handles_are_stable_across_versions() -> None:
    state = board(6, text_len=2000)
    budget, v1 = claim_handles(state)
    hs = [h for h in v1.handles if h.pointer == "/claims" and not h.is_range]
    for h in hs:
        assert h.handle == f"/claims#{h.id}" and h.id == resolve(state, parse_pointer(h.path or ""))["id"]
        assert h.size == f">{budget}" and h.items == 2 and h.summary and "SECRET" not in h.summary
    # another claim changes and one is appended: the same view, with the same handle strings
    state2 = copy.deepcopy(state)
    state2["claims"][0]["status"] = "refuted"
    again = build_view(BP, "verifier", state2, 2, budget=budget)
    assert [h.handle for h in again.handles] == [h.handle for h in v1.handles]
    # a claim is inserted at the front: indices shift, the id-based handles still name the same claims
    state3 = copy.deepcopy(state)
    state3["claims"].insert(0, claim(99, "new"))
    for h in hs:
        old = int((h.path or "").split("/")[2])
        paged = build_view(BP, "verifier", state3, 3, budget=4000, expand=[h.handle])
        check_view(paged, BP, state3)
        assert paged.notes == ()
        assert paged.data.get(f"/claims/{old + 1}/id") == h.id
    # without a readable id field, the index is the id
    texts_state = board(30, text_len=2000)
    for budget in range(300, 3000, 50):
        texts = build_view(BP, "texts", texts_state, 0, budget=budget)
        items = [h for h in texts.handles if h.pointer == "/claims" and not h.is_range]
        if items:
            assert all(h.handle == f"/claims#{h.path.split('/')[2]}" for h in items)  # type: ignore[union-attr]
            break
    else:
        raise AssertionError("no budget gives claim item handles to the texts worker")


def test_expansion_pages_an_item_in() -> None:
    state = board(50, text_len=120)
    first = build_view(BP, "verifier", state, 0, budget=1500)
    assert "/claims/5/text" not in first.data
    reply = {"patch": [], "expand": ["/claims#c5"]}
    second = build_view(BP, "verifier", state, 0, budget=1500, expand=parse_expand_request(reply))
    check_view(second, BP, state)
    assert second.data["/claims/5/text"] == state["claims"][5]["text"]
    assert second.data["/claims/5/id"] == "c5" and second.notes == ()
    assert second.hash != first.hash


def test_expansion_of_a_range_and_of_a_summarised_collection() -> None:
    state = board(60, text_len=40)
    first = build_view(BP, "verifier", state, 0, budget=1200)
    rng = next(h for h in first.handles if h.is_range and h.pointer == "/claims")
    _, b = map(int, rng.id.strip("[]").split(":"))
    assert f"/claims/{b - 1}/text" not in first.data
    second = build_view(BP, "verifier", state, 0, budget=1200, expand=[rng.handle])
    check_view(second, BP, state)
    assert second.notes == ()
    assert f"/claims/{b - 1}/text" in second.data  # the range pages in, newest first
    # a whole big readable object that became a handle pages in as far as the budget allows
    state2 = {"query": "q", "evidence": {f"e{i:03}": "x" * 50 for i in range(100)}}
    v1 = build_view(BP, "verifier", state2, 0, budget=600)
    check_view(v1, BP, state2)
    v2 = build_view(BP, "verifier", state2, 0, budget=600, expand=["/evidence#[50:60]"])
    check_view(v2, BP, state2)
    assert any(k.startswith("/evidence/e05") for k in v2.data)


def test_expansion_outside_the_contract_is_refused_and_noted() -> None:
    state = board(5)
    asked = ["#secret", "/claims/0#notes", "/claims#c1", "#nothing", "no-hash", "/claims#99", "/query#x"]
    view = build_view(BP, "texts", state, 0, expand=asked)
    check_view(view, BP, state)
    assert "SECRET" not in view.render()
    ignored = [n for n in view.notes if "ignored" in n]
    # "/claims#c1" does not resolve: ids are not readable by this worker, so items go by index
    assert len(ignored) == len(asked)
    # the note is the same whether the node exists ("#secret") or not ("#nothing")
    assert ignored[0].replace("#secret", "#X") == ignored[3].replace("#nothing", "#X")
    by_index = build_view(BP, "texts", state, 0, expand=["/claims#1"])
    assert by_index.notes == ()


def test_parse_expand_request() -> None:
    assert parse_expand_request({"patch": [], "expand": ["/a#1", "/a#1", 3, "/b#x"]}) == ("/a#1", "/b#x")
    assert parse_expand_request('{"expand": "/a#1"}') == ("/a#1",)
    assert parse_expand_request(b'{"expand": ["/a#1"]}') == ("/a#1",)
    assert parse_expand_request([{"op": "add", "path": "/a", "value": 1}]) == ()
    assert parse_expand_request("not json") == ()
    assert parse_expand_request({"expand": {"a": 1}}) == ()
    assert len(parse_expand_request({"expand": [f"/a#{i}" for i in range(100)]})) == MAX_EXPAND
    view = build_view(BP, "verifier", board(), 0, expand=[f"/claims#c{i}" for i in range(MAX_EXPAND + 3)])
    assert any("only the first" in n for n in view.notes)


# -- priorities: event and recent nodes -----------------------------------------------------------------
def test_event_node_and_recent_nodes_come_first() -> None:
    state = board(80, text_len=80)
    plain = build_view(BP, "verifier", state, 0, budget=1500)
    assert "/claims/7/text" not in plain.data
    event = {"op": "replace", "path": "/claims/7/status", "version": 4, "value": "SECRET-value", "rule": "r1"}
    view = build_view(BP, "verifier", state, 4, budget=1500, event=event)
    check_view(view, BP, state)
    assert view.data["/claims/7/text"] == state["claims"][7]["text"]
    assert view.event == {"op": "replace", "path": "/claims/7/status", "version": 4, "rule": "r1"}
    assert "SECRET" not in view.render()
    recent = build_view(BP, "verifier", state, 4, budget=1500, recent=["/claims/11", "not a pointer"])
    assert "/claims/11/text" in recent.data


# -- determinism ---------------------------------------------------------------------------------
def reorder(value: Any) -> Any:
    """The same JSON value with every object's insertion order reversed."""
    if isinstance(value, dict):
        return {k: reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reorder(v) for v in value]
    return value


def test_same_inputs_same_hash_and_no_dependence_on_key_order() -> None:
    state = board(120, text_len=70)
    views = [
        build_view(BP, w, s, 5, budget=b)
        for w in ("verifier", "all")
        for b in (300, 1500)
        for s in (state, copy.deepcopy(state), reorder(state))
    ]
    for i in range(0, len(views), 3):
        assert views[i].hash == views[i + 1].hash == views[i + 2].hash
        assert views[i].render() == views[i + 2].render()


def test_visible_change_changes_hash_invisible_change_does_not() -> None:
    state = board(10)
    base = build_view(BP, "verifier", state, 1)
    outside = copy.deepcopy(state)
    outside["secret"] = "changed"
    outside["claims"][3]["notes"] = "changed"
    outside["claims"][4]["status"] = "refuted"
    assert build_view(BP, "verifier", outside, 2).hash == base.hash  # new version, same view
    inside = copy.deepcopy(state)
    inside["claims"][3]["text"] = "changed"
    assert build_view(BP, "verifier", inside, 2).hash != base.hash
    inside2 = copy.deepcopy(state)
    inside2["evidence"]["e3"] = "new"
    assert build_view(BP, "verifier", inside2, 2).hash != base.hash


def test_view_is_detached_from_the_state() -> None:
    state = board(3)
    view = build_view(BP, "all", state, 0)
    state["claims"][0]["text"] = "mutated"
    state["query"] = "mutated"
    assert view.data[""]["query"] != "mutated"
    assert "mutated" not in view.render()
    assert hashlib.sha256(view.render().encode()).hexdigest() == view.hash


# -- rejections ---------------------------------------------------------------------------------------
def test_only_own_rejections_newest_first_and_bounded() -> None:
    recs = [
        reject(1, "verifier", "first"),
        reject(2, "texts", "SECRET other worker"),
        reject(3, "verifier", "third", patch='[{"op":"add"}]'),
        reject(4, "verifier", "accepted one", outcome="accepted"),
        reject(5, "verifier", "fifth"),
        reject(6, "verifier", "sixth"),
        reject(7, None, "SECRET kernel action"),  # type: ignore[arg-type]
    ]
    view = build_view(BP, "verifier", board(), 0, rejections=recs)
    assert [r["reason"] for r in view.rejections] == ["sixth", "fifth", "third"]
    assert view.rejections[2] == {"stage": "schema", "reason": "third", "patch": '[{"op":"add"}]'}
    assert "SECRET" not in view.render()
    assert build_view(BP, "texts", board(), 0, rejections=recs).rejections[0]["reason"] == "SECRET other worker"


# -- kernel integration and cost --------------------------------------------------------------------------
def test_kernel_view_matches_the_committed_state() -> None:
    kernel = Kernel(BP, board(3))
    v0 = kernel_view(kernel, "verifier")
    decision = kernel.submit(
        Proposal(
            "verifier",
            [{"op": "replace", "path": "/claims/1/status", "value": "supported"}],
            viewed_version=v0.version,
            view_hash=v0.hash,
        )
    )
    assert decision.accepted and decision.record.view_hash == v0.hash
    v1 = kernel_view(kernel, "verifier")
    assert v1.version == 1 and v1.hash == v0.hash  # status is not readable by the verifier
    kernel.submit(Proposal("all", [{"op": "add", "path": "/claims/-", "value": claim(9)}]))
    assert kernel_view(kernel, "verifier").hash != v0.hash


class Spy(dict[str, Any]):
    """A dict that counts how often its members are enumerated."""

    touched = 0

    def items(self) -> Any:
        Spy.touched += 1
        return super().items()

    def __iter__(self) -> Iterator[str]:
        Spy.touched += 1
        return super().__iter__()


def test_cost_is_bounded_by_the_view_not_the_state() -> None:
    Spy.touched = 0
    state = {"query": "q", "claims": [Spy(claim(i, "t" * 40)) for i in range(20_000)]}
    view = build_view(BP, "all", state, 0, budget=2000)
    assert view.size <= 2000 and "/claims/19999" in view.data
    # The cost is counted, not timed: only the items looked at, never the whole collection.
    assert Spy.touched < 200, Spy.touched


# -- properties ----------------------------------------------------------------------------------------
KEYS = ["a", "b", "id", "text", "x/y", "t~"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=6),
        st.dictionaries(st.sampled_from(KEYS), kids, max_size=5),
    ),
    max_leaves=40,
)
states = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)
tokens = st.sampled_from([*KEYS, "*", "*", "0", "1"])
patterns = st.builds(
    lambda toks, deep: "".join("/" + escape_token(t) for t in toks) + ("/**" if deep else ""),
    st.lists(tokens, max_size=3),
    st.booleans(),
)


@lru_cache(maxsize=512)
def bp_for(reads: tuple[str, ...]) -> CompiledBlueprint:
    return compile_blueprint(
        {"schema": {}, "workers": {"w": {"reads": list(reads), "writes": ["/a/-", "/b/*"], "view_budget": 4000}}}
    )


def label_strings(value: Any, counter: list[int]) -> Any:
    """Replace every string leaf by a unique marker, so leaks can be searched for."""
    if isinstance(value, dict):
        return {k: label_strings(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [label_strings(v, counter) for v in value]
    if isinstance(value, str):
        counter[0] += 1
        return f"«{counter[0]}»"
    return value


def leaves(value: Any, path: Tokens = ()) -> Iterator[tuple[Tokens, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, str(i)))
    else:
        yield path, value


def nodes(value: Any, path: Tokens = ()) -> Iterator[Tokens]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, str(i)))


PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(states, st.lists(patterns, min_size=1, max_size=3), st.integers(2, 1500))
def test_property_contract_and_budget(raw: dict[str, Any], reads: list[str], budget: int) -> None:
    state = label_strings(raw, [0])
    bp = bp_for(tuple(reads))
    view = build_view(bp, "w", state, 0, budget=budget)
    check_view(view, bp, state)
    contract = bp.workers["w"]
    readable = {v for path, v in leaves(state) if isinstance(v, str) and contract.may_read(path)}
    for marker in re.findall(r"«\d+»", view.render()):
        assert marker in readable, f"{marker} is not readable but is in the view"
    if budget >= 1500 and len(canonical_str(state)) < 300:
        shown = {v for ptr in visible_pointers(view) if isinstance(v := resolve(state, parse_pointer(ptr)), str)}
        assert readable <= shown  # a small region is shown in full


@PROPS
@given(states, st.lists(patterns, min_size=1, max_size=3), st.integers(2, 1500), st.data())
def test_property_hash_tracks_exactly_the_visible_part(
    raw: dict[str, Any], reads: list[str], budget: int, data: st.DataObject
) -> None:
    state = label_strings(raw, [0])
    bp = bp_for(tuple(reads))
    contract = bp.workers["w"]
    view = build_view(bp, "w", state, 0, budget=budget)
    assert build_view(bp, "w", reorder(copy.deepcopy(state)), 0, budget=budget).hash == view.hash
    # a change at a node no read pattern reaches (nor leads to) never changes the view
    outside = [p for p in nodes(state) if p and not in_region(contract.reads, p)]
    if outside:
        where = data.draw(st.sampled_from(outside))
        changed = copy.deepcopy(state)
        parent = resolve(changed, where[:-1])
        parent[int(where[-1]) if isinstance(parent, list) else where[-1]] = {"new": "«changed»"}
        assert build_view(bp, "w", changed, 1, budget=budget).hash == view.hash
    # a change to a value shown in data always changes the view
    shown = [parse_pointer(p) for p in visible_pointers(view)]
    if shown:
        where = data.draw(st.sampled_from(shown))
        changed = copy.deepcopy(state)
        if where:
            parent = resolve(changed, where[:-1])
            parent[int(where[-1]) if isinstance(parent, list) else where[-1]] = "«changed»"
        else:
            changed = "«changed»"
        if resolve(state, where) != "«changed»":
            assert build_view(bp, "w", changed, 1, budget=budget).hash != view.hash


@PROPS
@given(
    states,
    st.lists(patterns, min_size=1, max_size=3),
    st.integers(2, 3000),
    st.lists(st.text(max_size=12), max_size=4),
    st.lists(st.text(max_size=300), max_size=4),
)
def test_property_budget_with_every_part(
    raw: dict[str, Any], reads: list[str], budget: int, asks: list[str], reasons: list[str]
) -> None:
    state = label_strings(raw, [0])
    bp = bp_for(tuple(reads))
    first = build_view(bp, "w", state, 0, budget=budget)
    expand = [*asks, *(h.handle for h in first.handles[:3])]
    recs = [reject(i, "w", reason=r, patch=r * 3) for i, r in enumerate(reasons)]
    view = build_view(
        bp, "w", state, 0, budget=budget, expand=expand, rejections=recs, event={"op": "add", "path": "/a/0"}
    )
    check_view(view, bp, state)
    for h in first.handles[:3]:
        assert not any(h.handle in n for n in view.notes), "a handle of the view itself must resolve"


def test_region_contains_agrees_with_may_read() -> None:
    # the view's notion of "readable" is the kernel's: region_contains over the read patterns
    contract = BP.workers["verifier"]
    for ptr in ["/claims/0/text", "/claims/0/text/x", "/evidence/e1", "/query"]:
        assert contract.may_read(parse_pointer(ptr))
        assert any(region_contains(p, parse_pointer(ptr)) for p in contract.reads)
    for ptr in ["/claims/0", "/claims/0/notes", "/secret", ""]:
        assert not contract.may_read(parse_pointer(ptr))


# -- pinned paths and windows (the present, whole, at any budget) ------------------------------
PINNED_BP = compile_blueprint(
    {
        "name": "pinned",
        "schema": {
            "type": "object",
            "properties": {
                "task": {"type": "string"},
                "allowed": {"type": "array", "items": {"type": "string"}},
                "log": {"type": "array", "items": {"type": "string"}},
                "notes": {"type": "object", "additionalProperties": {"type": "string"}},
                "pick": {"type": "array", "items": {"type": "string"}},
            },
        },
        "initial_state": {"task": "", "allowed": [], "log": [], "notes": {}, "pick": []},
        "workers": {
            "chooser": {
                "reads": ["/task", "/allowed", "/log", "/notes"],
                "pinned": ["/task", "/allowed"],
                "windows": {"/log": 2},
                "writes": ["/pick/-"],
                "ops": ["add"],
                "view_budget": 64,
            }
        },
        "rules": [{"on": {"op": "start"}, "invoke": "chooser"}],
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    allowed=st.lists(st.text(min_size=1, max_size=40), max_size=60),
    log=st.lists(st.text(max_size=30), max_size=12),
    notes=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=300), max_size=10),
    task=st.text(max_size=400),
    budget=st.integers(min_value=2, max_value=5000),
)
def test_a_pinned_path_survives_any_budget(
    allowed: list[str], log: list[str], notes: dict[str, str], task: str, budget: int
) -> None:
    state = {"task": task, "allowed": allowed, "log": log, "notes": notes, "pick": []}
    view = build_view(PINNED_BP, "chooser", state, 3, budget=budget)
    # Pinned: whole, exact, whatever the budget.
    assert view.data["/task"] == task and view.data["/allowed"] == allowed
    # Windowed: the newest two items whole, one range handle for the earlier ones.
    start = max(0, len(log) - 2)
    assert {k: v for k, v in view.data.items() if k.startswith("/log")} == {
        f"/log/{i}": log[i] for i in range(start, len(log))
    }
    ranges = [h for h in view.handles if h.pointer == "/log"]
    assert ranges == ([] if start == 0 else [Handle(f"/log#[0:{start}]", "/log", f"[0:{start}]", items=start)])
    # Everything else stays inside the read contract and the budget bounds it.
    assert all(k in ("/task", "/allowed") or k.startswith(("/log/", "/notes")) for k in view.data)
    rest = {k: v for k, v in view.data.items() if k.startswith("/notes")}
    assert len(canonical_str(rest)) <= budget
    assert view.hash == hashlib.sha256(view.render().encode()).hexdigest()


def test_pins_must_be_concrete_reads() -> None:
    from slateboard.blueprint.compile import BlueprintError

    spec = {
        "name": "bad",
        "schema": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "workers": {"w": {"reads": ["/a"], "pinned": ["/b"], "writes": ["/a"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w"}],
    }
    with pytest.raises((BlueprintError, ValueError), match="not one of the worker's reads"):
        compile_blueprint(spec)


@pytest.mark.parametrize("budget", [300, 4000, 100_000])
def test_a_build_leaves_no_reference_cycles(budget: int) -> None:
    """Region nodes, fill attempts and list hints are freed by reference counting when a build
    is done, not left to the cyclic garbage collector (issue 14)."""
    bp = make_bp(budget)
    state = board(400, text_len=60)
    cache = ViewCache()
    for worker in bp.workers:
        build_view(bp, worker, state, 1, event={"op": "add", "path": "/claims/3"}, expand=["/claims#3"])
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for worker in bp.workers:
            for kept in (None, cache):
                build_view(
                    bp, worker, state, 1, event={"op": "add", "path": "/claims/3"}, expand=["/claims#3"], cache=kept
                )
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []
