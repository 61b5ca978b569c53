"""``slateboard run``: JSON output, the live display and audit summary, inputs, stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_testkit import GARBAGE_YAML, NO_TASK_YAML, Invoke, assert_no_boards


def test_run_json_prints_the_run_result(invoke: Invoke, notes_file: Path) -> None:
    result = invoke("run", str(notes_file), "--task", "write notes", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["end_reason"] == "done"
    assert data["answer"] == "4 notes on write notes"
    assert data["accepted"] == 5 and data["rejected"] == 1
    assert data["state"]["task"] == "write notes"
    assert set(data["usage_by_worker"]) == {"a", "b", "decider"}
    assert data["usage_by_worker"]["b"]["calls"] == 3
    assert "slateboard run" not in result.stdout  # no live display in --json mode


def test_run_shows_progress_answer_and_audit(invoke: Invoke, notes_file: Path) -> None:
    result = invoke("run", str(notes_file), "--task", "write notes")
    assert result.exit_code == 0, result.output
    out = result.stdout
    # the live display's final frame
    assert "slateboard run · notes · board" in out
    assert "step 6/200" in out and "accepted 5" in out and "rejected 1 (invariants 1)" in out
    assert "notes are not empty" in out
    assert "ended: done" in out
    # answer and audit summary
    assert "Answer: 4 notes on write notes" in out
    assert "7: 5 accepted, 1 rejected, 1 action" in out
    assert "rejected by stage" in out and "invariants 1" in out
    assert "tokens by worker" in out and "decider" in out
    boards = invoke.json("boards")
    board_id = boards[0]["board_id"]
    assert f"slateboard log {board_id}" in out
    assert f"slateboard replay {board_id} --verify" in out
    assert "--store" not in out  # the store came from $SLATEBOARD_STORE: nothing to repeat


def test_explicit_store_is_repeated_in_the_hints(
    invoke: Invoke, notes_file: Path, tmp_path: Path, db_path: Path
) -> None:
    other = f"sqlite:///{tmp_path / 'other.db'}"
    result = invoke("run", str(notes_file), "--store", other)
    assert result.exit_code == 0, result.output
    assert f"--store {other}" in result.stdout
    assert_no_boards(invoke, db_path)
    assert len(invoke.json("boards", "--store", other)) == 1


def test_options_max_steps_parallel_and_name(invoke: Invoke, notes_file: Path) -> None:
    data = invoke.json("run", str(notes_file), "--max-steps", "2", "--parallel", "2", "--name", "short")
    assert data["end_reason"] == "max_steps" and data["steps"] == 2
    boards = invoke.json("boards")
    assert boards[0]["name"] == "short" and boards[0]["status"] == "done"


def test_input_values_are_json_or_strings(invoke: Invoke, write_file: Any) -> None:
    path = write_file("no-task.yaml", NO_TASK_YAML)
    data = invoke.json("run", str(path), "--input", "question=why?")
    assert data["state"]["question"] == "why?"
    result = invoke("run", str(path), "--input", "question=[1]")  # JSON, but not a string: schema says no
    assert result.exit_code == 1
    assert "rejected" in result.stderr and "Traceback" not in result.output


def test_task_needs_a_task_property(invoke: Invoke, write_file: Any, db_path: Path) -> None:
    path = write_file("no-task.yaml", NO_TASK_YAML)
    result = invoke("run", str(path), "--task", "x")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "no 'task' property" in result.stderr and "question" in result.stderr
    assert_no_boards(invoke, db_path)  # nothing was created


def test_circuit_halt_exits_1_and_marks_the_board_failed(invoke: Invoke, write_file: Any) -> None:
    path = write_file("garbage.yaml", GARBAGE_YAML)
    result = invoke("run", str(path))
    assert result.exit_code == 1
    assert "ended: circuit" in result.stdout
    assert "failed: circuit" in result.stderr
    assert invoke.json("boards")[0]["status"] == "failed"


def test_default_store_is_in_the_user_data_dir(invoke: Invoke, notes_file: Path, data_home: Path) -> None:
    result = invoke("run", str(notes_file), "--json", env={"SLATEBOARD_STORE": ""})
    assert result.exit_code == 0, result.output
    board_id = json.loads(result.stdout)["board_id"]
    assert (data_home / "slateboard" / "slateboard.db").is_file()
    log = invoke("log", board_id, "--json", env={"SLATEBOARD_STORE": ""})
    assert log.exit_code == 0, log.output
    assert len(json.loads(log.stdout)["records"]) == 7
    # $SLATEBOARD_STORE points elsewhere: the board is not there
    assert invoke("log", board_id).exit_code == 1


def test_templates_are_listed_and_run_by_name(invoke: Invoke) -> None:
    from slateboard.cli._common import templates_module

    module = templates_module()
    result = invoke("templates")
    if module is None:
        assert result.exit_code == 2 and "not available" in result.stderr
        return
    assert result.exit_code == 0
    names = [entry["name"] for entry in invoke.json("templates")]
    assert names and all(name in result.stdout for name in names)
    # a template name resolves (the model string is checked before any board is made)
    bad_model = invoke("run", names[0], "--model", "bogus:model")
    assert bad_model.exit_code == 2 and "model configuration" in bad_model.stderr
