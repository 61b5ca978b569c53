"""The built-in templates: each compiles, starts from a start rule, has done and answer, runs end to
end with the Runner and scripted LLM workers, and its invariants hold the board to its rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.blueprint.templates import list_templates, load_template, template_spec, template_text
from slateboard.kernel import Kernel, Proposal, replay
from slateboard.models import ScriptedModel
from slateboard.runtime import Runner, RunResult, create_board
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.workers import LLMWorker


def patch(*ops: dict[str, Any]) -> str:
    """A model reply holding a patch, as LLM workers expect it."""
    return json.dumps({"patch": list(ops)})


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def replace(path: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


@pytest.fixture
async def store() -> Any:
    s = await open_store("memory://")
    yield s
    await s.close()


async def run_template(
    store: Store,
    bp: CompiledBlueprint,
    inputs: dict[str, Any],
    scripts: dict[str, list[str]],
    functions: dict[str, Any] | None = None,
) -> tuple[RunResult, dict[str, ScriptedModel]]:
    board = await create_board(store, bp, inputs=inputs)
    models = {name: ScriptedModel(replies) for name, replies in scripts.items()}
    workers = {name: LLMWorker(bp, name, model) for name, model in models.items()}
    result = await Runner(store, board, workers=workers, functions=functions).run()
    loaded = await store.load_board(board)
    records = await store.read_records(board)
    report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True)
    assert report.ok, str(report)
    return result, models


def test_templates_are_listed_and_each_is_runnable_on_its_own() -> None:
    names = list_templates()
    assert names == ["claim_verification", "investigation", "retention", "text_actor"]
    for name in names:
        bp = load_template(name)
        assert bp.spec.name == name
        assert any(r.spec.on.op == "start" for r in bp.rules), name
        assert bp.done is not None and bp.spec.answer is not None, name
        answer_tokens = tuple(bp.spec.answer.strip("/").split("/"))
        assert any(c.may_write(answer_tokens) for c in bp.workers.values()), name
        assert template_spec(name)["name"] == name and f"name: {name}" in template_text(name)
    # Each load is a fresh blueprint: a Python invariant added to one does not leak.
    one = load_template("investigation")
    one.add_invariant("", lambda ctx: None)
    assert load_template("investigation").extra_invariants == []
    with pytest.raises(KeyError, match=r"unknown template 'nope'.*investigation"):
        load_template("nope")


async def test_investigation_runs_and_support_is_evidence_gated(store: Store) -> None:
    bp = load_template("investigation")
    scripts = {
        "hypothesis": [
            patch(add("/hypotheses/-", {"id": "h1", "text": "A price increase"})),
            patch(add("/hypotheses/-", {"id": "h2", "text": "An onboarding bug"})),
        ],
        "evidence": [
            patch(add("/evidence/-", {"id": "ev1", "hypothesis": "h1", "stance": "refutes", "text": "Prices flat"})),
            patch(
                add(
                    "/evidence/-",
                    {"id": "ev2", "hypothesis": "h2", "stance": "supports", "text": "Signup errors x3 after 3 March"},
                )
            ),
        ],
        "critic": [
            # Judging h1 supported on refuting evidence is rejected; the retry carries the reason.
            patch(add("/critiques/-", {"hypothesis": "h1", "verdict": "supported", "text": "Plausible"})),
            patch(add("/critiques/-", {"hypothesis": "h1", "verdict": "refuted", "text": "Prices did not change"})),
            patch(add("/critiques/-", {"hypothesis": "h2", "verdict": "supported", "text": "Errors match the drop"})),
        ],
        "decider": [patch(add("/answer", "An onboarding bug shipped on 3 March."))],
    }
    result, models = await run_template(store, bp, {"question": "Why did retention drop in March?"}, scripts)
    assert result.end_reason == "done" and result.answer == "An onboarding bug shipped on 3 March."
    assert [(c["hypothesis"], c["verdict"]) for c in result.state["critiques"]] == [
        ("h1", "refuted"),
        ("h2", "supported"),
    ]
    assert result.rejected == 1 and result.accepted == 7
    records = await store.read_records(result.board_id)
    rejected = next(r for r in records if r.outcome == "rejected")
    assert rejected.worker == "critic" and rejected.stage == "invariants"
    assert "support needs supporting evidence" in (rejected.reason or "")
    retry_prompt = "\n".join(m.content for m in models["critic"].calls[1].messages)
    assert "supporting evidence" in retry_prompt


async def test_claim_verification_runs_and_status_is_evidence_gated(store: Store) -> None:
    bp = load_template("claim_verification")
    claim = {"status": "pending", "evidence": []}
    scripts = {
        "extractor": [
            patch(
                add("/claims/-", {"id": "c1", "text": "The bridge opened in 1932.", **claim}),
                add("/claims/-", {"id": "c2", "text": "It is 2 km long.", **claim}),
            )
        ],
        "researcher": [
            patch(
                add("/evidence/-", {"id": "e1", "claim": "c1", "stance": "supports", "text": "Opened 19 March 1932"})
            ),
            patch(add("/evidence/-", {"id": "e2", "claim": "c2", "stance": "refutes", "text": "Length is 1149 m"})),
        ],
        "verifier": [
            # Linking evidence that is not on the board is rejected...
            patch(add("/claims/0/evidence/-", "e9"), replace("/claims/0/status", "verified")),
            patch(add("/claims/0/evidence/-", "e1"), replace("/claims/0/status", "verified")),
            # ...and so is verifying on evidence that refutes the claim.
            patch(add("/claims/1/evidence/-", "e2"), replace("/claims/1/status", "verified")),
            patch(add("/claims/1/evidence/-", "e2"), replace("/claims/1/status", "refuted")),
        ],
        "reporter": [patch(add("/report", "c1 verified (e1); c2 refuted (e2)."))],
    }
    result, _ = await run_template(store, bp, {"document": "The bridge opened in 1932 and is 2 km long."}, scripts)
    assert result.end_reason == "done" and result.answer == "c1 verified (e1); c2 refuted (e2)."
    assert [(c["status"], c["evidence"]) for c in result.state["claims"]] == [("verified", ["e1"]), ("refuted", ["e2"])]
    records = await store.read_records(result.board_id)
    reasons = [r.reason or "" for r in records if r.outcome == "rejected"]
    assert len(reasons) == 2
    assert "linked evidence exists and is about the claim" in reasons[0]
    assert "verified needs linked supporting evidence" in reasons[1]


def test_claim_verification_invariants_directly() -> None:
    bp = load_template("claim_verification")
    kernel = Kernel(bp)
    ok = kernel.submit(
        Proposal("extractor", [add("/claims/-", {"id": "c1", "text": "x", "status": "verified", "evidence": []})])
    )
    assert ok.stage == "invariants"  # a claim cannot be born verified without evidence
    assert kernel.submit(
        Proposal("extractor", [add("/claims/-", {"id": "c1", "text": "x", "status": "pending", "evidence": []})])
    ).accepted
    assert kernel.submit(
        Proposal("researcher", [add("/evidence/-", {"id": "e1", "claim": "c1", "stance": "supports", "text": "y"})])
    ).accepted
    assert kernel.submit(Proposal("verifier", [replace("/claims/0/status", "verified")])).stage == "invariants"
    assert kernel.submit(
        Proposal("verifier", [add("/claims/0/evidence/-", "e1"), replace("/claims/0/status", "verified")])
    ).accepted
    # A settled status is final; the reporter waits for every claim to be settled.
    assert kernel.submit(Proposal("verifier", [replace("/claims/0/status", "unverifiable")])).stage == "invariants"
    assert kernel.submit(
        Proposal("extractor", [add("/claims/-", {"id": "c2", "text": "z", "status": "pending", "evidence": []})])
    ).accepted
    assert kernel.submit(Proposal("reporter", [add("/report", "early")])).stage == "invariants"
    assert (
        kernel.submit(
            Proposal("researcher", [add("/evidence/-", {"id": "e2", "claim": "c9", "stance": "supports", "text": "y"})])
        ).stage
        == "invariants"
    )
    assert kernel.submit(Proposal("researcher", [add("/claims/0/status", "pending")])).stage == "authorise"


async def test_text_actor_runs_against_a_python_environment(store: Store) -> None:
    bp = load_template("text_actor")
    world = {"location": "hall", "holding": None}

    def environment(view: Any) -> list[dict[str, Any]]:
        actions = view.data["/actions"]
        command = actions[-1]["command"]
        if command == "go to kitchen":
            world["location"] = "kitchen"
            text = "You are in the kitchen. There is an apple on the table."
        elif command == "take apple" and world["location"] == "kitchen":
            world["holding"] = "apple"
            text = "You pick up the apple."
        else:
            text = "Nothing happens."
        return [add("/observations/-", {"step": len(actions) - 1, "text": text})]

    scripts = {
        "planner": [patch(add("/plan", ["go to kitchen", "take apple"]))],
        "actor": [
            patch(add("/actions/-", {"command": "go to kitchen"})),
            patch(add("/actions/-", {"command": "take apple", "why": "plan step 2"})),
        ],
        "verifier": [
            patch(add("/verdicts/-", {"step": 0, "status": "continue", "reason": "in the kitchen"})),
            # The result cannot come with a "continue" verdict; the retry says success.
            patch(add("/verdicts/-", {"step": 1, "status": "continue", "reason": "?"}), add("/result", "done?")),
            patch(
                add("/verdicts/-", {"step": 1, "status": "success", "reason": "holding the apple"}),
                add("/result", "Took the apple in the kitchen."),
            ),
        ],
    }
    result, _ = await run_template(
        store, bp, {"task": "Put an apple in your hand.", "observation": "You are in the hall."}, scripts,
        functions={"environment": environment},
    )  # fmt: skip
    assert result.end_reason == "done" and result.answer == "Took the apple in the kitchen."
    assert world == {"location": "kitchen", "holding": "apple"}
    assert [o["step"] for o in result.state["observations"]] == [0, 1]
    assert [v["status"] for v in result.state["verdicts"]] == ["continue", "success"]
    assert result.rejected == 1


def test_text_actor_turn_taking_is_an_invariant() -> None:
    kernel = Kernel(load_template("text_actor"))
    assert kernel.submit(Proposal("actor", [add("/actions/-", {"command": "look"})])).accepted
    second = kernel.submit(Proposal("actor", [add("/actions/-", {"command": "look again"})]))
    assert second.stage == "invariants" and "one command at a time" in (second.reason or "")
    wrong_step = kernel.submit(Proposal("environment", [add("/observations/-", {"step": 3, "text": "?"})]))
    assert wrong_step.stage == "invariants"
    assert kernel.submit(Proposal("environment", [add("/observations/-", {"step": 0, "text": "A room."})])).accepted
    extra = kernel.submit(Proposal("environment", [add("/observations/-", {"step": 1, "text": "again"})]))
    assert extra.stage == "invariants" and "every observation answers a command" in (extra.reason or "")
    forged = kernel.submit(Proposal("actor", [add("/observations/-", {"step": 1, "text": "I win"})]))
    assert forged.stage == "authorise"
