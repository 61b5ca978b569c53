"""The store conformance suite: claims inside appends, group commit, snapshots off the commit path."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from ...stores import (
    AgendaChanges,
    AgendaError,
    ClaimRequest,
    Conflict,
    Store,
)
from ...vocabulary import INVOCATION_CLAIMED, INVOCATION_DONE, INVOCATION_PENDING
from ..kit import WORKERS, Board, entry, inv, kernel_from


class AppendTests:
    """Claims inside appends, group commit, snapshots off the commit path."""

    async def test_claim_inside_append_leases_the_next_invocation(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("a", "w0", order=1)])
        first = await store.claim(board.board_id, owner="r")
        assert first is not None and first.invocation.id == "a"
        _, res = await board.step(
            "w0",
            entry("w0", "x"),
            invocation="a",
            agenda=AgendaChanges(push=[inv("b", "w1", order=2), inv("c", "w2", order=3)], complete=["a"]),
            claim=ClaimRequest(owner="r", lease_s=30, worker_names=["w2"]),
        )
        assert res.claim is not None and res.claim.invocation.id == "c" and res.claim.owner == "r"
        assert res.claim.board_id == board.board_id and res.claim.claims == 1
        statuses = {
            i.id: i.status
            for i in await store.agenda(board.board_id, (INVOCATION_PENDING, INVOCATION_CLAIMED, INVOCATION_DONE))
        }
        assert statuses == {"a": INVOCATION_DONE, "b": INVOCATION_PENDING, "c": INVOCATION_CLAIMED}
        # Nothing eligible: the append commits, the claim is None.
        _, res = await board.step(
            "w2", entry("w2", "y"), invocation="c", agenda=AgendaChanges(complete=["c"]),
            claim=ClaimRequest(owner="r", worker_names=["w0"]),
        )  # fmt: skip
        assert res.claim is None and (await store.board_info(board.board_id)).seq == 2
        # A failed append leases nothing.
        with pytest.raises(AgendaError):
            await board.step(
                "w1", entry("w1", "z"), agenda=AgendaChanges(complete=["ghost"]), claim=ClaimRequest(owner="r")
            )
        assert [(i.id, i.status) for i in await store.agenda(board.board_id)] == [("b", INVOCATION_PENDING)]

    async def test_claim_a_named_invocation(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("a", priority=5), inv("b", priority=1)])
        got = await store.claim(board.board_id, owner="o", invocation_id="b")
        assert got is not None and got.invocation.id == "b"
        assert await store.claim(board.board_id, owner="o", invocation_id="b") is None  # leased
        assert await store.claim(board.board_id, owner="o", invocation_id="nope") is None
        _, res = await board.step(
            "w0", entry("w0", "x"), agenda=AgendaChanges(complete=["b"]),
            claim=ClaimRequest(owner="o", invocation_id="a"),
        )  # fmt: skip
        assert res.claim is not None and res.claim.invocation.id == "a"

    async def test_claims_skip_the_history_of_done_invocations(self, store: Store) -> None:
        # Many completed invocations with a higher priority than the live one: the claim must
        # still find the live one (and only it), whatever the history holds.
        board = await Board.create(store, agenda=[inv(f"h{i}", priority=9, order=i) for i in range(40)])
        for i in range(40):
            await board.step("w0", entry("w0", f"e{i}"), agenda=AgendaChanges(complete=[f"h{i}"]))
        await store.push_invocations(board.board_id, [inv("live", "w1", priority=0, order=99)])
        assert [i.id for i in await store.agenda(board.board_id)] == ["live"]
        got = await store.claim(board.board_id, owner="o")
        assert got is not None and got.invocation.id == "live"
        assert await store.claim(board.board_id, owner="o") is None

    async def test_concurrent_appends_of_many_boards_commit_each_once(self, store: Store) -> None:
        boards = [await Board.create(store, agenda=[inv(f"s{j}", order=j) for j in range(6)]) for _ in range(8)]

        async def run(b: Board, n: int) -> None:
            for j in range(n):
                await b.step(WORKERS[j % 3], entry(WORKERS[j % 3], f"{b.board_id} {j}"),
                             agenda=AgendaChanges(complete=[f"s{j}"]))  # fmt: skip

        await asyncio.gather(*(run(b, 6) for b in boards))
        for b in boards:
            records = await store.read_records(b.board_id)
            assert records == b.records and len(records) == 6
            assert kernel_from(await store.load_board(b.board_id)).state == b.kernel.state
            assert await store.agenda(b.board_id) == []

    async def test_one_failing_append_does_not_fail_the_others_committed_with_it(self, store: Store) -> None:
        boards = [await Board.create(store) for _ in range(6)]
        stale = boards[2]
        await stale.step("w0", entry("w0", "first"))
        decision = stale.prepare("w1", entry("w1", "lost"))
        stale.kernel.abort(decision)
        forked = replace(decision.record, prev="f" * 64).sealed()  # loses its compare-and-set
        decisions = [b.prepare("w0", entry("w0", f"ok {i}")) for i, b in enumerate(boards) if b is not stale]
        others = [b for b in boards if b is not stale]
        results = await asyncio.gather(
            *(store.append(b.board_id, d.record) for b, d in zip(others, decisions, strict=True)),
            store.append(stale.board_id, forked),
            return_exceptions=True,
        )
        assert isinstance(results[-1], Conflict), results[-1]
        for b, d, res in zip(others, decisions, results, strict=False):
            assert not isinstance(res, BaseException), res
            b.kernel.commit(d)
            assert await store.read_records(b.board_id) == [d.record]
        assert [r.seq for r in await store.read_records(stale.board_id)] == [1]

    async def test_snapshot_is_built_from_the_log_not_the_callers_live_state(self, store: Store) -> None:
        store.snapshot_every = 3
        board = await Board.create(store)
        for i in range(3):
            await board.step("w0", entry("w0", f"e{i}"))
        # The caller's state object changes after the append returned (the kernel mutates it in
        # place): the snapshot must still hold the state after record 3.
        board.kernel.state["notes"]["sneaky"] = "not committed"
        loaded = await store.load_board(board.board_id)
        assert loaded.snapshot is not None and loaded.snapshot.seq == 3
        assert loaded.snapshot.state == {"entries": [{"author": "w0", "text": f"e{i}"} for i in range(3)], "notes": {}}
        assert loaded.snapshot.state_hash == board.records[2].state_after
