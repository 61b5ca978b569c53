"""Invariants: located CEL rules with self, transition rules with oldSelf, root, Python
invariants, and evaluation errors that become rejections."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_testkit import Snapshot, make_blueprint, submit

from slateboard.kernel import InvariantContext, Kernel, Proposal
from slateboard.kernel.invariants import check_all_invariants

SCHEMA = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer"},
        "count": {"type": "integer"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": {"type": "integer"}, "text": {"type": "string"}}},
        },
        "notes": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
INITIAL = {"limit": 10, "items": [{"id": 1, "text": "a"}], "notes": {}}


def board(*invariants: dict[str, Any], initial: dict[str, Any] | None = None) -> Kernel:
    return Kernel(make_blueprint(SCHEMA, INITIAL if initial is None else initial, invariants=list(invariants)))


def rejected(d, stage="invariants"):
    return d.record.outcome == "rejected" and d.stage == stage


def test_located_invariant_with_self_rejects_naming_node_and_message():
    k = board({"name": "non-empty", "at": "/items/*", "rule": "self.text != ''", "message": "text must not be empty"})
    before = Snapshot.of(k)
    d = submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 2, "text": ""}}])
    assert rejected(d)
    reason = d.reason or ""
    assert "'non-empty'" in reason and "/items/1" in reason and "text must not be empty" in reason
    assert Snapshot.of(k).state == before.state and k.state_hash == before.hash
    assert submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 2, "text": "b"}}]).accepted


def test_invariant_without_message_quotes_the_rule():
    k = board({"at": "/items/*", "rule": "self.id > 0"})
    d = submit(k, "admin", [{"op": "replace", "path": "/items/0/id", "value": 0}])
    assert rejected(d)
    reason = d.reason or ""
    assert "'invariant0'" in reason and "self.id > 0" in reason and "/items/0" in reason


def test_invariant_checked_for_nodes_inside_an_added_subtree():
    k = board({"at": "/items/*", "rule": "self.id > 0"})
    d = submit(k, "admin", [{"op": "replace", "path": "/items", "value": [{"id": 3}, {"id": -1}]}])
    assert rejected(d) and "/items/1" in (d.reason or "")
    d = submit(k, "admin", [{"op": "replace", "path": "", "value": {"items": [{"id": -5}]}}])
    assert rejected(d) and "/items/0" in (d.reason or "")


def test_invariant_checked_when_a_descendant_changes():
    k = board({"at": "/items/*", "rule": "size(self.text) < 3"})
    d = submit(k, "admin", [{"op": "replace", "path": "/items/0/text", "value": "long"}])
    assert rejected(d) and "/items/0" in (d.reason or "")


def test_invariants_are_checked_on_the_final_state_of_the_patch():
    k = board({"at": "/count", "rule": "self < 5"})
    d = submit(
        k, "admin", [{"op": "add", "path": "/count", "value": 9}, {"op": "replace", "path": "/count", "value": 1}]
    )
    assert d.accepted


def test_root_invariant_at_empty_pattern():
    k = board({"at": "", "rule": "!has(self.count) || self.count <= self.limit"})
    assert rejected(submit(k, "admin", [{"op": "add", "path": "/count", "value": 11}]))
    assert submit(k, "admin", [{"op": "add", "path": "/count", "value": 10}]).accepted
    assert rejected(submit(k, "admin", [{"op": "replace", "path": "/limit", "value": 9}]))


def test_root_in_a_located_invariant_is_checked_when_root_changes_elsewhere():
    """An invariant at /items/* that reads ``root`` depends on more than its own node: lowering
    /limit below an existing item's id must be rejected, not committed."""
    k = board({"name": "id-below-limit", "at": "/items/*", "rule": "self.id <= root.limit"})
    assert rejected(submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 11}}]))
    d = submit(k, "admin", [{"op": "replace", "path": "/limit", "value": 0}])
    assert rejected(d), f"accepted: {check_all_invariants(k.blueprint, k.state)}"
    assert check_all_invariants(k.blueprint, k.state) == []


def test_check_touched_limits_a_root_rule_to_the_nodes_a_patch_touched():
    """``check: touched`` is the blueprint author's promise that unchanged nodes stay valid: the
    kernel then checks only appended/changed nodes (O(state) per commit, not O(nodes x state))."""
    rule = {"name": "id-below-limit", "at": "/items/*", "rule": "self.id <= root.limit", "check": "touched"}
    k = board(rule)
    assert rejected(submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 11}}]))
    assert submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 7}}]).accepted
    # Lowering the limit touches no item, so no item is re-checked: the promise was the author's.
    assert submit(k, "admin", [{"op": "replace", "path": "/limit", "value": 0}]).accepted
    assert [f.path for f in check_all_invariants(k.blueprint, k.state)] == ["/items/0", "/items/1"]
    # A touched item is checked against the current root.
    assert rejected(submit(k, "admin", [{"op": "replace", "path": "/items/0/text", "value": "b"}]))


def test_check_must_be_touched_or_every():
    from slateboard.blueprint import BlueprintError

    with pytest.raises(BlueprintError) as info:
        board({"at": "/items/*", "rule": "true", "check": "sometimes"})
    assert any(i.path == "/invariants/0/check" for i in info.value.issues)


def test_transition_rule_compares_with_old_value():
    k = board({"name": "monotonic", "at": "/count", "rule": "self >= oldSelf"}, initial={"count": 5})
    d = submit(k, "admin", [{"op": "replace", "path": "/count", "value": 4}])
    assert rejected(d) and "'monotonic'" in (d.reason or "")
    assert submit(k, "admin", [{"op": "replace", "path": "/count", "value": 6}]).accepted
    assert k.state["count"] == 6


def test_transition_rule_is_skipped_when_the_node_did_not_exist():
    k = board({"at": "/count", "rule": "self >= oldSelf"}, initial={})
    assert submit(k, "admin", [{"op": "add", "path": "/count", "value": -5}]).accepted
    assert rejected(submit(k, "admin", [{"op": "replace", "path": "/count", "value": -6}]))


def test_transition_rule_sees_the_value_before_the_whole_patch():
    k = board({"at": "/count", "rule": "self >= oldSelf"}, initial={"count": 5})
    d = submit(
        k, "admin", [{"op": "replace", "path": "/count", "value": 100}, {"op": "replace", "path": "/count", "value": 4}]
    )
    assert rejected(d)


def test_transition_rule_on_a_member_below_a_replaced_parent():
    k = board(
        {"at": "/notes/*", "rule": "self == oldSelf", "message": "notes are immutable"},
        initial={"notes": {"a": "orig"}},
    )
    d = submit(k, "admin", [{"op": "replace", "path": "/notes", "value": {"a": "changed"}}])
    reason = d.reason or ""
    assert rejected(d) and "notes are immutable" in reason and "/notes/a" in reason
    assert submit(k, "admin", [{"op": "replace", "path": "/notes", "value": {"a": "orig", "b": "new"}}]).accepted


def test_transition_rule_treats_an_inserted_array_item_as_new():
    """Inserting at /items/0 creates a new node; the item that used to be at index 0 is now at
    index 1, unchanged. A rule 'ids are immutable' must not compare the new item with it."""
    k = board({"at": "/items/*", "rule": "self.id == oldSelf.id", "message": "ids are immutable"})
    d = submit(k, "admin", [{"op": "add", "path": "/items/0", "value": {"id": 7, "text": "new"}}])
    assert d.accepted, d.reason
    assert [i["id"] for i in k.state["items"]] == [7, 1]


def test_python_invariant_sees_its_context_and_rejects_with_reason():
    bp = make_blueprint(SCHEMA, INITIAL)
    seen: list[InvariantContext] = []

    def no_shouting(ctx: InvariantContext) -> str | None:
        seen.append(ctx)
        return "no shouting" if ctx.value.isupper() else None

    bp.add_invariant("/notes/*", no_shouting)
    k = Kernel(bp)
    assert submit(k, "admin", [{"op": "add", "path": "/notes/a", "value": "hello"}]).accepted
    ctx = seen[-1]
    assert (ctx.path, ctx.value, ctx.had_old, ctx.old) == ("/notes/a", "hello", False, None)
    assert ctx.state["notes"] == {"a": "hello"}
    assert submit(k, "admin", [{"op": "replace", "path": "/notes/a", "value": "bye"}]).accepted
    ctx = seen[-1]
    assert (ctx.path, ctx.value, ctx.had_old, ctx.old) == ("/notes/a", "bye", True, "hello")
    d = submit(k, "admin", [{"op": "add", "path": "/notes/b", "value": "LOUD"}])
    reason = d.reason or ""
    assert rejected(d) and "'no_shouting'" in reason and "/notes/b" in reason and "no shouting" in reason
    assert check_all_invariants(bp, {"notes": {"x": "OK", "y": "fine"}})[0].path == "/notes/x"


def test_buggy_python_invariant_becomes_a_rejection():
    bp = make_blueprint(SCHEMA, INITIAL)

    def broken(ctx: InvariantContext) -> str | None:
        return 1 / 0  # type: ignore[return-value]

    bp.add_invariant("/notes/*", broken, name="broken")
    k = Kernel(bp)
    before = Snapshot.of(k)
    d = submit(k, "admin", [{"op": "add", "path": "/notes/a", "value": "x"}])
    assert rejected(d)
    reason = d.reason or ""
    assert "'broken'" in reason and "ZeroDivisionError" in reason
    after = Snapshot.of(k)
    assert (after.state, after.hash, after.version) == (before.state, before.hash, before.version)
    # a patch that does not touch /notes is unaffected
    assert submit(k, "admin", [{"op": "add", "path": "/count", "value": 1}]).accepted


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ("self.missing > 0", "could not be evaluated"),
        ("self.id / 0 == 1", "could not be evaluated"),
        ("self.id", "not bool"),
        ("self.text", "not bool"),
        ("self.text > 1", "could not be evaluated"),
    ],
)
def test_cel_evaluation_errors_become_rejections(rule, fragment):
    k = board({"at": "/items/*", "rule": rule}, initial={"items": []})
    before = Snapshot.of(k)
    d = submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": 1, "text": "a"}}])
    assert rejected(d), d.reason
    reason = d.reason or ""
    assert fragment in reason and "/items/0" in reason
    assert Snapshot.of(k).state == before.state


def test_check_all_invariants_lists_every_failure():
    bp = make_blueprint(
        SCHEMA,
        {"items": []},
        invariants=[{"name": "pos", "at": "/items/*", "rule": "self.id > 0"}, {"at": "/limit", "rule": "self < 5"}],
    )
    failures = check_all_invariants(bp, {"limit": 7, "items": [{"id": 1}, {"id": 0}, {"id": -1}]})
    assert sorted((f.name, f.path) for f in failures) == [
        ("invariant1", "/limit"),
        ("pos", "/items/1"),
        ("pos", "/items/2"),
    ]


def test_invariant_on_a_removed_node_is_not_evaluated():
    k = board({"at": "/items/*", "rule": "self.id > 0"})
    assert submit(k, "admin", [{"op": "remove", "path": "/items/0"}]).accepted
    assert k.state["items"] == []


def test_check_all_and_kernel_agree_on_a_submitted_state():
    k = Kernel(make_blueprint(SCHEMA, INITIAL, invariants=[{"at": "/items/*", "rule": "self.id < 100"}]))
    d = k.prepare(Proposal("admin", [{"op": "add", "path": "/items/-", "value": {"id": 100}}]))
    assert rejected(d)
    k.abort(d)
    assert check_all_invariants(k.blueprint, k.state) == []
    assert check_all_invariants(k.blueprint, {"items": [{"id": 100}]})


def test_invariant_location_with_an_append_token_is_rejected_or_enforced():
    """'-' names no existing node: an invariant at /items/- is either refused by the blueprint
    or enforced on appended items; it must not be accepted and then silently never run."""
    from slateboard.blueprint import BlueprintError

    try:
        k = board({"at": "/items/-", "rule": "self.id > 0"})
    except BlueprintError as exc:
        assert "/invariants/0/at" in {i.path for i in exc.issues}
        return
    d = submit(k, "admin", [{"op": "add", "path": "/items/-", "value": {"id": -1}}])
    assert rejected(d), "an invariant at /items/- was accepted but is never evaluated"


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        # item {v:5} moves to /items/1 and is lowered to 4: a violation
        (
            [{"op": "add", "path": "/items/0", "value": {"v": 9}}, {"op": "replace", "path": "/items/1/v", "value": 4}],
            "rejected",
        ),
        # item {v:1} moves to /items/0 and is raised to 3: allowed
        ([{"op": "remove", "path": "/items/0"}, {"op": "replace", "path": "/items/0/v", "value": 3}], "accepted"),
        # control without shifting: item {v:5} lowered to 4
        (
            [{"op": "add", "path": "/items/-", "value": {"v": 0}}, {"op": "replace", "path": "/items/0/v", "value": 4}],
            "rejected",
        ),
    ],
    ids=["insert-then-lower", "remove-then-raise", "append-then-lower"],
)
def test_transition_rule_follows_items_shifted_within_the_patch(patch, expected):
    """oldSelf must be the same item's value before the patch, even when an earlier op in the
    same patch shifted it to another index."""
    k = Kernel(
        make_blueprint(
            SCHEMA, {"items": [{"v": 5}, {"v": 1}]}, invariants=[{"at": "/items/*", "rule": "self.v >= oldSelf.v"}]
        )
    )
    d = submit(k, "admin", patch)
    assert d.record.outcome == expected, f"{d.record.outcome}: {d.reason}; state {k.state}"
