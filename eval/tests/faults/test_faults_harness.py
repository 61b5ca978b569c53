"""The fault-injection harness on every system: slateboard's guarantees, and a detector that
really detects (peers and a deliberately unprotected slateboard board are contaminated)."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from slateboard.blueprint.compile import compile_blueprint
from slateboard.blueprint.templates import template_spec
from slateboard.stores import open_store
from slateboard_eval import faults as faults_module
from slateboard_eval.faults import WINDOW, Cell, SuiteReport, render_table, run_suite
from slateboard_eval.faults_systems import (
    SYSTEMS,
    missing,
    run_json_control,
    run_langgraph,
    run_loomflow,
    run_slateboard,
)
from slateboard_eval.faults_task import (
    BAD_PATH_TYPE,
    CYCLE,
    FALSE_CLAIM,
    FAULTS,
    INVALID_JSON,
    MARKER_FAULTS,
    UNAUTHORISED,
    clean_outcome,
    contaminated,
    make_injection,
    unsupported_verifications,
)

N = 8
SEED = 3


@pytest.fixture(scope="module")
def report() -> SuiteReport:
    """One suite over every system that imports here, N injections of every fault."""
    return asyncio.run(run_suite(N, SEED, SYSTEMS, FAULTS))


def cell(report: SuiteReport, system: str, fault: str) -> Cell:
    if system in report.skipped:
        pytest.skip(f"{system} is not importable here: {report.skipped[system]}")
    found = report.cells[(system, fault)]
    assert found.errors == 0, found.first_error
    assert found.n == N
    return found


@pytest.mark.parametrize("fault", MARKER_FAULTS)
def test_slateboard_keeps_structural_faults_out_of_the_committed_state(report: SuiteReport, fault: str) -> None:
    c = cell(report, "slateboard", fault)
    assert c.k == 0
    # Every faulty proposal was decided by the kernel (logged), none was committed whole.
    assert sum(c.decisions.values()) == N
    assert all(d.startswith("rejected:") or d == "accepted" for d in c.decisions)


def test_slateboard_refuses_false_claims_at_the_invariants_and_still_finishes(report: SuiteReport) -> None:
    c = cell(report, "slateboard", FALSE_CLAIM)
    assert c.k == 0
    assert dict(c.decisions) == {"rejected:invariants": N}
    assert c.completed == N  # the verifier, told why, settles the claim on its evidence


@pytest.mark.parametrize("fault", [BAD_PATH_TYPE, UNAUTHORISED])
def test_slateboard_recovers_the_clean_result_after_a_rejected_fault(report: SuiteReport, fault: str) -> None:
    assert cell(report, "slateboard", fault).completed == N


def test_slateboard_halts_every_cycle_within_the_window(report: SuiteReport) -> None:
    c = cell(report, "slateboard", CYCLE)
    assert c.k == N
    assert max(c.steps_after_onset) <= WINDOW


def test_json_control_refuses_only_what_does_not_parse(report: SuiteReport) -> None:
    assert cell(report, "json_control", INVALID_JSON).k == 0
    assert dict(cell(report, "json_control", INVALID_JSON).decisions) == {"refused": N}
    for fault in (BAD_PATH_TYPE, UNAUTHORISED, FALSE_CLAIM):
        assert cell(report, "json_control", fault).k == N, fault
    assert cell(report, "json_control", CYCLE).k == 0


def test_plain_blackboard_takes_every_fault(report: SuiteReport) -> None:
    for fault in (INVALID_JSON, BAD_PATH_TYPE, UNAUTHORISED, FALSE_CLAIM):
        assert cell(report, "loomflow", fault).k == N, fault
    c = cell(report, "loomflow", CYCLE)
    assert c.k == 0
    assert min(c.steps_after_onset) > WINDOW


def test_langgraph_commits_what_its_nodes_return(report: SuiteReport) -> None:
    assert cell(report, "langgraph", FALSE_CLAIM).k == N
    assert cell(report, "langgraph", BAD_PATH_TYPE).k > 0
    assert cell(report, "langgraph", UNAUTHORISED).k > 0
    # LangChain's JSON parser repairs a truncated reply (and commits it); it refuses the others.
    for variant, (k, n) in cell(report, "langgraph", INVALID_JSON).variants.items():
        assert k == (n if variant == "truncated" else 0), variant
    assert cell(report, "langgraph", CYCLE).k == 0


def unprotected() -> Any:
    """The template with its protections removed: any JSON object, no invariants, every worker
    may write anywhere."""
    spec = template_spec("claim_verification")
    spec["schema"] = {"type": "object", "properties": {"document": {"type": "string"}}}
    spec["invariants"] = []
    for worker in spec["workers"].values():
        worker["writes"] = ["/**"]
        worker["ops"] = ["add", "replace", "test"]
    return compile_blueprint(spec)


async def test_the_detector_finds_contamination_on_an_unprotected_slateboard_board() -> None:
    store = await open_store("memory://")
    blueprint = unprotected()
    try:
        for fault in (UNAUTHORISED, FALSE_CLAIM):
            for i in range(3):
                inj = make_injection(fault, i, SEED)
                out = await run_slateboard(inj, store, blueprint=blueprint)
                assert contaminated(inj, out.committed), (fault, inj.variant)
                assert out.decision == "accepted"
        inj = next(
            j for j in (make_injection(BAD_PATH_TYPE, i, SEED) for i in range(50)) if j.variant == "unknown_member"
        )
        out = await run_slateboard(inj, store, blueprint=blueprint)
        assert contaminated(inj, out.committed)
    finally:
        await store.close()


async def test_clean_runs_are_clean_on_every_system() -> None:
    store = await open_store("memory://")
    try:
        outcomes = {"slateboard": await run_slateboard(None, store), "json_control": await run_json_control(None)}
    finally:
        await store.close()
    if missing("loomflow") is None:
        outcomes["loomflow"] = await run_loomflow(None)
    if missing("langgraph") is None:
        outcomes["langgraph"] = await run_langgraph(None)
    marker = make_injection(UNAUTHORISED, 0, SEED)
    for system, out in outcomes.items():
        assert clean_outcome(out.committed), system
        assert unsupported_verifications(out.committed) == [], system
        assert not contaminated(marker, out.committed), system
        assert out.calls == 8 and out.fault_call is None, system


async def test_a_missing_peer_is_skipped_with_its_reason_and_slateboard_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        faults_module, "missing", lambda s: f"{s} is not installed (test)" if s in ("loomflow", "langgraph") else None
    )
    lines: list[str] = []
    rep = await run_suite(1, SEED, SYSTEMS, [INVALID_JSON], progress=lines.append)
    assert rep.systems == ["slateboard", "json_control"]
    assert rep.skipped == {
        "loomflow": "loomflow is not installed (test)",
        "langgraph": "langgraph is not installed (test)",
    }
    assert rep.cells[("slateboard", INVALID_JSON)].n == 1
    assert "loomflow skipped: loomflow is not installed (test)" in lines
    out = io.StringIO()
    render_table(rep, out)
    assert "langgraph skipped: langgraph is not installed (test)" in out.getvalue()
    assert rep.to_json()["skipped"]["loomflow"] == "loomflow is not installed (test)"
