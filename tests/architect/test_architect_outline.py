"""The Architect's outline mode (issue 28: `slateboard architect` could not work on the default
model, whose 4,096-token context the full prompt alone overflowed): every plan that satisfies
the outline schema becomes a runnable blueprint; ``auto`` picks outline for an in-process model;
the CLI and the real local model produce a blueprint that compiles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from slateboard.architect import Architect, ArchitectError, runnable_issues
from slateboard.architect_outline import OUTLINE_SCHEMA, blueprint_from_outline
from slateboard.blueprint import compile_blueprint
from slateboard.models import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

SLATEBOARD = str(Path(sys.executable).parent / "slateboard")
names = st.from_regex(r"^[a-z][a-z_]{1,19}$", fullmatch=True)
sentences = st.from_regex(r"^[A-Z][a-z ,']{8,79}[.]$", fullmatch=True)
outlines = st.fixed_dictionaries(
    {
        "name": names,
        "steps": st.lists(
            st.fixed_dictionaries({"worker": names, "field": names, "instruction": sentences}), min_size=2, max_size=4
        ),
        "answer": sentences,
    }
)

PLAN = {
    "name": "triage",
    "steps": [
        {"worker": "labeller", "field": "labels", "instruction": "Label each report with a severity."},
        {"worker": "labeller", "field": "task", "instruction": "Name the component of each report."},
    ],
    "answer": "Summarise the labelled reports.",
}


@settings(max_examples=60, deadline=None)
@given(outlines)
def test_every_valid_outline_gives_a_runnable_blueprint(outline: dict[str, Any]) -> None:
    jsonschema_rs.validate(OUTLINE_SCHEMA, outline)
    compiled = compile_blueprint(blueprint_from_outline(outline, "Do the task."))
    assert runnable_issues(compiled) == []
    assert len(compiled.workers) == len(outline["steps"]) + 1


def test_names_are_deduplicated_and_reserved_names_renamed() -> None:
    spec = blueprint_from_outline(PLAN, "  Triage the reports.  ")
    assert list(spec["workers"]) == ["labeller", "labeller_2", "writer"]
    assert list(spec["schema"]["properties"]) == ["task", "labels", "task_2", "answer"]
    assert spec["initial_state"] == {"task": "Triage the reports.", "labels": [], "task_2": []}
    assert spec["workers"]["labeller_2"]["reads"] == ["/task", "/labels"]
    assert [r["invoke"] for r in spec["rules"]] == ["labeller", "labeller_2", "writer"]


async def test_outline_mode_designs_and_the_board_runs() -> None:
    answer = json.dumps([{"op": "add", "path": "/answer", "value": "Two reports, both minor."}])
    architect = Architect(ScriptedModel([json.dumps(PLAN)]), mode="outline")
    design = await architect.design_report("Triage the reports.")
    assert design.repairs == 0 and architect.calls == 1
    store = await open_store("memory://")
    board = await create_board(store, design.blueprint)
    replies = [
        json.dumps([{"op": "add", "path": "/labels/-", "value": "minor"}]),
        json.dumps([{"op": "add", "path": "/task_2/-", "value": "parser"}]),
        answer,
    ]
    result = await Runner(store, board, model=ScriptedModel(replies)).run()
    assert result.answer == "Two reports, both minor."


async def test_a_plan_that_breaks_the_outline_schema_is_repaired_with_its_issues() -> None:
    bad = {"name": "x", "steps": [], "answer": "no"}
    model = ScriptedModel([json.dumps(bad), json.dumps(PLAN)])
    design = await Architect(model, mode="outline", max_repairs=1).design_report("Triage.")
    assert design.repairs == 1
    assert any(i.path.startswith("/steps") or i.path.startswith("/name") for i in design.attempts[0].issues)
    repair = model.calls[1].messages[-1].content
    assert "/steps" in repair or "/name" in repair
    with pytest.raises(ArchitectError):
        await Architect(ScriptedModel([json.dumps(bad)]), mode="outline", max_repairs=0).design("Triage.")


def test_auto_picks_outline_only_for_an_in_process_model() -> None:
    class InProcess(ScriptedModel):
        n_ctx = 8192

    assert Architect(InProcess(["{}"]), mode="auto").mode == "outline"
    assert Architect(ScriptedModel(["{}"]), mode="auto").mode == "full"
    assert Architect(ScriptedModel(["{}"])).mode == "full"


def test_the_cli_writes_an_outline_blueprint(tmp_path: Path) -> None:
    out = tmp_path / "a.yaml"
    model = "scripted:" + json.dumps([json.dumps(PLAN)])
    done = subprocess.run(
        [SLATEBOARD, "architect", "Triage the reports.", "--mode", "outline", "-m", model, "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    compiled = compile_blueprint(yaml.safe_load(out.read_text()))
    assert runnable_issues(compiled) == []
    bad = subprocess.run(
        [SLATEBOARD, "architect", "x", "--mode", "sideways"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "sideways" in bad.stderr


@pytest.mark.slow
def test_the_architect_designs_on_the_local_model(tmp_path: Path) -> None:
    """The default model: the CLI's auto mode plans an outline that compiles and can run."""
    pytest.importorskip("llama_cpp", reason="the local extra (llama-cpp-python) is not installed")
    out = tmp_path / "a.yaml"
    done = subprocess.run(
        [SLATEBOARD, "architect", "Triage bug reports by severity, then summarise them.", "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    compiled = compile_blueprint(yaml.safe_load(out.read_text()))
    assert runnable_issues(compiled) == []
