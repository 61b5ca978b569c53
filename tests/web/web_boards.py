"""Real boards for the dashboard tests, with scripted models (deterministic replies, estimated
tokens): a three-worker blueprint of LLM workers run by the real Runner, and a Team.blackboard
run with a coordinator and a decider."""

from __future__ import annotations

import json

from _support.boards import notes_blueprint
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, RunResult, create_board
from slateboard.stores.base import Store
from slateboard.team import Agent, Team, TeamResult

NOTES = notes_blueprint(
    4,
    description="a and b take turns writing notes, the decider answers",
    workers={
        "a": {"instruction": "Add one note.", "reads": ["/task", "/notes"], "writes": ["/notes/-"]},
        "b": {"instruction": "Reply with one note.", "reads": ["/notes"], "writes": ["/notes/-"]},
        "decider": {"instruction": "Answer from the notes.", "reads": ["/task", "/notes"], "writes": ["/answer"]},
    },
)


def note(author: str, text: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": {"author": author, "text": text}}]})


def replies(tag: str) -> list[str]:
    """a, b (an empty note: rejected at stage invariants, then retried), b, a, b, decider."""
    return [
        note("a", f"{tag}: first note by a"),
        note("b", ""),
        note("b", f"{tag}: b replies"),
        note("a", f"{tag}: second note by a"),
        note("b", f"{tag}: b agrees"),
        json.dumps({"patch": [{"op": "add", "path": "/answer", "value": f"{tag}: four notes"}]}),
    ]


async def new_board(store: Store, task: str = "write notes") -> str:
    """A fresh notes board (running, no records yet)."""
    return await create_board(store, NOTES, inputs={"task": task})


async def run_board(store: Store, board_id: str, tag: str = "run") -> RunResult:
    """Run ``board_id`` to its end with the scripted replies of ``replies(tag)``."""
    result = await Runner(store, board_id, model=ScriptedModel(replies(tag))).run()
    assert result.end_reason == "done", result.end_reason
    return result


async def make_board(store: Store, tag: str = "run") -> str:
    """A notes board run to its end: 5 accepted proposals, 1 rejected, a run record."""
    board_id = await new_board(store)
    await run_board(store, board_id, tag)
    return board_id


def _decision(agent: str | None = None, instruction: str | None = None) -> str:
    return json.dumps({"terminate": agent is None, "next_agent": agent, "instruction": instruction})


async def make_team_board(store: Store) -> TeamResult:
    """A Team.blackboard run (coordinator, two agents, decider) on ``store``, scripted models."""
    team = Team.blackboard(
        agents={
            "hypothesis": Agent("Propose hypotheses.", model=ScriptedModel(["H1: prices. H2: an onboarding bug."])),
            "critic": Agent("Critique the top hypothesis.", model=ScriptedModel(["H1 is weak: prices did not move."])),
        },
        coordinator=Agent(
            "Decide who contributes next.",
            model=ScriptedModel([_decision("hypothesis", "Propose."), _decision("critic", "Critique."), _decision()]),
        ),
        decider=Agent("Answer from the board.", model=ScriptedModel(["The onboarding bug."])),
        model='scripted:["unused"]',
        store=store,
    )
    return await team.run("Why did retention drop in March?")
