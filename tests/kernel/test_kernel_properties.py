"""Property tests over a family of blueprints, states and patch sequences.

For random blueprints (a small family of schema shapes, contracts and invariants) and random
proposal sequences (valid and invalid ops of all six kinds, as Python lists, text and bytes,
some from stale views, some from unknown workers), independent oracles check that:

* no committed state violates the schema (``jsonschema_rs.validator_for`` on the whole state,
  independent of the kernel's per-location validation), a write contract, or an invariant
  (``check_all_invariants`` on the whole state, plus the transition rule checked by hand);
* rejected proposals change neither the state value nor its hash nor the version;
* the incremental state hash always equals the hash computed from scratch;
* replay (fast and revalidating) reproduces every state the kernel went through;
* flipping any byte of a stored record makes replay name that record;
* the kernel decides exactly as a reference model (RFC 6902 on a copy + full validation).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
from hypothesis import assume, given, note
from hypothesis import strategies as st
from kernel_testkit import (
    ALL_OPS,
    COMPONENTS,
    DEFS,
    Family,
    RefError,
    Session,
    Snapshot,
    Step,
    canon,
    draw_patch,
    encode_patch,
    families,
    full_validator,
    kernel_settings,
    ref_apply,
    ref_covers,
    ref_parse_pointer,
    ref_reads,
    run_session,
)

from slateboard.kernel import Kernel, KernelBusy, Proposal, Record, replay, state_hash
from slateboard.kernel.invariants import check_all_invariants


def _describe(session: Session, step: Step) -> str:
    rec = step.decision.record
    return f"{rec.worker}: {rec.patch} -> {rec.outcome}/{rec.stage}: {rec.reason}"


# -- soundness -----------------------------------------------------------------------------


@given(families(), st.data())
@kernel_settings(250)
def test_committed_states_satisfy_schema_contracts_and_invariants(fam, data):
    validator = full_validator(fam.schema)
    writes = {"admin": ["/**"], "editor": fam.editor_writes}
    transition = any(inv["name"] == "count-monotonic" for inv in fam.invariants)

    def check(session: Session, step: Step) -> None:
        rec = step.decision.record
        if rec.outcome != "accepted":
            return
        note(_describe(session, step))
        state = json.loads(step.after)
        errors = [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in validator.iter_errors(state)]
        assert not errors, (
            f"committed state violates the schema: {errors}\nstate: {step.after!r}\nbefore: {step.before!r}"
        )
        for op in orjson.loads(rec.patch or "[]"):
            if op["op"] == "test":
                continue
            assert rec.worker in writes
            assert any(ref_covers(p, op["path"]) for p in writes[rec.worker]), f"{op} outside {writes[rec.worker]}"
            if op["op"] == "move":
                assert any(ref_covers(p, op["from"]) for p in writes[rec.worker]), f"move source of {op} not writable"
            assert op["op"] in (ALL_OPS if rec.worker == "admin" else fam.editor_ops)
        failures = check_all_invariants(session.bp, state)
        assert not failures, f"committed state violates invariants: {failures}\nstate: {step.after!r}"
        if transition:
            old = json.loads(step.before)
            if isinstance(old.get("count"), int) and isinstance(state.get("count"), int):
                assert state["count"] >= old["count"], "count-monotonic transition rule violated"

    note(repr(fam))
    run_session(data, fam, steps=10, on_step=check)


@given(families(), st.data())
@kernel_settings(120)
def test_rejections_change_nothing_and_hashes_are_exact(fam, data):
    def check(session: Session, step: Step) -> None:
        rec = step.decision.record
        assert step.scratch_hash == step.after_hash, (
            "incremental state hash differs from the hash computed from scratch"
        )
        assert rec.state_before == step.before_hash and rec.state_after == step.after_hash
        assert rec.hash == rec.compute_hash()
        if rec.outcome == "accepted":
            assert step.version_after == step.version_before + 1 == rec.version
            # equal only for a blind write of the value already there (issue 29)
            assert (step.after != step.before) == (step.after_hash != step.before_hash)
        else:
            note(_describe(session, step))
            assert step.after == step.before, f"{rec.outcome}/{rec.stage} changed the state value"
            assert step.after_hash == step.before_hash
            assert step.version_after == step.version_before == rec.version
            assert rec.stage != "internal", rec.reason
            if rec.outcome == "rejected":
                assert rec.stage is not None and rec.reason

    note(repr(fam))
    session = run_session(data, fam, steps=10, on_step=check)
    assert session.kernel.state_hash == state_hash(session.kernel.state)


# -- replay --------------------------------------------------------------------------------


@given(families(), st.data(), st.booleans())
@kernel_settings(80)
def test_replay_reproduces_every_state(fam, data, revalidate):
    note(repr(fam))
    session = run_session(data, fam, steps=10)
    live = {s.decision.record.seq: (s.after, s.after_hash) for s in session.steps}
    seen: dict[int, tuple[bytes, str]] = {}
    report = replay(
        session.bp,
        session.initial,
        session.records,
        revalidate=revalidate,
        on_state=lambda rec, state: seen.__setitem__(rec.seq, (canon(state), state_hash(state))),
    )
    for s in session.steps:
        note(_describe(session, s))
    assert report.ok, str(report)
    assert report.checked == len(session.records)
    assert seen == live
    assert report.state_hash == session.kernel.state_hash and report.version == session.kernel.version


@given(families(), st.data())
@kernel_settings(100)
def test_flipping_any_byte_of_a_stored_record_is_detected_at_that_record(fam, data):
    note(repr(fam))
    session = run_session(data, fam, steps=5, json_only=True)
    records = session.records
    # only logs that replay cleanly as they are (test_replay_reproduces_every_state covers the rest)
    assume(all(replay(session.bp, session.initial, records, revalidate=r).ok for r in (False, True)))
    index = data.draw(st.integers(0, len(records) - 1), label="record")
    raw = bytearray(records[index].to_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1), label="byte")
    mask = data.draw(st.integers(1, 255), label="xor")
    raw[pos] ^= mask
    note(f"record {index}: ...{bytes(raw[max(0, pos - 20) : pos + 10])!r}...")
    try:
        altered = Record.from_bytes(bytes(raw))
    except Exception:
        return  # no longer a record: detected when it is read
    log = [*records[:index], altered, *records[index + 1 :]]
    for revalidate in (False, True):
        report = replay(session.bp, session.initial, log, revalidate=revalidate)
        assert report.bad_seq == records[index].seq, f"revalidate={revalidate}: {report}"


# -- the reference model -------------------------------------------------------------------


def reference_outcome(session: Session, worker: str, patch: Any, before: Any) -> tuple[str, Any]:
    """What the kernel must decide for a JSON patch from a known worker, with no view version."""
    fam, limits = session.fam, session.fam.limits
    if isinstance(patch, (str, bytes)):
        patch = json.loads(patch)
    size = len(canon(patch))
    if size > limits["max_patch_bytes"]:
        return "rejected", f"{size} bytes"
    if not isinstance(patch, list) or not patch or len(patch) > limits["max_ops"]:
        return "rejected", "shape"
    spec = fam.workers()[worker]
    for op in patch:
        if not isinstance(op, dict) or op.get("op") not in ALL_OPS:
            return "rejected", "malformed"
        try:
            ref_parse_pointer(op.get("path"))
            if op["op"] in ("move", "copy"):
                ref_parse_pointer(op.get("from"))
        except RefError:
            return "rejected", "pointer"
        if op["op"] in ("add", "replace", "test") and "value" not in op:
            return "rejected", "no value"
    for op in patch:
        if op["op"] not in spec["ops"]:
            return "rejected", "op not granted"
        if op["op"] == "test":
            # Read isolation (issue 29): a test reads its path, so the read contract must cover it.
            ok = any(ref_reads(p, op["path"]) for p in spec["reads"])
        else:
            ok = any(ref_covers(p, op["path"]) for p in spec["writes"])
            if op["op"] == "move":
                ok = ok and any(ref_covers(p, op["from"]) for p in spec["writes"])
            if op["op"] in ("move", "copy"):
                ok = ok and any(ref_reads(p, op["from"]) for p in spec["reads"])
        if not ok:
            return "rejected", "unauthorised"
    try:
        after = ref_apply(before, patch)
    except RefError as exc:
        return "rejected", str(exc)
    if not full_validator(fam.schema).is_valid(after):
        return "rejected", "schema"
    if check_all_invariants(session.bp, after):
        return "rejected", "invariants"
    # A blind write (a path the worker may not read) is a change whatever the value (issue 29).
    blind = any(op["op"] != "test" and not any(ref_reads(p, op["path"]) for p in spec["reads"]) for op in patch)
    return ("noop" if canon(after) == canon(before) and not blind else "accepted"), after


@given(families(transition=False), st.data())
@kernel_settings(250)
def test_kernel_decides_like_the_reference_model(fam, data):
    """Accepts exactly what RFC 6902 on a copy + full schema + all invariants accept."""
    note(repr(fam))

    def check(session: Session, step: Step) -> None:
        rec = step.decision.record
        before = json.loads(step.before)
        expected, detail = reference_outcome(session, rec.worker or "", step.proposal.patch, copy.deepcopy(before))
        note(f"{_describe(session, step)} | reference: {expected} ({detail if expected == 'rejected' else ''})")
        assert rec.outcome == expected, (
            f"kernel {rec.outcome}/{rec.stage} ({rec.reason}), reference {expected} ({detail})"
        )
        if expected == "accepted":
            assert step.after == canon(detail)

    run_session(data, fam, steps=8, stale=False, json_only=True, on_step=check)


def test_reference_model_sanity():
    """The oracle itself: a valid append is accepted and an invalid one refused."""
    fam = Family(
        components=["items"],
        required=["items"],
        closed=True,
        editor_writes=["/items/-"],
        editor_reads=[],
        editor_ops=["add", "replace", "test"],
        invariants=[],
        py_invariants=[],
        limits={"max_ops": 8, "max_patch_bytes": 4096, "max_depth": 16},
        initial={"items": []},
        schema={
            "type": "object",
            "properties": {"items": COMPONENTS["items"]["schema"]},
            "required": ["items"],
            "additionalProperties": False,
            "$defs": DEFS,
        },
    )
    bp = fam.blueprint()
    session = Session(fam, bp, bp.initial_state(), Kernel(bp), [])
    good = [{"op": "add", "path": "/items/-", "value": {"id": 1, "status": "open"}}]
    bad = [{"op": "add", "path": "/items/-", "value": {"id": -1, "status": "open"}}]
    assert reference_outcome(session, "editor", good, {"items": []})[0] == "accepted"
    assert reference_outcome(session, "editor", bad, {"items": []})[0] == "rejected"
    assert (
        reference_outcome(session, "editor", [{"op": "replace", "path": "/items", "value": []}], {"items": []})[0]
        == "rejected"
    )
    assert session.kernel.submit(Proposal("editor", good)).accepted


@given(families(), st.data())
@kernel_settings(60)
def test_prepare_then_abort_restores_everything_exactly(fam, data):
    """Interleave random submits with prepare+abort of random proposals: every abort leaves
    state, hash, version, seq and chain exactly as before, and the kernel decides the aborted
    proposal identically when it is submitted afterwards."""
    note(repr(fam))
    bp = fam.blueprint()
    k = Kernel(bp)
    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        worker = data.draw(st.sampled_from(["admin", "editor"]), label="worker")
        proposal = Proposal(worker, encode_patch(data, draw_patch(data, k.state, fam, worker)))
        before = Snapshot.of(k)
        decision = k.prepare(proposal)
        try:
            k.prepare(proposal)
            raise AssertionError("a second prepare did not raise KernelBusy")
        except KernelBusy:
            pass
        k.abort(decision)
        after = Snapshot.of(k)
        assert after == before, f"abort of {decision.record.outcome}/{decision.stage} did not restore"
        assert k.state_hash == state_hash(k.state)
        again = k.submit(proposal)
        assert again.record == decision.record
