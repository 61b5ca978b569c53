"""The kernel's guard stage: decided from the verdicts in the proposal's meta, never by calling a
guard; a missing verdict rejects (``unguarded``, for the engine); a refusal is a rejection at
``guard:<name>`` whose reason a worker that cannot read the whole state gets only from a guard
that shares it; plain replay checks that a record's outcome follows from its verdicts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from guards_testkit import board

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.kernel.guardstage import GUARDS_META, guard_problem, guard_usages
from slateboard.kernel.replay import replay

NOTE = [{"op": "add", "path": "/notes/-", "value": "hi"}]


def _kernel(**guard: Any) -> Kernel:
    spec = {"name": "g", "function": "m:f", **guard}
    return Kernel(compile_blueprint(board([spec, {"name": "h", "function": "m:h"}])))


def _verdicts(*oks: bool) -> dict[str, Any]:
    names = ["g", "h"]
    return {GUARDS_META: [{"name": names[i], "ok": ok, "reason": f"why {i}"} for i, ok in enumerate(oks)]}


def test_without_verdicts_the_kernel_rejects_and_says_it_is_unguarded() -> None:
    k = _kernel()
    d = k.prepare(Proposal("w", NOTE))
    assert d.unguarded and d.record.outcome == "rejected" and d.record.stage == "guard:g"
    assert k.state["notes"] == []  # nothing applied
    k.abort(d)


def test_verdicts_decide_the_stage() -> None:
    k = _kernel()
    d = k.submit(Proposal("w", NOTE, meta=_verdicts(True, False)))
    assert (d.record.outcome, d.record.stage, d.unguarded) == ("rejected", "guard:h", False)
    assert k.state["notes"] == [] and k.version == 0
    d = k.submit(Proposal("w", NOTE, meta=_verdicts(True, True)))
    assert d.accepted and k.state["notes"] == ["hi"]
    assert d.record.meta[GUARDS_META] == _verdicts(True, True)[GUARDS_META]  # logged


def test_a_missing_verdict_after_the_guards_ran_is_a_rejection_not_unguarded() -> None:
    k = _kernel()
    d = k.submit(Proposal("w", NOTE, meta=_verdicts(True)))
    assert d.record.stage == "guard:h" and not d.unguarded and "no verdict" in (d.record.reason or "")


def test_a_refusal_reason_is_withheld_from_a_worker_that_cannot_read_everything() -> None:
    k = _kernel()
    d = k.submit(Proposal("w", NOTE, meta=_verdicts(False)))
    assert "why 0" not in (d.record.reason or "") and "withheld" in (d.record.reason or "")
    assert d.record.meta[GUARDS_META][0]["reason"] == "why 0"  # kept for auditors
    shared = _kernel(shares_reason=True).submit(Proposal("w", NOTE, meta=_verdicts(False)))
    assert shared.record.reason == "why 0"


def test_a_guard_for_other_workers_needs_no_verdict() -> None:
    spec = board([{"name": "g", "function": "m:f", "workers": ["v"]}])
    spec["workers"]["v"] = {"reads": ["/notes"], "writes": ["/notes/-"]}
    k = Kernel(compile_blueprint(spec))
    assert k.submit(Proposal("w", NOTE)).accepted
    assert k.submit(Proposal("v", NOTE)).record.stage == "guard:g"


def test_earlier_stages_and_no_ops_need_no_verdict() -> None:
    k = _kernel()
    assert k.submit(Proposal("w", [{"op": "add", "path": "/secret", "value": "x"}])).record.stage == "authorise"
    assert k.submit(Proposal("w", [{"op": "test", "path": "/notes", "value": []}])).record.outcome == "noop"


def test_replay_re_uses_verdicts_and_catches_an_outcome_they_do_not_support() -> None:
    bp = compile_blueprint(board([{"name": "g", "function": "m:f"}]))
    k = Kernel(bp)
    ok = {GUARDS_META: [{"name": "g", "ok": True, "reason": ""}]}
    no = {GUARDS_META: [{"name": "g", "ok": False, "reason": "no"}]}
    recs = [k.submit(Proposal("w", NOTE, meta=m)).record for m in (ok, no, ok)]
    assert replay(bp, bp.initial_state(), recs).ok
    assert replay(bp, bp.initial_state(), recs, revalidate=True).ok
    terms = bp.guard_terms
    assert [guard_problem(r, terms) for r in recs] == [None, None, None]
    # a verdict flipped and the chain re-sealed from there: the hashes hold, the verdicts do not
    flipped = replace(recs[0], meta=no).sealed()
    assert "logs a refusal" in (guard_problem(flipped, terms) or "")
    resealed = [flipped]
    for r in recs[1:]:
        resealed.append(replace(r, prev=resealed[-1].hash).sealed())
    report = replay(bp, bp.initial_state(), resealed)
    assert not report.ok and report.bad_seq == 1 and "guard verdicts" in (report.problem or "")
    let_through = replace(recs[1], meta=ok).sealed()
    assert "lets the patch through" in (guard_problem(let_through, terms) or "")
    bare = replace(recs[0], meta={}).sealed()
    assert "has no verdict" in (guard_problem(bare, terms) or "")


def test_guard_usages_read_only_well_formed_usage() -> None:
    meta = {
        GUARDS_META: [
            {"name": "a", "model": "m", "usage": {"tokens_in": 3, "tokens_out": 2}},
            {"name": "b", "usage": {"tokens_in": "many"}},
            {"name": "c"},
        ]
    }
    (only,) = guard_usages(meta)
    assert only[0] == "m" and (only[1].tokens_in, only[1].tokens_out) == (3, 2)
    assert guard_usages({}) == [] and guard_usages({GUARDS_META: "x"}) == []
