"""prepare/commit/abort, KernelBusy, no-ops, events, optimistic concurrency (stale proposals),
and isolation of the committed state from callers' objects."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_testkit import Snapshot, canon, claims_blueprint, make_blueprint, submit

from slateboard.kernel import GENESIS, Kernel, KernelBusy, Proposal, state_hash

APPEND = [{"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "open"}}]


def test_submit_accepts_and_advances_version_seq_and_chain(claims_kernel):
    k = claims_kernel
    assert (k.version, k.seq, k.last_hash) == (0, 0, GENESIS)
    h0 = k.state_hash
    d = submit(k, "writer", APPEND)
    rec = d.record
    assert d.accepted and rec.outcome == "accepted" and rec.stage is None and rec.reason is None
    assert (k.version, k.seq, k.last_hash) == (1, 1, rec.hash)
    assert (rec.version, rec.seq, rec.prev) == (1, 1, GENESIS)
    assert rec.state_before == h0 and rec.state_after == k.state_hash == state_hash(k.state) != h0
    assert k.state["claims"][1] == {"text": "b", "status": "open"}
    d2 = submit(k, "writer", [{"op": "replace", "path": "/count", "value": 3}])
    assert d2.record.prev == rec.hash and d2.record.seq == 2 and d2.record.version == 2


@pytest.mark.parametrize(
    ("worker", "patch", "outcome"),
    [
        ("writer", APPEND, "accepted"),
        ("writer", [{"op": "replace", "path": "/count", "value": "x"}], "rejected"),
        ("writer", [{"op": "replace", "path": "/count", "value": 0}], "noop"),
        (
            "admin",
            [
                {"op": "remove", "path": "/claims/0"},
                {"op": "add", "path": "/claims/0", "value": {"text": "z", "status": "done"}},
            ],
            "accepted",
        ),
        ("admin", [{"op": "replace", "path": "", "value": {"claims": []}}], "accepted"),
        ("admin", [{"op": "move", "from": "/secret", "path": "/notes/s"}], "accepted"),
    ],
)
def test_prepare_then_abort_restores_everything_exactly(worker, patch, outcome):
    k = Kernel(claims_blueprint())
    submit(k, "writer", [{"op": "add", "path": "/notes/x", "value": "y"}])  # some history first
    before = Snapshot.of(k)
    changed_before = k.changed_since(0)
    d = k.prepare(Proposal(worker, patch))
    assert d.record.outcome == outcome, d.reason
    if outcome == "accepted":
        assert k.state_hash == d.record.state_after != before.hash  # applied, pending
    k.abort(d)
    assert Snapshot.of(k) == before
    assert k.state_hash == state_hash(k.state)
    assert k.changed_since(0) == changed_before
    # the kernel is usable again and decides the same way, producing the very same record
    d2 = k.prepare(Proposal(worker, patch))
    assert d2.record == d.record
    k.commit(d2)
    assert k.seq == before.seq + 1


def test_prepare_twice_without_commit_raises_kernel_busy(claims_kernel):
    k = claims_kernel
    d = k.prepare(Proposal("writer", APPEND))
    snap = Snapshot.of(k)
    with pytest.raises(KernelBusy):
        k.prepare(Proposal("writer", [{"op": "replace", "path": "/count", "value": 1}]))
    with pytest.raises(KernelBusy):
        k.action("circuit", "halt")
    assert Snapshot.of(k) == snap  # the refused prepare changed nothing
    k.commit(d)
    assert submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}]).accepted


def test_rejected_decision_must_also_be_committed_or_aborted(claims_kernel):
    k = claims_kernel
    d = k.prepare(Proposal("writer", [{"op": "replace", "path": "/secret", "value": "x"}]))
    assert d.stage == "authorise"
    with pytest.raises(KernelBusy):
        k.prepare(Proposal("writer", APPEND))
    k.abort(d)
    assert k.seq == 0
    k.commit(k.prepare(Proposal("writer", APPEND)))
    assert k.seq == 1 and k.version == 1


def test_commit_or_abort_of_a_foreign_decision_raises(claims_kernel):
    other = Kernel(claims_blueprint())
    foreign = other.prepare(Proposal("writer", APPEND))
    with pytest.raises(KernelBusy):
        claims_kernel.commit(foreign)
    with pytest.raises(KernelBusy):
        claims_kernel.abort(foreign)
    d = claims_kernel.prepare(Proposal("writer", APPEND))
    claims_kernel.commit(d)
    with pytest.raises(KernelBusy):
        claims_kernel.commit(d)  # already committed


def test_noop_does_not_advance_the_version(claims_kernel):
    k = claims_kernel
    before = Snapshot.of(k)
    d = submit(
        k, "writer", [{"op": "test", "path": "/count", "value": 0}, {"op": "replace", "path": "/count", "value": 0}]
    )
    assert d.record.outcome == "noop" and not d.accepted and d.stage is None
    assert "unchanged" in (d.reason or "")
    assert (k.version, canon(k.state), k.state_hash) == (before.version, before.state, before.hash)
    assert k.seq == before.seq + 1
    assert not d.events


def test_action_records_chain_without_changing_state(claims_kernel):
    k = claims_kernel
    submit(k, "writer", APPEND)
    snap = Snapshot.of(k)
    d = k.action("circuit", "too many invalid patches", worker="writer", meta={"n": 3})
    rec = k.commit(d)
    assert rec.outcome == "action" and rec.kind == "circuit" and rec.prev == snap.last_hash
    assert rec.state_before == rec.state_after == snap.hash and rec.version == snap.version
    assert (canon(k.state), k.version, k.seq) == (snap.state, snap.version, snap.seq + 1)


def test_events_name_the_concrete_paths(claims_kernel):
    k = claims_kernel
    d = submit(
        k,
        "admin",
        [
            {"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "open"}},
            {"op": "replace", "path": "/claims/0/status", "value": "done"},
            {"op": "remove", "path": "/secret"},
            {"op": "move", "from": "/count", "path": "/notes/c"},
        ],
    )
    assert not d.accepted  # notes must be strings: the move is refused by the schema
    d = submit(
        k,
        "admin",
        [
            {"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "open"}},
            {"op": "replace", "path": "/claims/0/status", "value": "done"},
            {"op": "remove", "path": "/secret"},
        ],
    )
    assert d.accepted
    got = [(e.op, e.path, e.kind, e.appended, e.version) for e in d.events]
    assert got == [
        ("add", "/claims/1", "insert", True, 1),
        ("replace", "/claims/0/status", "set", False, 1),
        ("remove", "/secret", "delete", False, 1),
    ]


def test_state_does_not_alias_the_callers_patch(claims_kernel):
    k = claims_kernel
    value = {"text": "b", "status": "open"}
    patch = [{"op": "add", "path": "/claims/-", "value": value}]
    assert submit(k, "writer", patch).accepted
    h = k.state_hash
    value["text"] = "MUTATED"
    patch.clear()
    assert k.state["claims"][1]["text"] == "b"
    assert k.state_hash == h == state_hash(k.state)


def test_state_does_not_alias_the_decision_ops(claims_kernel):
    """Decision.ops is handed to callers: mutating it must not reach into the committed state."""
    k = claims_kernel
    d = submit(k, "writer", [{"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "open"}}])
    assert d.accepted
    h = k.state_hash
    d.ops[0].value["text"] = "MUTATED"
    assert k.state["claims"][1]["text"] == "b"
    assert k.state_hash == h == state_hash(k.state)


def test_copy_does_not_alias_its_source():
    k = Kernel(make_blueprint({"type": "object"}, {"a": {"b": [1]}}))
    assert submit(k, "admin", [{"op": "copy", "from": "/a", "path": "/c"}]).accepted
    assert submit(k, "admin", [{"op": "add", "path": "/c/b/-", "value": 2}]).accepted
    assert k.state == {"a": {"b": [1]}, "c": {"b": [1, 2]}}
    assert k.state_hash == state_hash(k.state)


# -- optimistic concurrency ------------------------------------------------------------------


def _bump(k: Kernel, path: str, value: Any) -> None:
    assert submit(k, "admin", [{"op": "add", "path": path, "value": value}]).accepted


def test_stale_when_a_written_path_changed(claims_kernel):
    k = claims_kernel
    _bump(k, "/count", 5)
    d = submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}], viewed_version=0)
    assert (d.record.outcome, d.stage) == ("rejected", "stale")
    reason = d.reason or ""
    assert "/count" in reason and "version 0" in reason
    assert k.state["count"] == 5 and k.version == 1
    assert d.record.meta == {"viewed_version": 0}
    # viewed at the current version it goes through
    assert submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}], viewed_version=1).accepted


def test_stale_when_a_parent_of_the_written_path_was_replaced(claims_kernel):
    k = claims_kernel
    _bump(k, "/claims", [{"text": "new", "status": "open"}])
    d = submit(k, "writer", [{"op": "replace", "path": "/claims/0/status", "value": "done"}], viewed_version=0)
    assert d.stage == "stale"


def test_stale_when_something_inside_the_read_contract_changed(claims_kernel):
    k = claims_kernel
    _bump(k, "/notes/x", "changed")  # writer reads /notes but does not write /count's region
    d = submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}], viewed_version=0)
    assert d.stage == "stale"
    reason = d.reason or ""
    assert "/notes/x" in reason and "read contract" in reason


def test_stale_when_a_tested_path_changed():
    bp = make_blueprint(
        {"type": "object"},
        {"a": 1, "b": 1},
        # t reads /b: a test on a path the worker may not read is refused at authorise (issue 29).
        workers={"t": {"reads": ["/b"], "writes": ["/a", "/b"]}, "admin": {"reads": ["/**"], "writes": ["/**"]}},
    )
    k = Kernel(bp)
    _bump(k, "/b", 2)
    d = submit(
        k,
        "t",
        [{"op": "test", "path": "/b", "value": 2}, {"op": "replace", "path": "/a", "value": 3}],
        viewed_version=0,
    )
    assert d.stage == "stale"


def test_stale_when_the_source_of_a_copy_changed():
    """copy reads its 'from': a copy out of a path that changed since the view copies data
    the worker never saw, so it is as stale as a test on that path."""
    bp = make_blueprint(
        {"type": "object"},
        {"items": [1, 2], "log": []},
        workers={
            "w": {"reads": ["/log", "/items"], "writes": ["/log/-", "/items/*"], "ops": ["add", "copy"]},
            "admin": {"reads": ["/**"], "writes": ["/**"]},
        },
    )
    k = Kernel(bp)
    _bump(k, "/items/0", 9)
    d = submit(k, "w", [{"op": "copy", "from": "/items/0", "path": "/log/-"}], viewed_version=0)
    assert (d.record.outcome, d.stage) == ("rejected", "stale"), f"{d.record.outcome}: log is now {k.state['log']}"


def test_older_but_non_conflicting_proposals_are_accepted(claims_kernel):
    k = claims_kernel
    _bump(k, "/secret", "other")  # outside the writer's reads and writes
    _bump(k, "/log/-", "entry")
    d = submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}], viewed_version=0)
    assert d.accepted, d.reason
    assert k.version == 3


def test_concurrent_appends_to_the_same_array_do_not_conflict(claims_kernel):
    k = claims_kernel
    _bump(k, "/log/-", "first")
    d = submit(k, "appender", [{"op": "add", "path": "/log/-", "value": "second"}], viewed_version=0)
    assert d.accepted, d.reason
    assert k.state["log"] == ["first", "second"]


def test_append_is_stale_when_the_array_itself_was_replaced(claims_kernel):
    k = claims_kernel
    _bump(k, "/log", ["reset"])
    d = submit(k, "appender", [{"op": "add", "path": "/log/-", "value": "x"}], viewed_version=0)
    assert d.stage == "stale"


def test_viewed_version_older_than_the_known_history_is_stale():
    bp = claims_blueprint()
    k = Kernel(bp, bp.initial_state(), version=7, seq=7)  # restored from a snapshot: no change history
    d = submit(k, "appender", [{"op": "add", "path": "/log/-", "value": "x"}], viewed_version=5)
    assert d.stage == "stale" and "too old" in (d.reason or "")
    assert submit(k, "appender", [{"op": "add", "path": "/log/-", "value": "x"}], viewed_version=7).accepted


def test_no_viewed_version_means_no_staleness_check(claims_kernel):
    k = claims_kernel
    _bump(k, "/count", 5)
    assert submit(k, "writer", [{"op": "replace", "path": "/count", "value": 1}]).accepted


@pytest.mark.parametrize(
    ("change", "target"),
    [
        ({"op": "add", "path": "/claims/0", "value": {"text": "new", "status": "open"}}, "/claims/1/status"),
        ({"op": "remove", "path": "/claims/0"}, "/claims/1/status"),
    ],
    ids=["insert-before", "remove-before"],
)
def test_stale_when_an_insert_or_remove_shifted_the_written_index(change, target):
    """A worker bound to claim 'b' at /claims/1 (e.g. by the event that woke it) must not write
    to whatever claim sits at index 1 after another commit inserted or removed one before it."""
    bp = make_blueprint(
        {"type": "object"},
        {"claims": [{"text": "a", "status": "open"}, {"text": "b", "status": "open"}, {"text": "c", "status": "open"}]},
        workers={
            "verifier": {"reads": ["/notes"], "writes": ["/claims/*/status"]},
            "admin": {"reads": ["/**"], "writes": ["/**"], "ops": ["add", "remove", "replace", "test"]},
        },
    )
    k = Kernel(bp)
    assert submit(k, "admin", [change]).accepted
    d = submit(k, "verifier", [{"op": "replace", "path": target, "value": "done"}], viewed_version=0)
    done = [c["text"] for c in k.state["claims"] if c["status"] == "done"]
    assert (d.record.outcome, d.stage) == ("rejected", "stale"), (
        f"{d.record.outcome}: claims marked done: {done} (meant: ['b'])"
    )


def test_the_staleness_window_holds_nothing_the_collector_walks():
    """A kernel keeps the changed paths of its last versions (up to STALE_WINDOW) for every
    running board; they are tuples of strings, ints and None, so the garbage collector stops
    tracking them, and a long board adds nothing for each full collection to walk."""
    import gc

    k = Kernel(claims_blueprint())
    for i in range(50):
        submit(k, "writer", [{"op": "add", "path": f"/notes/n{i}", "value": "y"}])
    for _ in range(4):  # a collection untracks one level of nested tuples (their items first)
        gc.collect()
    assert len(k._changes) == 50
    assert not any(gc.is_tracked(entry) for entry in k._changes)
    assert k.changed_since(49) == [(("notes", "n49"), None)]  # version 50 wrote n49


def test_the_staleness_window_keeps_one_flat_tuple_per_version():
    """Each version's entry is one tuple, (version, path, shift, path, shift, ...): no tuple
    per changed path and none around them, so a board keeps a few objects fewer per step (and
    about 170 bytes less) for up to STALE_WINDOW versions. What ``changed_since`` answers is
    unchanged: the changed paths, and an insert's array with the index its items shift from."""
    bp = make_blueprint(
        {"type": "object"},
        {"claims": [{"text": "a", "status": "open"}]},
        workers={"admin": {"reads": ["/**"], "writes": ["/**"], "ops": ["add", "remove", "replace", "test"]}},
    )
    k = Kernel(bp)
    assert submit(k, "admin", [{"op": "add", "path": "/claims/0", "value": {"text": "new", "status": "open"}}]).accepted
    assert submit(k, "admin", [{"op": "replace", "path": "/claims/1/status", "value": "done"}]).accepted
    assert list(k._changes) == [
        (1, ("claims", "0"), None, ("claims",), 0),
        (2, ("claims", "1", "status"), None),
    ]
    assert k.changed_since(0) == [(("claims", "0"), None), (("claims",), 0), (("claims", "1", "status"), None)]
    assert k.changed_since(1) == [(("claims", "1", "status"), None)]
    assert k.changed_since(2) == []
