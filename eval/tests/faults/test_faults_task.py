"""The scripted task, its injections and the detector, without running any system."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slateboard.blueprint.templates import load_template, template_spec
from slateboard.kernel import Kernel, Proposal
from slateboard_eval.faults import wilson
from slateboard_eval.faults_task import (
    BAD_PATH_TYPE,
    CYCLE,
    FALSE_CLAIM,
    FAULTS,
    INVALID_JSON,
    MARKER_FAULTS,
    MAX_STEPS,
    STEPS,
    UNAUTHORISED,
    Script,
    clean_ops,
    clean_outcome,
    contains_marker,
    contaminated,
    corrupt,
    fold_board,
    make_injection,
    ops_to_update,
    patch_text,
    unsupported_verifications,
)


def board_after(steps: int, extra: list[dict[str, Any]] | None = None, author: str = "x") -> dict[str, Any]:
    """The folded board of the first ``steps`` clean replies, then ``extra`` as one more entry."""
    entries: list[tuple[str, str, Any]] = [
        (STEPS[i].worker, "contribution", patch_text(clean_ops(i))) for i in range(steps)
    ]
    if extra is not None:
        entries.append((author, "contribution", patch_text(extra)))
    return fold_board(entries)


def test_wilson_interval_matches_known_values() -> None:
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", table I,
    # method 3 (Wilson score, no continuity correction), and two textbook values.
    known = {
        (81, 263): (0.2553, 0.3662),
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0, 0.1611),
        (1, 29): (0.0061, 0.1718),
        (10, 100): (0.0552, 0.1744),
        (0, 200): (0.0, 0.0188),
    }
    for (k, n), interval in known.items():
        assert wilson(k, n) == pytest.approx(interval, abs=1e-4), (k, n)
    assert wilson(200, 200)[1] == 1.0
    for bad in ((1, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError):
            wilson(*bad)


def test_injections_are_deterministic_per_seed_and_cover_every_fault() -> None:
    for fault in FAULTS:
        a = [make_injection(fault, i, 7) for i in range(20)]
        assert a == [make_injection(fault, i, 7) for i in range(20)]
        assert a != [make_injection(fault, i, 8) for i in range(20)]
    with pytest.raises(ValueError, match="unknown fault"):
        make_injection("nope", 0, 0)
    assert {make_injection(FALSE_CLAIM, i, 0).step for i in range(60)} == {4, 5, 6}  # verifier steps only


def test_the_clean_trajectory_folds_into_the_clean_outcome_with_no_unsupported_claim() -> None:
    doc = board_after(len(STEPS))
    assert clean_outcome(doc)
    assert unsupported_verifications(doc) == []
    assert [c["status"] for c in doc["claims"]] == ["verified", "verified", "refuted"]
    assert not clean_outcome(board_after(len(STEPS) - 1))


def test_markers_are_unique_and_absent_from_clean_content() -> None:
    clean = board_after(len(STEPS))
    markers = [make_injection(f, i, 0).marker for f in MARKER_FAULTS for i in range(200)]
    assert len(set(markers)) == len(markers)
    assert not any(contains_marker(clean, m) for m in markers[:50])
    assert contains_marker({"a": [{"note" + markers[0]: 1}]}, markers[0])  # as a key
    assert contains_marker(["x", {"b": f"in {markers[1]} text"}], markers[1])  # inside a string
    with pytest.raises(ValueError):
        contains_marker(clean, "")


@pytest.mark.parametrize("number", range(0, 200, 7))
def test_invalid_json_never_parses_in_either_rendering_and_keeps_its_marker(number: int) -> None:
    inj = make_injection(INVALID_JSON, number, 0)
    state = board_after(inj.step)
    for text in (patch_text(list(inj.ops)), json.dumps(ops_to_update(list(inj.ops), state))):
        broken = corrupt(text, inj.marker, inj.variant)
        assert inj.marker in broken
        with pytest.raises(ValueError):
            json.loads(broken)


@pytest.mark.parametrize("fault", [BAD_PATH_TYPE, UNAUTHORISED])
def test_structural_faults_contaminate_a_board_that_checks_nothing(fault: str) -> None:
    for i in range(40):
        inj = make_injection(fault, i, 0)
        doc = board_after(inj.step, list(inj.ops), author=STEPS[inj.step].worker)
        assert contaminated(inj, doc), inj
        assert not contaminated(inj, board_after(len(STEPS)))


def test_every_false_claim_variant_is_unsupported_on_a_plain_board_and_refused_by_the_template() -> None:
    spec = template_spec("claim_verification")
    names = {inv.get("name") for inv in spec["invariants"]}
    assert {"verified needs linked supporting evidence", "linked evidence exists and is about the claim"} <= names
    blueprint = load_template("claim_verification")
    seen = set()
    for i in range(40):
        inj = make_injection(FALSE_CLAIM, i, 0)
        seen.add(inj.variant)
        doc = board_after(inj.step, list(inj.ops), author="verifier")
        assert inj.target in unsupported_verifications(doc)
        assert contaminated(inj, doc)
        kernel = Kernel(blueprint)
        for k in range(inj.step):
            assert kernel.submit(Proposal(STEPS[k].worker, clean_ops(k))).accepted
        decision = kernel.submit(Proposal("verifier", [dict(op) for op in inj.ops]))
        assert not decision.accepted and decision.stage == "invariants", (inj.variant, decision.reason)
    assert seen == {"no_evidence", "missing_evidence", "other_claims_evidence", "refuting_evidence"}


def test_the_template_refuses_a_claim_added_already_settled() -> None:
    kernel = Kernel(load_template("claim_verification"))
    born = {"id": "c1", "text": "x", "status": "unverifiable", "evidence": []}
    decision = kernel.submit(Proposal("extractor", [{"op": "add", "path": "/claims/-", "value": born}]))
    assert decision.stage == "invariants" and "settled" in (decision.reason or "")


def test_step_budget_is_the_templates() -> None:
    assert template_spec("claim_verification")["limits"]["max_steps"] == MAX_STEPS


def test_ops_to_update_speaks_langgraphs_channels() -> None:
    state = board_after(4)
    assert ops_to_update(clean_ops(5), state) == {"claims": [{"id": "c2", "evidence": ["e2"], "status": "verified"}]}
    assert ops_to_update(clean_ops(1), state) == {"evidence": [clean_ops(1)[0]["value"]]}
    assert ops_to_update([{"op": "replace", "path": "/claims/9/status", "value": "x"}], state) == {
        "claims": [{"id": "c10", "status": "x"}]
    }
    assert ops_to_update([{"op": "test", "path": "/document", "value": "d"}], state) == {}


def test_script_gives_the_fault_once_then_the_clean_reply_and_cycles_forever() -> None:
    inj = make_injection(UNAUTHORISED, 0, 0)
    script = Script(inj)
    step = STEPS[inj.step]
    assert script.reply(patch_text, step) == patch_text(list(inj.ops))
    assert script.reply(patch_text, step) == patch_text(clean_ops(inj.step))
    assert script.fault_call == 1
    cycle = next(make_injection(CYCLE, i, 0) for i in range(50) if make_injection(CYCLE, i, 0).step >= 2)
    script = Script(cycle)
    picks = [script.next_worker() for _ in range(cycle.step)]
    assert picks == [s.worker for s in STEPS[: cycle.step]]
    for _ in range(3 * len(STEPS)):
        assert script.next_worker() is not None
        script.reply(patch_text)
    assert script.onset == 1 and script.cycling
