"""The kernel and visibility on entries: a widening is a named rejection at stage ``authorise``
(logged, nothing committed); an op naming an entry hidden from its worker is answered exactly as
if the entry did not exist (``test`` ops included: success, failure and reason); a change to a
hidden entry makes no one's proposal stale; no reason names a hidden entry."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from visibility_kit import WORKERS, blueprint_data, make_bp, note, submit

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.vocabulary import OUTCOME_ACCEPTED, OUTCOME_REJECTED

BP = make_bp()
REQUIRED = make_bp(required=True)
SETTINGS = settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def kernel_with(notes: dict[str, Any], bp: Any = BP) -> Kernel:
    state = bp.initial_state()
    state["notes"] = copy.deepcopy(notes)
    return Kernel(bp, state)


@pytest.mark.parametrize(
    ("worker", "patch", "words"),
    [
        ("alice", note("n", "x", ["dave"]), "'dave' is wider than 'alice' may address (addresses: reviewers)"),
        ("alice", note("n", "x", ["*"]), "'*' is wider than 'alice'"),
        ("alice", note("n", "x"), "left off (every worker) is wider than 'alice'"),
        ("alice", [{"op": "add", "path": "/notes/seen/visible_to/-", "value": "dave"}], "'dave' is wider"),
        ("alice", [{"op": "replace", "path": "/notes/seen/visible_to", "value": ["*"]}], "'*' is wider"),
        ("alice", [{"op": "remove", "path": "/notes/seen/visible_to"}], "left off (every worker) is wider"),
        ("bob", note("n", "x", ["zed"]), "'zed' is neither a worker nor a label"),
        ("bob", [{"op": "add", "path": "/notes/n", "value": {"text": "x", "visible_to": "bob"}}], "must be a list"),
    ],
)
def test_a_widening_is_rejected_at_authorise_logged_and_nothing_committed(
    worker: str, patch: list[dict[str, Any]], words: str
) -> None:
    k = kernel_with({"seen": {"text": "s", "visible_to": ["alice", "bob"]}})
    before, version, seq = k.state_hash, k.version, k.seq
    d = submit(k, worker, patch)
    assert (d.record.outcome, d.stage) == (OUTCOME_REJECTED, "authorise")
    assert words in (d.reason or "")
    assert (k.state_hash, k.version, k.seq) == (before, version, seq + 1)  # logged, not committed
    assert d.record.state_before == d.record.state_after == before


def test_a_required_field_left_off_is_a_widening_for_anyone() -> None:
    d = submit(kernel_with({}, REQUIRED), "bob", note("n", "x"))
    assert d.stage == "authorise" and "must say who sees them ('visible_to')" in (d.reason or "")
    assert submit(kernel_with({}, REQUIRED), "bob", note("n", "x", ["*"])).accepted


@pytest.mark.parametrize(
    ("worker", "patch"),
    [
        ("alice", note("n", "x", ["reviewers"])),
        ("alice", note("n", "x", ["alice"])),  # itself, always
        ("alice", note("n", "x", ["bob", "carol", "alice"])),  # the label's members one by one
        ("bob", note("n", "x", ["dave", "*"])),  # no 'addresses': any name
        ("bob", note("n", "x")),
        # editing an entry's text leaves its visibility alone: not a widening, whoever set it
        ("alice", [{"op": "replace", "path": "/notes/wide/text", "value": "edited"}]),
    ],
)
def test_visibility_within_the_contract_is_accepted(worker: str, patch: list[dict[str, Any]]) -> None:
    k = kernel_with({"wide": {"text": "w", "visible_to": ["*"]}})
    assert submit(k, worker, patch).accepted


@pytest.mark.parametrize("path", ["/notes", ""])
@pytest.mark.parametrize("op", ["test", "replace", "remove", "add", "copy-from", "move-from"])
def test_no_op_names_a_whole_collection_whatever_it_holds(path: str, op: str) -> None:
    patch: list[dict[str, Any]]
    if op.endswith("-from"):
        patch = [{"op": op[:-5], "from": path, "path": "/log/-"}]
    else:
        patch = [{"op": op, "path": path, "value": {}}] if op != "remove" else [{"op": op, "path": path}]
    reasons = set()
    for notes in ({}, {"h": {"text": "HIDDEN", "visible_to": ["carol"]}}, {"v": {"text": "v"}}):
        for worker in WORKERS:
            d = submit(kernel_with(notes), worker, patch)
            assert d.record.outcome == OUTCOME_REJECTED and d.stage in ("authorise", "ops"), (worker, d.reason)
            reasons.add((worker, d.stage, d.reason))
    assert len(reasons) == len(WORKERS)  # the same answer for each worker on every state


# -- as if absent ------------------------------------------------------------------------------
KEYS = ["k1", "k2", "k3", "k4"]
NAMES = ["alice", "bob", "carol", "dave", "reviewers", "*"]
entries = st.dictionaries(
    st.sampled_from(KEYS[:3]),
    st.fixed_dictionaries(
        {"text": st.sampled_from(["SECRET-x", "SECRET-y", "plain"])},
        optional={"visible_to": st.lists(st.sampled_from(NAMES), max_size=2, unique=True)},
    ),
    min_size=1,
    max_size=3,
)
VALUES: dict[str, Any] = {
    "": st.sampled_from(
        [{"text": "SECRET-x"}, {"text": "new", "visible_to": ["*"]}, {"text": "n", "visible_to": ["bob"]}]
    ),
    "/text": st.sampled_from(["SECRET-x", "SECRET-y", "plain", "new"]),
    "/visible_to": st.sampled_from([["*"], ["carol"], ["reviewers", "alice"], []]),
    "/tags/-": st.sampled_from(["tag"]),
}
from_paths = st.tuples(st.sampled_from(KEYS), st.sampled_from(["", "/text", "/visible_to"])).map(
    lambda t: f"/notes/{t[0]}{t[1]}"
)


@st.composite
def ops(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["add", "add", "replace", "test", "test", "remove", "move", "copy"]))
    if draw(st.integers(0, 5)) == 0:
        op: dict[str, Any] = {"op": kind, "path": "/log/-", "value": "log"}
        if kind in ("move", "copy"):
            op["from"] = f"/notes/{draw(st.sampled_from(KEYS))}/text"
        return op
    key, tail = draw(st.sampled_from(KEYS)), draw(st.sampled_from(sorted(VALUES)))
    op = {"op": kind, "path": f"/notes/{key}{tail}"}
    if kind in ("add", "replace", "test"):
        op["value"] = draw(VALUES[tail])
    if kind in ("move", "copy"):
        op["from"] = draw(from_paths)
    return op


def creates_at(patch: list[dict[str, Any]], keys: set[str]) -> bool:
    """An op that would create (or move/copy) an entry at one of ``keys``: the one case answered
    as 'taken' rather than as absent."""
    return any(o["op"] in ("add", "move", "copy") and o["path"] in {f"/notes/{k}" for k in keys} for o in patch)


@SETTINGS
@given(notes=entries, worker=st.sampled_from(WORKERS), patch=st.lists(ops(), min_size=1, max_size=3))
def test_an_op_naming_a_hidden_entry_is_answered_as_if_it_did_not_exist(
    notes: dict[str, Any], worker: str, patch: list[dict[str, Any]]
) -> None:
    real = kernel_with(notes)
    vis = BP.visibility
    assert vis is not None
    hidden = {k for k, v in notes.items() if not vis.sees(worker, v, vis.collections[0])}
    absent = kernel_with({k: v for k, v in notes.items() if k not in hidden})
    d1 = real.prepare(Proposal(worker, copy.deepcopy(patch)))
    d2 = absent.prepare(Proposal(worker, copy.deepcopy(patch)))
    named_hidden = any(
        o.get(m, "").startswith(tuple(f"/notes/{k}" for k in hidden)) for o in patch for m in ("path", "from")
    )
    event(f"names a hidden entry: {named_hidden}; {d1.record.outcome} at {d1.stage}")
    if creates_at(patch, hidden) and d1.stage == "apply" and "is taken" in (d1.reason or ""):
        assert d1.record.outcome == OUTCOME_REJECTED
    else:
        assert (d1.record.outcome, d1.stage, d1.reason) == (d2.record.outcome, d2.stage, d2.reason)
    if d1.accepted and d2.accepted:
        assert vis.cut(real.state, worker) == vis.cut(absent.state, worker)  # what it may see changed alike
        assert all(real.state["notes"][k] == notes[k] for k in hidden)  # hidden entries untouched
    named = {o.get(m, "").split("/")[2] for o in patch for m in ("path", "from") if o.get(m, "").startswith("/notes/")}
    for k in hidden - named:
        assert f"/notes/{k}" not in (d1.reason or "")
    if not any(o.get("value") == "SECRET-x" or o.get("value") == {"text": "SECRET-x"} for o in patch):
        assert "SECRET" not in (d1.reason or "") or any(
            notes.get(k, {}).get("text", "").startswith("SECRET") for k in set(notes) - hidden
        )


def test_a_test_op_on_a_hidden_value_fails_like_a_test_on_nothing() -> None:
    notes = {"h": {"text": "SECRET", "visible_to": ["carol"]}}
    right_guess = [{"op": "test", "path": "/notes/h/text", "value": "SECRET"}]
    wrong_guess = [{"op": "test", "path": "/notes/h/text", "value": "other"}]
    nothing = [{"op": "test", "path": "/notes/h/text", "value": "SECRET"}]
    answers = {
        (d.record.outcome, d.stage, d.reason)
        for d in (
            submit(kernel_with(notes), "dave", right_guess),
            submit(kernel_with(notes), "dave", wrong_guess),
            submit(kernel_with({}), "dave", nothing),
        )
    }
    assert answers == {(OUTCOME_REJECTED, "apply", "op 0 (test '/notes/h/text'): path '/notes/h' does not exist")}
    # carol, who sees it, gets the ordinary answers
    assert submit(kernel_with(notes), "carol", [*right_guess, {"op": "add", "path": "/log/-", "value": "x"}]).accepted
    assert submit(kernel_with(notes), "carol", wrong_guess).stage == "preconditions"


def test_creating_an_entry_at_a_hidden_key_is_refused_as_taken_and_names_nothing_else() -> None:
    k = kernel_with({"h": {"text": "SECRET", "visible_to": ["carol"]}})
    d = submit(k, "bob", note("h", "mine", ["bob"]))
    assert (d.stage, d.reason) == ("apply", "op 0 (add '/notes/h'): the key '/notes/h' is taken; choose another")
    assert k.state["notes"]["h"]["text"] == "SECRET"


# -- staleness ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("audience", "stale"), [(["carol"], False), (["dave", "carol"], True), (None, True)])
def test_a_change_to_a_hidden_entry_makes_no_proposal_stale(audience: list[str] | None, stale: bool) -> None:
    k = kernel_with({})
    viewed = k.version
    assert submit(k, "bob", note("n", "SECRET", audience)).accepted
    d = submit(k, "dave", [{"op": "add", "path": "/log/-", "value": "x"}], viewed_version=viewed)
    assert (d.stage == "stale") is stale
    if stale:
        assert "/notes/n" in (d.reason or "")  # an entry dave sees now
    # and a hidden entry changing again, or being removed, says nothing either
    viewed = k.version
    submit(k, "carol", [{"op": "replace", "path": "/notes/n/text", "value": "SECRET-2"}])
    submit(k, "carol", [{"op": "remove", "path": "/notes/n"}])
    d = submit(k, "dave", [{"op": "add", "path": "/log/-", "value": "y"}], viewed_version=viewed)
    assert d.accepted or "/notes/n" not in (d.reason or "")


# -- invariants ----------------------------------------------------------------------------------
def test_an_invariant_failing_at_a_hidden_entry_names_neither_its_path_nor_its_values() -> None:
    data = blueprint_data()
    data["invariants"] = [
        {"name": "short-log", "at": "/notes/*", "rule": "size(root.log) < 1 || self.text != 'SECRET'", "check": "every"}
    ]
    bp = compile_blueprint(data)
    state = bp.initial_state()
    state["notes"] = {"h": {"text": "SECRET", "visible_to": ["carol"]}, "v": {"text": "seen"}}
    d = Kernel(bp, copy.deepcopy(state)).submit(Proposal("dave", [{"op": "add", "path": "/log/-", "value": "x"}]))
    assert d.stage == "invariants"
    assert d.reason == "invariant 'short-log' at an entry it may not see: the rule does not hold (details withheld)"
    d = Kernel(bp, copy.deepcopy(state)).submit(Proposal("carol", [{"op": "add", "path": "/log/-", "value": "x"}]))
    assert d.stage == "invariants" and "/notes/h" in (d.reason or "")  # carol sees it


def test_a_rejected_decision_is_recorded_as_such() -> None:
    d = submit(kernel_with({}), "alice", note("n", "x", ["dave"]))
    assert d.record.outcome == OUTCOME_REJECTED and d.record.outcome != OUTCOME_ACCEPTED
