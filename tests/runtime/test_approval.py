"""Human approval: a proposal touching an approval path pauses the board; approve/refuse decide
it; the run resumes from the store in a fresh Runner (as another process would)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _support.boards import approved_answer
from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.runtime import ApprovalError, BoardSession, Runner, approve, create_board, held_proposals, refuse
from slateboard.runtime.accounting import Accounts
from slateboard.stores import open_store
from slateboard.vocabulary import OUTCOME_ACCEPTED, OUTCOME_HELD, Outcome

BP = approved_answer("approved-answer")


class Calls:
    def __init__(self) -> None:
        self.decider = 0

    def functions(self) -> dict[str, Any]:
        def writer(view: Any) -> Any:
            return [{"op": "add", "path": "/notes/-", "value": "evidence"}]

        def decider(view: Any) -> Any:
            self.decider += 1
            return [{"op": "add", "path": "/answer", "value": "forty-two"}]

        return {"writer": writer, "decider": decider}


async def verify(url: str, board: str) -> None:
    store = await open_store(url)
    loaded = await store.load_board(board)
    records = await store.read_records(board)
    bp = compile_blueprint(loaded.blueprint)
    for revalidate in (False, True):
        report = replay(bp, loaded.initial_state, records, revalidate=revalidate)
        assert report.ok, str(report)
    await store.close()


async def paused_board(url: str, calls: Calls) -> tuple[str, int]:
    store = await open_store(url)
    board = await create_board(store, BP)
    result = await Runner(store, board, functions=calls.functions()).run()
    assert result.end_reason.startswith("paused: awaiting approval")
    assert "answer" not in result.state and result.state["notes"] == ["evidence"]
    info = await store.board_info(board)
    assert info.status == "paused"
    held = await held_proposals(store, board)
    assert len(held) == 1 and held[0].worker == "decider" and "/answer" in held[0].reason
    records = await store.read_records(board)
    rec = next(r for r in records if r.seq == held[0].seq)
    assert (rec.outcome, rec.stage) == ("held", "approval")
    assert rec.state_before == rec.state_after  # holding changes nothing
    await store.close()
    return board, held[0].seq


async def test_approved_patch_is_committed_on_resume_without_asking_the_worker_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'approval.db'}"
    calls = Calls()
    board, seq = await paused_board(url, calls)

    store = await open_store(url)
    # A second runner on a paused board with no decision stays paused.
    again = await Runner(store, board, functions=calls.functions()).run()
    assert again.end_reason.startswith("paused") and calls.decider == 1
    record = await approve(store, board, seq, by="alice", note="checked")
    assert record.kind == "approval" and record.meta["decision"] == "approved" and record.meta["by"] == "alice"
    assert (await store.board_info(board)).status == "running"
    with pytest.raises(ApprovalError):
        await approve(store, board, seq)  # already decided
    await store.close()

    store = await open_store(url)  # as another process would
    result = await Runner(store, board, functions=calls.functions()).run()
    assert result.end_reason == "done" and result.answer == "forty-two"
    assert calls.decider == 1  # the approved patch was committed as approved, not regenerated
    records = await store.read_records(board)
    committed = [r for r in records if r.outcome == "accepted" and r.worker == "decider"]
    assert len(committed) == 1 and committed[0].meta["approved"] == seq
    assert (await store.board_info(board)).status == "done"
    await store.close()
    await verify(url, board)


async def test_refused_patch_is_never_committed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'refusal.db'}"
    calls = Calls()
    board, seq = await paused_board(url, calls)
    store = await open_store(url)
    with pytest.raises(ApprovalError):
        await refuse(store, board, seq + 100)
    record = await refuse(store, board, seq, note="not sourced")
    assert record.meta["decision"] == "refused" and "not sourced" in (record.reason or "")
    result = await Runner(store, board, functions=calls.functions()).run()
    assert "answer" not in result.state and result.end_reason == "agenda_empty"
    assert await held_proposals(store, board) == []
    await store.close()
    await verify(url, board)


async def test_an_approved_patch_counts_as_a_step_like_a_reload_counts_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'steps.db'}"
    calls = Calls()
    board, seq = await paused_board(url, calls)
    store = await open_store(url)
    await approve(store, board, seq)
    session = BoardSession(store, board, functions=calls.functions())
    await session.load()
    before = session.accounts.steps
    assert await session.approved_first() is None
    # The approved patch is a proposal record: the session that committed it counts it now,
    # exactly as a session that loads the log afterwards does.
    assert session.accounts.steps == before + 1
    reloaded = BoardSession(store, board, functions=calls.functions())
    await reloaded.load()
    assert reloaded.accounts.steps == session.accounts.steps
    fold = Accounts.of(await store.read_records(board))
    assert (fold.steps, fold.tokens) == (session.accounts.steps, session.accounts.tokens)
    await store.close()


# -- the accounts' running index of held proposals (a Runner keeps no history) ---------------------
def _rec(seq: int, kind: str, outcome: Outcome, meta: dict[str, Any]) -> Any:
    from slateboard.kernel.record import Record, Usage

    return Record(seq, kind, outcome, "writer", None, None, None, "[]", None, f"r{seq}", 0, "", "", Usage(), "", meta)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["proposal-held", "proposal-accepted", "approval", "circuit"]),
            st.one_of(st.integers(0, 40), st.text(max_size=3), st.none(), st.lists(st.integers(), max_size=2)),
        ),
        max_size=40,
    )
)
def test_accounts_waiting_equals_a_scan_of_the_whole_log(steps: list[tuple[str, Any]]) -> None:
    """``Accounts.waiting`` (kept record by record) names exactly the held proposals that
    ``waiting_approvals`` finds in the whole log, in the same order, at every point of the log;
    approvals naming unknown, decided or non-integer records change nothing else."""
    from slateboard.runtime.boards import waiting_approvals

    records = []
    accounts = Accounts(keep_history=False)
    for seq, (what, ref) in enumerate(steps, start=1):
        if what == "approval":
            rec = _rec(seq, "approval", "accepted", {"record": ref, "decision": "approve"})
        elif what == "circuit":
            rec = _rec(seq, "circuit", "accepted", {"action": "noop"})
        else:
            rec = _rec(seq, "proposal", OUTCOME_HELD if what == "proposal-held" else OUTCOME_ACCEPTED, {})
        records.append(rec)
        accounts.note(rec)
        assert accounts.waiting() == waiting_approvals(records)
        assert accounts.last is not None and (accounts.last.seq, accounts.last.reason) == (rec.seq, rec.reason)
    assert accounts.history == []


async def test_a_runner_keeps_no_record_history_but_still_sees_its_approvals() -> None:
    """A Runner's session does not keep every record in memory (a long run would grow by
    kilobytes per step): ``history`` says so with a RunnerError, while held proposals are
    still found after a reload (the paused run reports the record it waits on)."""
    from slateboard.runtime import RunnerError

    store = await open_store("memory://")
    board = await create_board(store, BP)
    calls = Calls()
    runner = Runner(store, board, functions=calls.functions())
    first = await runner.run()
    assert first.end_reason.startswith("paused: awaiting approval of record")
    with pytest.raises(RunnerError, match="keeps no record history"):
        _ = runner.session.history
    again = await Runner(store, board, functions=calls.functions()).run()
    assert again.end_reason == first.end_reason
    await store.close()
