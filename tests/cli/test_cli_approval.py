"""approve / refuse / resume: a held proposal pauses the board until a person decides."""

from __future__ import annotations

from typing import Any

from cli_testkit import NOTES_YAML


def approval_blueprint() -> str:
    return NOTES_YAML.replace("answer: /answer\n", "answer: /answer\napproval: [/answer]\n")


def test_approve_then_resume_commits_the_held_answer(invoke: Any, write_file: Any) -> None:
    path = write_file("held.yaml", approval_blueprint())
    first = invoke.json("run", str(path), "--task", "ship it")
    assert first["end_reason"].startswith("paused: awaiting approval")
    assert "answer" not in first["state"]
    board = first["board_id"]
    boards = invoke.json("boards")
    assert boards[0]["status"] == "paused"

    approved = invoke("approve", board[:8], "--by", "carol", "--note", "looks right")
    assert approved.exit_code == 0, approved.output
    assert "carol approved record" in approved.stdout and f"slateboard resume {board}" in approved.stdout

    resumed = invoke.json("resume", board)
    assert resumed["end_reason"] == "done" and resumed["answer"] == "4 notes on ship it"
    assert invoke("replay", board, "--verify", "--revalidate").exit_code == 0


def test_refuse_and_errors(invoke: Any, write_file: Any) -> None:
    path = write_file("held.yaml", approval_blueprint())
    board = invoke.json("run", str(path), "--task", "ship it")["board_id"]
    wrong = invoke("approve", board, "1")  # record 1 is an accepted note, not a held proposal
    assert wrong.exit_code == 1 and "not a held proposal" in wrong.stderr and "Traceback" not in wrong.output
    refused = invoke("refuse", board, "--note", "no source")
    assert refused.exit_code == 0 and "refused" in refused.stdout
    nothing = invoke("approve", board)  # nothing waits any more
    assert nothing.exit_code == 2 and "waiting: none" in nothing.stderr
    resumed = invoke.json("resume", board)
    assert "answer" not in resumed["state"]


def test_resume_refuses_a_team_board_and_leaves_its_log(invoke: Any, store_url: str) -> None:
    """A Team.blackboard board paused at a held entry: `slateboard resume` cannot drive it (its
    team is code); it says how to resume it instead of ending it as a rule-less blueprint."""
    import asyncio

    from slateboard.models import ScriptedModel
    from slateboard.stores import open_store
    from slateboard.team import Agent, Team

    async def paused_board() -> tuple[str, int]:
        store = await open_store(store_url)
        try:
            team = Team.blackboard(
                {"poet": Agent("Write a line.", model=ScriptedModel(["Roses are red."], cycle=True))},
                max_rounds=2,
                store=store,
                approval_paths=["/public/*"],
            )
            result = await team.run("a poem")
            assert result.end_reason.startswith("paused")
            return result.board_id, (await store.board_info(result.board_id)).version
        finally:
            await store.close()

    board, version = asyncio.run(paused_board())
    refused = invoke("resume", board)
    assert refused.exit_code == 2, refused.output
    assert "Team.blackboard board" in refused.stderr and f"team.resume('{board}')" in refused.stderr
    assert "Traceback" not in refused.output
    after = invoke.json("boards")
    assert [b["version"] for b in after if b["board_id"] == board] == [version]  # nothing committed
