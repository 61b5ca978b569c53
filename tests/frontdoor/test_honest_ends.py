"""Mistakes found when they are made, and ends that say what happened (issue 47).

- A worker's model string that names no model (``model="gpt4o"``) is a BlueprintError at
  ``/workers/<name>/model`` when the board is built (builder and YAML alike), checked by the
  registry's parsing without a key or the network.
- A board whose run could not start because its model is unusable as configured (no API key)
  fails with that reason, instead of staying listed ``running``.
- A team without a coordinator that played its rounds ends ``rounds_played`` (solved), not
  ``max_rounds``, which a team whose coordinator never stopped still ends with.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from slateboard import Runner, create_board, open_store
from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.builder import Board
from slateboard.models import ModelConfigError, ScriptedModel
from slateboard.status import end_status
from slateboard.team import Agent, Team
from slateboard.vocabulary import BOARD_FAILED, END_FAILED, END_SOLVED, MAX_ROUNDS, RAISED_PREFIX, ROUNDS_PLAYED


class Notes(BaseModel):
    task: str = ""
    summary: str = ""


def _board(model: str) -> Board[Notes]:
    board = Board("notes", Notes)
    board.llm_worker("writer", instruction="Summarise.", reads=["/task"], writes=["/summary"], model=model)
    board.rule("writer", on="start")
    return board


@pytest.mark.parametrize("model", ["gpt4o", "opneai:gpt-4o", "openai:", 'scripted:["unclosed'])
def test_a_model_string_naming_no_model_fails_the_build(model: str) -> None:
    with pytest.raises(BlueprintError) as err:
        _board(model).build()
    (issue,) = err.value.issues
    assert issue.path == "/workers/writer/model"
    assert "accepted" in issue.message or "expected" in issue.message


def test_a_yaml_worker_model_string_is_checked_too() -> None:
    spec: dict[str, Any] = {
        "name": "y",
        "schema": {"type": "object"},
        "workers": {"w": {"reads": ["/task"], "writes": ["/summary"], "model": "gpt4o"}},
    }
    with pytest.raises(BlueprintError, match="/workers/w/model: gpt4o: not a model string"):
        compile_blueprint(spec)


@pytest.mark.parametrize("model", ["openai:gpt-4o", "gpt-4o", "anthropic:claude-x", "ollama:llama3", "local"])
def test_well_formed_model_strings_build_without_keys(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _board(model).build()  # a missing key is the run's concern: the blueprint is the same everywhere


async def test_a_run_that_cannot_start_on_its_model_fails_the_board(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    store = await open_store("memory://")
    try:
        board_id = await create_board(store, _board("openai:gpt-4o-mini").build())
        with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
            await Runner(store, board_id).run()
        info = await store.board_info(board_id)
    finally:
        await store.close()
    assert info.status == BOARD_FAILED
    assert info.reason is not None and info.reason.startswith(RAISED_PREFIX) and "OPENAI_API_KEY" in info.reason
    assert end_status(info.status, info.reason) == END_FAILED


async def test_a_team_without_a_coordinator_ends_having_played_its_rounds() -> None:
    team = Team.blackboard(
        agents={n: Agent(f"{n} role", model=ScriptedModel([f"{n}1", f"{n}2"])) for n in ("a", "b")},
        max_rounds=4,
    )
    result = await team.run("task")
    assert result.end_reason == ROUNDS_PLAYED and result.rounds == 4
    assert end_status("done", result.end_reason) == END_SOLVED


async def test_a_team_whose_coordinator_never_stops_ends_at_max_rounds() -> None:
    never = ScriptedModel(['{"terminate": false, "next_agent": "a", "instruction": null}'] * 3)
    team = Team.blackboard(
        agents={"a": Agent("a role", model=ScriptedModel(["a1", "a2", "a3"]))},
        coordinator=Agent("c", model=never),
        max_rounds=3,
    )
    result = await team.run("task")
    assert result.end_reason == MAX_ROUNDS and result.rounds == 3
