"""The built-in board's invariants evaluated natively (issue 14): ``compile_blackboard`` gives the
same decisions, stages and reasons as the CEL rules the board stores, on every proposal."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from slateboard.blueprint.compile import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.team._board import blackboard_blueprint, compile_blackboard, make_entry

NAMES = ["a", "critic", "x/y~z"]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _spec() -> dict[str, Any]:
    spec = blackboard_blueprint(NAMES)
    problem = make_entry("e1", "user", "the problem", kind="problem", at=NOW)
    spec["initial_state"]["task"] = "the problem"
    spec["initial_state"]["public"] = [problem]
    spec["initial_state"]["signatures"]["user"] = "e1"
    return spec


def _token(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _random_proposal(rng: random.Random, step: int) -> Proposal:
    """A proposal mixing valid appends with every way of breaking the board's invariants:
    forged authors, unsigned or cross-signed entries, reused ids, dangling and self references,
    reserved kinds, two entries in one patch, notes in the wrong scratchpad."""
    worker = rng.choice([*NAMES, "__system"])
    author_name = "system" if worker == "__system" else worker
    ids = [f"e{i}" for i in range(1, step + 3)] + ["zz", "e1"]
    entries = []
    ops: list[dict[str, Any]] = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        entry_id = rng.choice([f"e{step + 2}", f"n{step}", *ids[-4:], rng.choice(ids)])
        author = author_name if rng.random() < 0.8 else rng.choice([*NAMES, "user", "system"])
        kind = rng.choice(["contribution"] * 6 + ["answer", "problem", "error", "critique"])
        refs = rng.sample(ids, k=rng.choice([0, 0, 1, 2])) + ([entry_id] if rng.random() < 0.05 else [])
        entries.append(make_entry(entry_id, author, f"text {step}", kind=kind, references=refs, at=NOW))
        ops.append({"op": "add", "path": "/public/-", "value": entries[-1]})
    signer = author_name if rng.random() < 0.85 else rng.choice([*NAMES, "system"])
    if rng.random() < 0.9:
        value = entries[-1]["id"] if rng.random() < 0.85 else rng.choice(ids)
        ops.append({"op": "add", "path": f"/signatures/{_token(signer)}", "value": value})
    if worker != "__system" and rng.random() < 0.2:
        pad = worker if rng.random() < 0.8 else rng.choice(NAMES)
        note_author = worker if rng.random() < 0.8 else rng.choice(NAMES)
        note = make_entry(f"{pad}.n{step}", note_author, "note", kind="note", at=NOW)
        ops.append({"op": "add", "path": f"/private/{_token(pad)}/-", "value": note})
    rng.shuffle(ops) if rng.random() < 0.1 else None
    return Proposal(worker, ops)


def test_native_invariants_decide_every_proposal_as_the_stored_cel_rules() -> None:
    rng = random.Random(1405)
    cel = Kernel(compile_blueprint(_spec()))
    native = Kernel(compile_blackboard(_spec()))
    outcomes: dict[str, int] = {}
    for step in range(600):
        proposal = _random_proposal(rng, step)
        a, b = cel.submit(proposal), native.submit(proposal)
        assert (a.accepted, a.stage, a.reason) == (b.accepted, b.stage, b.reason), f"step {step}: {proposal.patch}"
        assert cel.state_hash == native.state_hash
        key = "accepted" if a.accepted else f"{a.stage}: {(a.reason or '').split(':')[0]}"
        outcomes[key] = outcomes.get(key, 0) + 1
    # The run exercised acceptance and every root-reading invariant's rejection.
    reasons = " | ".join(outcomes)
    assert outcomes.get("accepted", 0) >= 50
    for name in ("signed by their author", "ids are unique", "references exist"):
        assert name in reasons, f"no proposal was rejected by {name!r}: {outcomes}"


def test_the_index_follows_rejections_restores_and_a_second_board() -> None:
    compiled = compile_blackboard(_spec())
    kernel = Kernel(compiled)

    def post(worker: str, entry_id: str, refs: tuple[str, ...] = ()) -> Any:
        entry = make_entry(entry_id, worker, "t", references=refs, at=NOW)
        ops = [
            {"op": "add", "path": "/public/-", "value": entry},
            {"op": "add", "path": f"/signatures/{worker}", "value": entry_id},
        ]
        return kernel.submit(Proposal(worker, ops))

    assert post("a", "e2").accepted
    assert post("a", "e3", ("e9",)).stage == "invariants"  # undone: e3 is not on the board
    assert post("critic", "e3", ("e2",)).accepted  # so e3 is free, and e2 exists
    assert post("a", "e3").stage == "invariants"  # now it is taken
    # The same compiled blueprint on another kernel (another list) is indexed afresh.
    other = Kernel(compiled)
    entry = make_entry("e2", "a", "t", references=["e1"], at=NOW)
    ops = [{"op": "add", "path": "/public/-", "value": entry}, {"op": "add", "path": "/signatures/a", "value": "e2"}]
    assert other.submit(Proposal("a", ops)).accepted
    assert post("a", "e4", ("e3",)).accepted


def test_only_the_built_in_rules_are_swapped_and_the_stored_spec_is_unchanged() -> None:
    plain, fast = compile_blueprint(_spec()), compile_blackboard(_spec())
    assert fast.spec.to_json() == plain.spec.to_json() and fast.digest == plain.digest
    swapped = [inv.name for inv in fast.invariants if inv.func is not None]
    assert swapped == [
        "public entries are signed by their author",
        "public entry ids are unique",
        "references exist",
    ]
    assert all(not inv.check_every for inv in fast.invariants)
    edited = _spec()
    edited["invariants"][1]["rule"] = "root.public.filter(o, o.id == self.id).size() <= 2"
    kept = compile_blackboard(edited)
    assert [inv.name for inv in kept.invariants if inv.func is not None] == [
        "public entries are signed by their author",
        "references exist",
    ]
