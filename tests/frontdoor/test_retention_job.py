"""The quick start's main job (template ``retention``): facts from the shipped data, the model's
choice constrained to them, the kernel refusing a symptom as a cause, and an answer that states
facts from the data, never the task."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.blueprint.templates import load_template
from slateboard.cli import app
from slateboard.runtime import Runner, create_board
from slateboard.runtime.result import RunResult
from slateboard.stores import open_store

QUESTION = "Why did retention drop in March?"


def pick(fact: str, hid: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/hypotheses/-", "value": {"id": hid, "fact": fact}}]})


async def _run(model: Any, max_steps: int | None = None) -> tuple[RunResult, list[Any]]:
    store = await open_store("memory://")
    try:
        board = await create_board(store, load_template("retention"), inputs={"question": QUESTION})
        result = await Runner(store, board, model=model, max_steps=max_steps).run()
        return result, await store.read_records(board)
    finally:
        await store.close()


def assert_screen_refused(records: list[Any]) -> None:
    """The screen's well-meant pick (cancellations, the metric that moved most) is refused at
    the invariants stage, then the screen withdraws with a no-op, and never writes anything."""
    screen = [r for r in records if r.worker == "screen"]
    assert [r.outcome for r in screen] == ["rejected", "noop"], [(r.outcome, r.reason) for r in screen]
    assert screen[0].stage == "invariants"
    assert "a hypothesis names a cause" in (screen[0].reason or "")
    proposed = json.loads(screen[0].patch or "null")
    assert proposed == [{"op": "add", "path": "/hypotheses/-", "value": {"id": "h1", "fact": "f3"}}]


def test_facts_checks_and_answer_from_the_data() -> None:
    # The model first names a symptom (refused by the kernel), then the refuted release, then
    # the price change, which the data supports.
    model = "scripted:" + json.dumps([pick("f3", "h1"), pick("f2", "h1"), pick("f1", "h2")])
    result, records = asyncio.run(_run(model))
    state = result.state
    assert isinstance(state, dict)
    assert [f["metric"] for f in state["facts"]] == ["basic_price", "app_release", "cancellations", "support_tickets"]
    assert state["facts"][0]["text"] == "basic_price went from 9.00 to 12.00 in 2024-03 (+33%)"
    rejected = [r for r in records if r.outcome == "rejected" and r.worker == "hypothesis"]
    assert len(rejected) == 1 and rejected[0].stage == "invariants"
    assert "not a symptom of churn" in (rejected[0].reason or "")
    assert_screen_refused(records)
    assert [c["verdict"] for c in state["checks"]] == ["refuted", "supported"]
    assert (
        "app release 5.2 shipped in 2024-01 too, and retention_rate held (0.956 -> 0.954)"
        in state["checks"][0]["evidence"]
    )
    answer = str(result.answer)
    assert answer.startswith("retention_rate went from 0.957 to 0.877 in 2024-03. Likely cause: basic_price")
    assert "Ruled out: app release 5.3 shipped in 2024-03" in answer
    assert QUESTION not in answer
    assert result.end_reason == "done" and result.end_status == "solved"


def test_the_kernel_refuses_a_second_hypothesis_about_the_same_fact() -> None:
    model = "scripted:" + json.dumps([pick("f2", "h1"), pick("f2", "h2"), pick("f1", "h2")])
    result, records = asyncio.run(_run(model))
    reasons = [r.reason or "" for r in records if r.outcome == "rejected" and r.worker == "hypothesis"]
    assert len(reasons) == 1 and "already hypothesised" in reasons[0]
    assert result.end_status == "solved"


def _local_problem() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install 'slateboard[local]')"
    return None


@pytest.mark.skipif(_local_problem() is not None, reason=_local_problem() or "")
def test_the_main_job_on_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_LOCAL_THREADS", os.environ.get("SLATEBOARD_LOCAL_THREADS", "1"))
    result, records = asyncio.run(_run("local"))
    assert result.end_status == "solved", result.end_reason
    answer = str(result.answer)
    assert QUESTION not in answer and "retention_rate went from 0.957 to 0.877 in 2024-03" in answer
    assert "Evidence:" in answer
    assert any(r.worker == "hypothesis" and r.outcome == "accepted" for r in records)
    assert_screen_refused(records)


def test_the_cli_summary_shows_what_was_accepted_and_refused(tmp_path: Any) -> None:
    model = "scripted:" + json.dumps([pick("f2", "h1"), pick("f1", "h2")])
    shown = CliRunner().invoke(
        app,
        ["run", "retention", "--task", QUESTION, "--model", model, "--store", "memory://"],
        env={"COLUMNS": "250"},
    )
    assert shown.exit_code == 0, shown.output
    out = shown.output
    assert "Answer: retention_rate went from 0.957 to 0.877 in 2024-03. Likely cause: basic_price" in out
    assert "Evidence: basic_price was 9.00 in every earlier month" in out
    assert "accepted           analyst 1, hypothesis 2, checker 2, decider 1" in out
    assert "[screen] invariants: invariant 'a hypothesis names a cause' at /hypotheses/0" in out
    assert "solved" in out and f"Answer: {QUESTION}" not in out
