"""Team.blackboard on the runtime's step engine (issue 12) and the classic board's safeguards
(issue 15, item 10): turns on the store's agenda, the circuit policy and the stuck detector,
``team.resume(board_id)`` after a crash, and ``approval=``."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from team_testkit import Events, decision, verify_log

from slateboard.blueprint import BlueprintError
from slateboard.kernel.circuit import actions_in
from slateboard.models import ModelUnavailable, ScriptedModel
from slateboard.runtime.approval import approve, held_proposals
from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.team import Agent, Team
from slateboard.team._team import ApprovalRequest, ResumeError

NOON = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return NOON


@pytest.fixture
async def store() -> Any:
    s = await open_store("memory://")
    yield s
    await s.close()


class Crash(BaseException):
    """Stands for the process dying (not an Exception: nothing in the run may swallow it)."""


def crash(messages: Any) -> str:
    raise Crash("the process died")


def unavailable(messages: Any) -> str:
    raise ModelUnavailable("scripted", "connection refused")


def control_rounds(records: list[Any]) -> list[int]:
    return [r.meta["round"] for r in records if r.kind == "control"]


# -- the engine: turns are invocations on the store's agenda -----------------------------------------
async def test_each_turn_is_an_agenda_invocation_claimed_and_completed(store: Store) -> None:
    coordinator = ScriptedModel([decision(agent="a", instruction="Go."), decision(agent="b"), decision(terminate=True)])
    team = Team.blackboard(
        {"a": Agent("A", model=ScriptedModel(["A1"])), "b": Agent("B", model=ScriptedModel(["B1"]))},
        coordinator=Agent("c", model=coordinator),
        store=store,
        clock=fixed_clock,
    )
    result = await team.run("task")
    assert result.end_reason == "terminated" and [e["content"] for e in result.public[1:]] == ["A1", "B1"]
    done = await store.agenda(result.board_id, ("done",))
    assert [(i.id, i.worker) for i in done] == [("round-1", "a"), ("round-2", "b"), ("decide", "__decider")]
    assert await store.agenda(result.board_id) == []  # nothing pending or claimed is left
    # The turn's event is the coordinator's instruction; the proposal names its invocation.
    assert done[0].event == {"kind": "coordinator", "round": 1, "agent": "a", "instruction": "Go."}
    records = await store.read_records(result.board_id)
    assert [r.invocation for r in records if r.kind == "proposal"] == ["round-1", "round-2", "decide"]
    assert result.turns == 3 + 2  # three coordinator calls, two agents (no decider: the fallback)
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_a_rejected_turn_is_not_retried_outside_the_rounds(store: Store) -> None:
    model = ScriptedModel([unavailable, "recovered"])
    team = Team.blackboard({"a": Agent("x", model=model)}, max_rounds=2, store=store)
    result = await team.run("task")
    # The rejection completed round 1's turn: the engine queued no retry, round 2 is a new turn.
    assert len(model.calls) == 2 and [e["content"] for e in result.public[1:]] == ["recovered"]
    done = await store.agenda(result.board_id, ("done",))
    assert [i.id for i in done] == ["round-1", "round-2", "decide"] and all(i.attempts == 0 for i in done)


# -- the circuit policy and the stuck detector ----------------------------------------------------
async def test_a_provider_that_keeps_failing_halts_the_run(store: Store) -> None:
    events = Events()
    decider = ScriptedModel(["never asked"])
    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel([unavailable], cycle=True))},
        decider=Agent("d", model=decider),
        max_rounds=10,
        store=store,
        on_event=events,
    )
    result = await team.run("task")
    assert result.halted and result.interrupted and result.rounds == 3
    assert result.end_reason.startswith("circuit: model unavailable:") and "connection refused" in result.end_reason
    assert result.interruption_reason == result.end_reason and result.output == ""
    assert decider.calls == []  # a halted run is not answered
    assert events.of("blackboard.halted") == [{"round": 3, "reason": result.end_reason, "trigger": "model"}]
    assert events.kinds[-1] == "blackboard.halted" and "blackboard.completed" not in events.kinds
    records = await store.read_records(result.board_id)
    assert [a.trigger for a in actions_in(records)] == ["model"]
    assert records[-1].kind == "run" and records[-1].reason == result.end_reason
    info = await store.board_info(result.board_id)
    assert info.status == "failed" and info.reason == result.end_reason
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_repeatedly_rejected_entries_halt_with_the_reasons(store: Store) -> None:
    # An entry over the board's patch limit is rejected (not a provider failure): three in a row
    # by the same agent halt the run (the classic board's on_invalid is "halt").
    huge = "x" * (1 << 20)
    strict = Team.blackboard({"a": Agent("x", model=ScriptedModel([huge], cycle=True))}, max_rounds=20, store=store)
    halted = await strict.run("task")
    assert halted.end_reason.startswith("circuit: 3 consecutive invalid proposals by 'a'")
    assert "on_invalid=halt" in halted.end_reason and halted.rounds == 3
    actions = actions_in(await store.read_records(halted.board_id))
    assert [(a.kind, a.trigger, a.worker) for a in actions] == [("halt", "invalid", "a")]
    assert len(actions[0].details["rejections"]) == 3


async def test_circuit_settings_reach_the_policy() -> None:
    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel([unavailable, "ok"], cycle=True))},
        max_rounds=10,
        circuit={"max_consecutive_invalid": 1, "stuck_after": 50},
    )
    result = await team.run("task")
    assert result.rounds == 1 and result.end_reason.startswith("circuit: model unavailable")
    with pytest.raises(BlueprintError, match="stuck_after"):
        Team.blackboard({"a": Agent("x")}, circuit={"stuck_after": 0})
    with pytest.raises(BlueprintError):
        Team.blackboard({"a": Agent("x")}, circuit={"no_such_setting": 1})
    with pytest.raises(ValueError, match="max_repeats"):
        Team.blackboard({"a": Agent("x")}, circuit={"max_repeats": -1})


async def test_an_agent_repeating_itself_is_halted(store: Store) -> None:
    events = Events()
    team = Team.blackboard(
        {
            "a": Agent("x", model=ScriptedModel(["same thing"], cycle=True)),
            "b": Agent("y", model=ScriptedModel(["new"])),
        },
        coordinator=Agent("c", model=ScriptedModel([decision(agent="a")], cycle=True)),
        max_rounds=10,
        store=store,
        circuit={"max_repeats": 3},
        on_event=events,
    )
    result = await team.run("task")
    assert result.halted and result.rounds == 3
    assert (
        result.end_reason
        == "circuit: repeat: 'a' posted the same contribution 3 times in a row (entries e2, e3, e4, max_repeats=3)"
    )
    assert events.of("blackboard.halted")[0]["trigger"] == "repeat"
    # Off: the same run plays all its rounds.
    off = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["same thing"], cycle=True))}, max_rounds=6, circuit={"max_repeats": 0}
    )
    assert (await off.run("task")).end_reason == "rounds_played"


async def test_two_agents_echoing_each_other_are_halted() -> None:
    team = Team.blackboard(
        {
            "a": Agent("x", model=ScriptedModel(["I agree with b."], cycle=True)),
            "b": Agent("y", model=ScriptedModel(["I agree with a."], cycle=True)),
        },
        max_rounds=20,
        circuit={"max_alternations": 4},
    )
    result = await team.run("task")
    assert result.halted and result.rounds == 4
    assert result.end_reason.startswith("circuit: alternation: 'a' and 'b' repeated each other's")


# -- resume after a crash -------------------------------------------------------------------------
def resumable_team(url: str, agents: dict[str, list[Any]], coordinator: list[Any], decider: list[Any]) -> Team:
    return Team.blackboard(
        {n: Agent(f"{n} role", model=ScriptedModel(r)) for n, r in agents.items()},
        coordinator=Agent("coordinate", model=ScriptedModel(coordinator)),
        decider=Agent("decide", model=ScriptedModel(decider)),
        store=url,
        clock=fixed_clock,
        max_rounds=8,
    )


PICKS = [decision(agent="a", instruction="Start."), decision(agent="b"), decision(agent="a"), decision(agent="b")]
STOP = decision(terminate=True)


async def test_resume_after_a_crash_in_a_turn_reaches_the_same_board(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    reference = await resumable_team(url, {"a": ["A1", "A2"], "b": ["B1", "B2"]}, [*PICKS, STOP], ["final"]).run("task")
    assert reference.end_reason == "terminated" and reference.rounds == 5

    # The process dies in round 3, inside agent a's model call: the decision of round 3 is
    # logged and its turn claimed, nothing of it committed.
    events = Events()
    crashing = resumable_team(url, {"a": ["A1", crash], "b": ["B1"]}, PICKS[:3], ["unused"])
    with pytest.raises(Crash):
        await crashing.run("task", on_event=events)
    board_id = events.items[0].board_id
    store = await open_store(url)
    try:
        assert [i.id for i in await store.agenda(board_id, ("claimed",))] == ["round-3"]
    finally:
        await store.close()

    # A fresh team with the same configuration, whose models hold only what is left to say.
    a, b, c, d = ScriptedModel(["A2"]), ScriptedModel(["B2"]), ScriptedModel([PICKS[3], STOP]), ScriptedModel(["final"])
    fresh = Team.blackboard(
        {"a": Agent("a role", model=a), "b": Agent("b role", model=b)},
        coordinator=Agent("coordinate", model=c),
        decider=Agent("decide", model=d),
        store=url,
        clock=fixed_clock,
        max_rounds=8,
    )
    resumed_events = Events()
    result = await fresh.resume(board_id, on_event=resumed_events)
    assert result.state == reference.state and result.output == "final" and result.end_reason == "terminated"
    assert result.rounds == 5 and result.board_id == board_id
    # Nothing committed was redone: round 3's turn ran once more, rounds 4 and 5 were decided.
    assert (len(a.calls), len(b.calls), len(c.calls), len(d.calls)) == (1, 1, 2, 1)
    assert resumed_events.of("blackboard.started")[0]["resumed"] is True
    assert resumed_events.of("blackboard.invoking")[0] == {"round": 3, "agent": "a"}
    store = await open_store(url)
    try:
        records = await store.read_records(board_id)
        assert control_rounds(records) == [1, 2, 3, 4, 5]
        assert [r.worker for r in records if r.kind == "proposal"] == ["a", "b", "a", "b", "__decider"]
        assert sum(r.kind == "run" for r in records) == 1
        assert (await verify_log(store, board_id, revalidate=True)).ok
        assert (await store.board_info(board_id)).status == "done"
        # The usage of the whole board is counted once: the same as the uninterrupted run's.
        assert result.turns == reference.turns and result.tokens_in == reference.tokens_in
        # Resuming an ended board returns its result and appends nothing.
        again = await fresh.resume(board_id)
        assert again.output == "final" and again.end_reason == "terminated" and again.rounds == 5
        assert len(await store.read_records(board_id)) == len(records)
    finally:
        await store.close()


async def test_resume_after_a_cancelled_task_between_rounds(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    reference = await resumable_team(url, {"a": ["A1", "A2"], "b": ["B1", "B2"]}, [*PICKS, STOP], ["final"]).run("task")
    team = resumable_team(url, {"a": ["A1", "A2"], "b": ["B1", "B2"]}, [*PICKS, STOP], ["final"])
    seen: list[str] = []
    task: asyncio.Task[Any] | None = None

    def cancel_after_round_two(event: Any) -> None:
        seen.append(event.board_id)
        if event.kind == "blackboard.contribution" and event.data["round"] == 2:
            assert task is not None
            task.cancel()

    task = asyncio.create_task(team.run("task", on_event=cancel_after_round_two))
    with pytest.raises(asyncio.CancelledError):
        await task
    board_id = seen[0]
    c = ScriptedModel([PICKS[2], PICKS[3], STOP])
    fresh = Team.blackboard(
        {"a": Agent("a role", model=ScriptedModel(["A2"])), "b": Agent("b role", model=ScriptedModel(["B2"]))},
        coordinator=Agent("coordinate", model=c),
        decider=Agent("decide", model=ScriptedModel(["final"])),
        store=url,
        clock=fixed_clock,
        max_rounds=8,
    )
    result = await fresh.resume(board_id)
    assert result.state == reference.state and result.output == "final" and len(c.calls) == 3
    store = await open_store(url)
    try:
        assert control_rounds(await store.read_records(board_id)) == [1, 2, 3, 4, 5]
    finally:
        await store.close()


async def test_resume_refuses_another_teams_board(store: Store) -> None:
    result = await Team.blackboard({"a": Agent("x", model=ScriptedModel(["A"]))}, max_rounds=1, store=store).run("t")
    other = Team.blackboard({"z": Agent("x", model=ScriptedModel(["Z"]))}, store=store)
    with pytest.raises(ResumeError, match=r"\['a'\]"):
        await other.resume(result.board_id)


# -- approval ---------------------------------------------------------------------------------------
async def test_approval_commits_approved_entries_and_never_refused_ones(store: Store) -> None:
    asked: list[ApprovalRequest] = []

    async def policy(request: ApprovalRequest) -> bool | tuple[bool, str]:
        asked.append(request)
        if request.agent == "b":
            return False, "b may not post"
        return True

    events = Events()
    team = Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["A1", "A2"])), "b": Agent("y", model=ScriptedModel(["B1"]))},
        max_rounds=3,
        store=store,
        approval=policy,
        on_event=events,
    )
    result = await team.run("task")
    assert [(r.agent, r.round, r.entry["content"] if r.entry else None) for r in asked] == [
        ("a", 1, "A1"),
        ("b", 2, "B1"),
        ("a", 3, "A2"),
    ]
    assert [e["content"] for e in result.public[1:]] == ["A1", "A2"]  # B1 was refused: never committed
    assert result.output == "A2" and result.end_reason == "rounds_played"
    assert [(d["agent"], d["decision"]) for d in events.of("blackboard.approval")] == [
        ("a", "approved"),
        ("b", "refused"),
        ("a", "approved"),
    ]
    assert events.of("blackboard.rejected") == [
        {
            "round": 2,
            "agent": "b",
            "stage": "approval",
            "reason": "refused by the approval policy: b may not post",
            "error": None,
        }
    ]
    assert [c["content"] for c in events.of("blackboard.contribution")] == ["A1", "A2"]
    records = await store.read_records(result.board_id)
    held = [r for r in records if r.outcome == "held"]
    decisions = [(r.meta["record"], r.meta["decision"]) for r in records if r.kind == "approval"]
    assert decisions == [(held[0].seq, "approved"), (held[1].seq, "refused"), (held[2].seq, "approved")]
    assert all("B1" not in (r.patch or "") for r in records if r.outcome == "accepted")
    assert await held_proposals(store, result.board_id) == []
    assert (await verify_log(store, result.board_id, revalidate=True)).ok


async def test_approval_paths_without_a_policy_pause_then_resume(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"

    def team(replies: list[str]) -> Team:
        return Team.blackboard(
            {"a": Agent("x", model=ScriptedModel(replies))},
            max_rounds=2,
            store=url,
            clock=fixed_clock,
            approval_paths=["/public/*"],
        )

    paused = await team(["A1"]).run("task")
    assert paused.interrupted and paused.end_reason.startswith("paused: awaiting approval of record")
    assert paused.public[1:] == []
    store = await open_store(url)
    try:
        assert (await store.board_info(paused.board_id)).status == "paused"
        [held] = await held_proposals(store, paused.board_id)
        await approve(store, paused.board_id, held.seq, by="reviewer")
    finally:
        await store.close()
    result = await team(["A2"]).resume(paused.board_id)
    # The approved entry is committed without asking the agent again, round 2 is held in turn.
    assert [e["content"] for e in result.public[1:]] == ["A1"]
    assert result.end_reason.startswith("paused: awaiting approval") and result.rounds == 2


def test_approval_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="approval must be a callable"):
        Team.blackboard({"a": Agent("x")}, approval="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="approval_paths"):
        Team.blackboard({"a": Agent("x")}, approval_paths="/public/*")
    with pytest.raises(BlueprintError):
        Team.blackboard({"a": Agent("x")}, approval_paths=["not a pointer"])
    team = Team.blackboard({"a": Agent("x")}, approval=lambda r: True)
    assert team.approval_paths == ("/public/*",)
    assert json.loads(json.dumps(team.board_spec()))["approval"] == ["/public/*"]


async def test_a_retry_the_circuit_policy_queues_carries_its_feedback_into_the_next_turn(store: Store) -> None:
    huge = "x" * (1 << 20)
    model = ScriptedModel([huge, huge, huge, "ok"])
    team = Team.blackboard({"a": Agent("x", model=model)}, max_rounds=4, store=store, circuit={"on_invalid": "retry"})
    result = await team.run("task")
    records = await store.read_records(result.board_id)
    [action] = actions_in(records)
    assert action.kind == "retry_with_feedback" and action.worker == "a" and action.feedback
    # The policy's queued turn is cancelled by round 4's decision, whose turn carries its feedback.
    cancelled = await store.agenda(result.board_id, ("cancelled",))
    assert [(i.worker, i.rule) for i in cancelled] == [("a", "circuit")]
    [turn] = [i for i in await store.agenda(result.board_id, ("done",)) if i.id == "round-4"]
    assert turn.feedback == action.feedback
    assert "Your previous contribution was refused" in str(model.calls[3].messages[-1].content)
    assert [e["content"] for e in result.public[1:]] == ["ok"] and result.end_reason == "rounds_played"


async def test_a_resumed_run_sees_the_logged_spend_in_its_budget(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    from slateboard.team import Budget

    def team(replies: list[Any]) -> Team:
        return Team.blackboard(
            {"a": Agent("x", model=ScriptedModel(replies))},
            max_rounds=10,
            store=url,
            clock=fixed_clock,
            budget=Budget(max_calls=3),
        )

    reference = await team(["A1", "A2", "A3"]).run("task")
    assert reference.end_reason == "budget:max_calls (3 of 3 model calls made)" and reference.rounds == 3
    events = Events()
    with pytest.raises(Crash):
        await team(["A1", crash]).run("task", on_event=events)
    result = await team(["A2", "A3"]).resume(events.items[0].board_id)
    assert result.end_reason == reference.end_reason and result.rounds == 3
    assert result.state == reference.state and result.interrupted


async def test_a_paused_entry_is_put_to_the_approval_policy_on_resume(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    paused = await Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["A1"]))}, max_rounds=2, store=url, approval_paths=["/public/*"]
    ).run("task")
    assert paused.end_reason.startswith("paused:")
    asked: list[int | None] = []

    def policy(request: ApprovalRequest) -> bool:
        asked.append(request.round)
        return True

    events = Events()
    result = await Team.blackboard(
        {"a": Agent("x", model=ScriptedModel(["A2"]))}, max_rounds=2, store=url, approval=policy
    ).resume(paused.board_id, on_event=events)
    assert asked == [1, 2] and [e["content"] for e in result.public[1:]] == ["A1", "A2"]
    assert result.end_reason == "rounds_played" and result.output == "A2" and not result.interrupted
    assert [c["content"] for c in events.of("blackboard.contribution")] == ["A1", "A2"]
