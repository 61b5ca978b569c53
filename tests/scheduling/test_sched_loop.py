"""The pieces together: kernel -> events -> scheduler -> agenda -> control unit -> circuit."""

from __future__ import annotations

import asyncio
from typing import Any

from sched_testkit import Board, blueprint

from slateboard.kernel import Proposal, Record
from slateboard.kernel.circuit import HALT, CircuitPolicy
from slateboard.scheduling import Agenda, AgendaOrder, BoardSummary, Scheduler

RULES: list[dict[str, Any]] = [
    {"name": "boot", "on": {"op": "start"}, "invoke": "editor"},
    {"name": "verify", "on": {"op": "add", "path": "/claims/-"}, "invoke": "verifier", "priority": 5},
    {"name": "tally", "on": {"op": "any", "path": "/claims/*/status"}, "invoke": "editor", "stage": "work"},
]
STAGES: list[dict[str, Any]] = [{"name": "work", "exit": "state.count >= 2"}]


def propose(worker: str, binding: tuple[str, ...], state: Any) -> list[dict[str, Any]]:
    if worker == "verifier":
        return [{"op": "add", "path": f"/claims/{binding[0]}/status", "value": "ok"}]
    if state["count"] < 2 and len(state["claims"]) < 2:
        return [
            {"op": "add", "path": "/claims/-", "value": {"text": f"c{len(state['claims'])}"}},
            {"op": "replace", "path": "/count", "value": state["count"] + 1},
        ]
    return [{"op": "replace", "path": "/count", "value": state["count"]}]  # a no-op


def run_board() -> tuple[list[Record], list[str], dict[str, Any], str]:
    bp = blueprint(RULES, stages=STAGES)
    board = Board(bp)
    sched = Scheduler(bp)
    agenda = Agenda(sched.start(board.state))
    unit = AgendaOrder()
    policy = CircuitPolicy.from_blueprint(bp)
    records: list[Record] = []
    ran: list[str] = []
    steps = 0
    ending = "agenda empty"
    while agenda:
        sel = asyncio.run(unit.select(agenda.eligible(), BoardSummary(version=board.version, steps=steps)))
        assert sel.invocation is not None
        inv = agenda.take(sel.invocation.id)
        assert inv is not None
        ran.append(f"{inv.id}:{inv.worker}")
        decision = board.kernel.submit(
            Proposal(inv.worker, propose(inv.worker, inv.binding, board.state), invocation=inv.id, event=inv.event)
        )
        agenda.complete(inv.id)
        records.append(decision.record)
        steps += 1
        if decision.accepted:
            for new in sched.schedule(decision.events, board.state, board.version, pending=agenda.pending_keys):
                agenda.push(new)
        action = policy.check(records, tokens_used=0, steps=steps)
        if action.logged:
            d = board.kernel.action(
                kind="circuit", reason=action.reason, worker=action.worker, meta=action.to_record_meta()
            )
            board.kernel.commit(d)
            records.append(d.record)
            if action.kind == HALT:
                ending = action.reason
                break
    return records, ran, sched.to_json(), ending


def test_loop_is_deterministic_and_terminates() -> None:
    first = run_board()
    second = run_board()
    assert [r.hash for r in first[0]] == [r.hash for r in second[0]]
    assert first[1:] == second[1:]
    records, ran, sched_state, ending = first
    # v4's status change would invoke the editor's tally, but the "work" stage exited at v3
    assert ran == ["v0.0:editor", "v1.0:verifier", "v2.0:editor", "v3.0:verifier"]
    assert ending == "agenda empty"
    assert sched_state["stages"]["stages"]["work"]["status"] == "exited"
    assert all(r.outcome in ("accepted", "noop") for r in records)
