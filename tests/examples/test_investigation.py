"""examples/investigation: the seed's team (Team.blackboard) and the investigation template run
to their end on a real SQLite store, with scripted models (the board's content is checked) and
once on the embedded local model; every board's log verifies by replay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from examples_testkit import EXAMPLES, by_role, load_example, verify_board

from _support.probes import local_model_problem
from slateboard.models import ScriptedModel

example = load_example("investigation")


def decision(agent: str | None = None, instruction: str | None = None, terminate: bool = False) -> str:
    return json.dumps({"terminate": terminate, "next_agent": agent, "instruction": instruction})


def patch(path: str, value: Any) -> str:
    return json.dumps({"patch": [{"op": "add", "path": path, "value": value}]})


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'boards.db'}"


async def test_team_investigates_with_the_metrics_tool(store_url: str) -> None:
    model = ScriptedModel(
        [
            by_role(
                {
                    "Decide which agent": [
                        decision("hypothesis", "Propose a cause."),
                        decision("evidence", "Check the March metrics."),
                        decision("critic", "Judge the price hypothesis."),
                        decision(terminate=True),
                    ],
                    "Propose one hypothesis": ["The basic plan price rose in March and customers left."],
                    "Find evidence": [
                        json.dumps({"tool": "monthly_metrics", "args": {"month": "2024-03"}}),
                        "March: basic price 12.00 (was 9.00), 57 cancellations, retention 0.877 [e2].",
                    ],
                    "Critique the current": ["The metrics in [e3] support the price hypothesis."],
                    "produce the final answer": ["Retention dropped because the basic plan price rose in March."],
                }
            )
        ],
        cycle=True,
    )
    outcome = await example.run_team(example.TASK, model=model, store=store_url, max_rounds=6)
    assert outcome.end_reason == "terminated"
    assert outcome.answer == "Retention dropped because the basic plan price rose in March."
    report, records = await verify_board(store_url, outcome.board_id)
    assert report.ok, str(report)
    assert isinstance(report.state, dict)
    public = report.state["public"]
    assert [(e["author"], e["kind"]) for e in public] == [
        ("user", "problem"),
        ("hypothesis", "contribution"),
        ("evidence", "contribution"),
        ("critic", "contribution"),
    ]
    assert public[0]["content"] == example.TASK and public[3]["references"] == ["e3"]
    assert report.state["answer"] == outcome.answer
    # The evidence agent called the tool and got the row of metrics.csv for March back.
    evidence_call = next(c for c in model.calls if "Find evidence" in c.messages[0].content and len(c.messages) > 2)
    march = example.monthly_metrics("2024-03")
    assert march["retention_rate"] in evidence_call.messages[-1].content
    assert [r.worker for r in records if r.kind == "proposal" and r.outcome == "accepted"] == [
        "hypothesis",
        "evidence",
        "critic",
        "__decider",
    ]


def test_the_metrics_tool_reads_the_csv() -> None:
    rows = (EXAMPLES / "investigation" / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    first = dict(zip(header, rows[1].split(","), strict=True))
    assert example.monthly_metrics(first["month"]) == first
    with pytest.raises(ValueError, match="no metrics for '1999-01'"):
        example.monthly_metrics("1999-01")


async def test_template_mode_reaches_an_answer_through_the_kernel(store_url: str) -> None:
    model = ScriptedModel(
        [
            by_role(
                {
                    "worker 'hypothesis'": [
                        patch("/hypotheses/-", {"id": "h1", "text": "A price increase for the basic plan"}),
                    ],
                    "worker 'evidence'": [
                        patch(
                            "/evidence/-",
                            {"id": "ev1", "hypothesis": "h1", "stance": "supports", "text": "Basic went 9 -> 12"},
                        ),
                    ],
                    "worker 'critic'": [
                        # judging a hypothesis that is not on the board is rejected by the kernel
                        patch("/critiques/-", {"hypothesis": "h7", "verdict": "supported", "text": "Fits"}),
                        patch("/critiques/-", {"hypothesis": "h1", "verdict": "supported", "text": "Fits"}),
                    ],
                    "worker 'decider'": [patch("/answer", "The basic plan price increase.")],
                }
            )
        ],
        cycle=True,
    )
    outcome = await example.run_template(example.TASK, model=model, store=store_url)
    assert outcome.end_reason == "done" and outcome.answer == "The basic plan price increase."
    report, records = await verify_board(store_url, outcome.board_id)
    assert report.ok, str(report)
    rejected = [r for r in records if r.outcome == "rejected"]
    assert [(r.worker, r.stage) for r in rejected] == [("critic", "invariants")]
    assert "critiques are about a hypothesis on the board" in (rejected[0].reason or "")
    # Contract-constrained decoding offered the next free id and only hypotheses on the board.
    evidence_schema = next(c.json_schema for c in model.calls if "worker 'evidence'" in c.messages[0].content)
    assert evidence_schema is not None
    value = evidence_schema["properties"]["patch"]["items"]["properties"]["value"]["properties"]
    assert value["id"]["const"] == "ev1" and value["hypothesis"] == {"enum": ["h1"]}


async def test_template_gives_up_after_three_refuted_hypotheses(store_url: str) -> None:
    def ev(n: int) -> str:
        return patch("/evidence/-", {"id": f"ev{n}", "hypothesis": f"h{n}", "stance": "refutes", "text": "No"})

    def refuted(n: int) -> str:
        return patch("/critiques/-", {"hypothesis": f"h{n}", "verdict": "refuted", "text": "The data says no"})

    model = ScriptedModel(
        [
            by_role(
                {
                    "worker 'hypothesis'": [
                        patch("/hypotheses/-", {"id": f"h{n}", "text": f"Cause {n}"}) for n in (1, 2, 3)
                    ],
                    "worker 'evidence'": [ev(n) for n in (1, 2, 3)],
                    "worker 'critic'": [refuted(n) for n in (1, 2, 3)],
                    "worker 'decider'": [patch("/answer", "None of the three causes holds up.")],
                }
            )
        ],
        cycle=True,
    )
    outcome = await example.run_template(example.TASK, model=model, store=store_url)
    assert outcome.end_reason == "done" and outcome.answer == "None of the three causes holds up."
    report, records = await verify_board(store_url, outcome.board_id)
    assert report.ok, str(report)
    assert isinstance(report.state, dict)
    assert [c["verdict"] for c in report.state["critiques"]] == ["refuted"] * 3
    assert [r.worker for r in records if r.kind == "proposal"] == [
        *["hypothesis", "evidence", "critic"] * 3,
        "decider",
    ]


def test_main_prints_answer_end_reason_and_board(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'cli.db'}"
    replies = [
        patch("/hypotheses/-", {"id": "h1", "text": "Prices rose"}),
        patch("/evidence/-", {"id": "ev1", "hypothesis": "h1", "stance": "supports", "text": "12 from 9"}),
        patch("/critiques/-", {"hypothesis": "h1", "verdict": "supported", "text": "Fits the metrics"}),
        patch("/answer", "Prices rose."),
    ]
    model = "scripted:" + json.dumps(replies)
    script = str(EXAMPLES / "investigation" / "main.py")
    done = subprocess.run(
        [sys.executable, script, "--mode", "template", "--model", model, "--store", store],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    assert lines["answer"].strip() == "Prices rose." and lines["end reason"].strip() == "done"
    board = lines["board"].strip()
    assert len(board) == 32 and f"slateboard log {board} --store {store}" in done.stdout


@pytest.mark.skipif(local_model_problem() is not None, reason=local_model_problem() or "")
async def test_team_on_the_local_model(store_url: str) -> None:
    outcome = await example.run_team(example.TASK, model="local", store=store_url, max_rounds=1)
    assert outcome.end_reason in ("terminated", "max_rounds")
    assert outcome.tokens > 0
    report, _ = await verify_board(store_url, outcome.board_id)
    assert report.ok, str(report)
    assert isinstance(report.state, dict)
    assert report.state["answer"] == outcome.answer  # the decider's answer (or its fallback) is on the board


@pytest.mark.skipif(local_model_problem() is not None, reason=local_model_problem() or "")
async def test_template_on_the_local_model(store_url: str) -> None:
    # The README's main job: `slateboard run investigation` on the embedded model.
    outcome = await example.run_template(example.TASK, model="local", store=store_url, max_steps=8)
    assert outcome.end_reason
    assert outcome.tokens > 0
    if outcome.end_reason == "done":
        assert outcome.answer.strip()
    report, records = await verify_board(store_url, outcome.board_id)
    assert report.ok, str(report)
    assert any(r.worker == "hypothesis" and r.outcome == "accepted" for r in records)
