"""What a round reads of the board: the stuck detector's incremental tail (``EchoTail``:
``echo_check`` of what it keeps is ``echo_check`` of the whole board, so a round's stuck check
costs O(1) in the board's length), and round-robin control never renders the board."""

from __future__ import annotations

import random
from typing import Any

import pytest
from team_testkit import decision

from slateboard.models.scripted import ScriptedModel
from slateboard.runtime.result import usage_by
from slateboard.stores import open_store
from slateboard.team import Agent, Team
from slateboard.team._control import EchoTail, Tally, TeamControl, echo_check


def _board(rng: random.Random, size: int) -> list[dict[str, Any]]:
    authors = ["a", "b", "c", "user", "system"]
    texts = ["same", "same ", "other", "x"]
    board: list[dict[str, Any]] = [{"id": "e1", "author": "user", "content": "the problem"}]
    for i in range(2, size + 1):
        if len(board) > 2 and rng.random() < 0.6:
            # Echo the entry two before (A-B-A-B...; or A-A-A when it was A's): halts are likely.
            echo = board[-2]
            board.append({"id": f"e{i}", "author": echo["author"], "content": echo["content"]})
            continue
        author = rng.choice(authors[:2] if rng.random() < 0.6 else authors)
        board.append({"id": f"e{i}", "author": author, "content": rng.choice(texts)})
    return board


@pytest.mark.parametrize(("repeats", "alternations"), [(5, 6), (2, 4), (3, 8), (0, 6), (5, 0), (1, 1)])
def test_echo_check_of_the_tail_is_echo_check_of_the_whole_board(repeats: int, alternations: int) -> None:
    rng = random.Random(repeats * 100 + alternations)
    halts = 0
    for _ in range(40):
        board = _board(rng, rng.randint(1, 60))
        tail = EchoTail(repeats=repeats, alternations=alternations)
        # Synced as a run syncs it: after each appended entry, or a few at once.
        end = 1
        while end <= len(board):
            kept = tail.sync(board[:end])
            want = echo_check(board[:end], repeats=repeats, alternations=alternations)
            assert echo_check(kept, repeats=repeats, alternations=alternations) == want
            assert len(kept) <= max(repeats, 1) + max(alternations, 1)
            halts += want is not None
            end += rng.randint(1, 3)
    if repeats >= 2 or alternations >= 4:
        assert halts  # the boards do trigger the checks: the comparison is not all None == None


def test_the_tail_is_empty_without_contributions() -> None:
    tail = EchoTail(repeats=5, alternations=6)
    assert tail.sync([{"id": "e1", "author": "user", "content": "p"}]) == []
    assert tail.sync([{"id": "e1", "author": "user", "content": "p"}, {"id": "e2", "author": "system"}]) == []


async def test_round_robin_never_renders_the_board_a_coordinator_reads_it() -> None:
    def unrendered() -> str:
        raise AssertionError("round-robin rendered the board")

    plain = TeamControl(["a", "b"], {"a": "", "b": ""}, coordinator=None, model=None, instructions="", constrain=False)
    picks = [(await plain.choose(r, unrendered)).decision.next_agent for r in (1, 2, 3)]
    assert picks == ["a", "b", "a"]

    seen: list[str] = []

    def reply(messages: Any) -> str:
        seen.append(messages[-1].content)
        return '{"terminate": false, "next_agent": "b", "instruction": "go"}'

    led = TeamControl(
        ["a", "b"],
        {"a": "", "b": ""},
        coordinator=Agent("Coordinate."),
        model=ScriptedModel([reply]),
        instructions="Coordinate.",
        constrain=False,
    )
    choice = await led.choose(1, lambda: "=== Public board ===\ne1 [problem] user: THE BOARD")
    assert choice.decision.next_agent == "b"
    assert "THE BOARD" in seen[0]


async def test_the_result_counts_the_log_the_store_holds() -> None:
    """The result's usage and turns come from the session's records, not a re-read of the store:
    the same numbers, approvals (appended beside the engine) included."""
    store = await open_store("memory://")
    try:
        coordinator = ScriptedModel(
            [decision(agent="a"), decision(agent="b"), decision(agent="a"), decision(terminate=True)]
        )
        team = Team.blackboard(
            {"a": Agent("x", model=ScriptedModel(["A1", "A2"])), "b": Agent("y", model=ScriptedModel(["B1"]))},
            coordinator=Agent("c", model=coordinator),
            max_rounds=5,
            store=store,
            approval=lambda request: request.agent == "a",
        )
        result = await team.run("task")
        records = await store.read_records(result.board_id)
        assert any(r.kind == "approval" for r in records)
        assert result.usage == usage_by(records, "component") and result.usage["coordinator"].calls == 4
        assert result.usage_by_agent == usage_by([r for r in records if r.kind == "proposal"], "worker")
        assert result.turns == Tally().fold(records).calls == 7
        assert [e["content"] for e in result.public[1:]] == ["A1", "A2"]
    finally:
        await store.close()


async def test_a_run_without_a_store_keeps_no_snapshots_and_the_same_board(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store a run opens for itself (``store=None``) is closed with the run: it keeps no
    snapshots (each a copy of the whole state every 100 records, read only by a later load), and
    the run ends with the same board and spend as one on a ``memory://`` store that does."""
    from datetime import UTC, datetime

    from slateboard.team import _team

    opened: list[Any] = []

    async def spy(url: str) -> Any:
        store = await open_store(url)
        opened.append(store)
        return store

    monkeypatch.setattr(_team, "open_store", spy)

    def team(store: str | None) -> Team:
        texts = [f"contribution {i}" for i in range(7)]
        return Team.blackboard(
            {n: Agent(n) for n in ("a", "b", "c")},
            model=ScriptedModel(texts, cycle=True),
            max_rounds=120,  # 240 records and more: snapshots are due twice on a default store
            store=store,
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            circuit={"max_repeats": 0},
        )

    own = await team(None).run("task")
    default = await team("memory://").run("task")
    assert [s.snapshot_every for s in opened] == [0, 100]
    assert own.state == default.state and own.rounds == default.rounds == 120
    assert own.usage == default.usage and own.turns == default.turns and own.output == default.output
