"""The store conformance suite: the optional capabilities, each test skipped (saying why) where the store does not declare it."""

from __future__ import annotations

import asyncio

import pytest

from ...stores import (
    AgendaChanges,
    BoardNotFound,
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    Store,
    WatchesBoards,
    WatchesWork,
)
from ...vocabulary import BOARD_DONE, BOARD_RUNNING
from ..kit import Board, OpenStore, entry, inv
from ._support import require


class CapabilityTests:
    """The optional capabilities, each test skipped (saying why) where the store does not declare it."""

    async def test_wait_for_work_of_some_workers(self, store: Store) -> None:
        require(store, WatchesWork)
        assert isinstance(store, WatchesWork)
        board = await Board.create(store, agenda=[inv("for-w1", "w1")])
        assert await store.wait_for_work(5.0, worker_names=["w1"]) is True
        assert await store.wait_for_work(0.2, worker_names=["w2"]) is False
        claim = await store.claim(board.board_id, owner="o", worker_names=["w1"])
        assert claim is not None and claim.invocation.id == "for-w1"

    async def test_wait_for_board_wakes_when_it_leaves_running(self, store: Store, open_another: OpenStore) -> None:
        require(store, WatchesBoards)
        assert isinstance(store, WatchesBoards)
        other = await open_another()
        board = await Board.create(store)
        still = await store.wait_for_board(board.board_id, 0.1)
        assert still.status == BOARD_RUNNING

        async def finish_later() -> None:
            await asyncio.sleep(0.1)
            await other.set_status(board.board_id, BOARD_DONE, "finished: test")

        # Its status says the wait ended on the change, not on the timeout (that returns "running").
        info, _ = await asyncio.gather(store.wait_for_board(board.board_id, 10.0), finish_later())
        assert (info.status, info.reason) == (BOARD_DONE, "finished: test")
        with pytest.raises(BoardNotFound):
            await store.wait_for_board("nope", 0.1)

    async def test_wait_for_board_after_seq_wakes_on_an_append(self, store: Store, open_another: OpenStore) -> None:
        require(store, WatchesBoards)
        assert isinstance(store, WatchesBoards)
        other = await open_another()
        board = await Board.create(other)
        await board.step("w0", entry("w0", "first"))
        assert (await store.wait_for_board(board.board_id, 0.05, after_seq=0)).seq == 1  # already past

        async def append_later() -> None:
            await asyncio.sleep(0.1)
            await board.step("w1", entry("w1", "second"))

        # A 60 s timeout: the wait can only have ended on the append (the board still runs).
        info, _ = await asyncio.gather(store.wait_for_board(board.board_id, 60.0, after_seq=1), append_later())
        assert (info.status, info.seq) == (BOARD_RUNNING, 2)

    async def test_wait_for_board_waits_on_several_boards_at_once(self, store: Store, open_another: OpenStore) -> None:
        require(store, WatchesBoards)
        assert isinstance(store, WatchesBoards)
        other = await open_another()
        quiet, busy = await Board.create(other), await Board.create(other)
        # Long timeouts: a wait can only end early on its own board's append.
        wait_quiet = asyncio.create_task(store.wait_for_board(quiet.board_id, 60.0, after_seq=0))
        wait_busy = asyncio.create_task(store.wait_for_board(busy.board_id, 60.0, after_seq=0))
        await asyncio.sleep(0.1)  # both are waiting now
        await busy.step("w0", entry("w0", "news"))
        done, _ = await asyncio.wait({wait_quiet, wait_busy}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {wait_busy} and wait_busy.result().seq == 1  # not held up by the other wait
        await quiet.step("w0", entry("w0", "news too"))
        assert (await asyncio.wait_for(wait_quiet, 60)).seq == 1

    async def test_watch_follows_appends_of_another_store_object_to_the_end(
        self, store: Store, open_another: OpenStore
    ) -> None:
        from ...runtime.watch import watch

        other = await open_another()
        board = await Board.create(other)  # written through another connection, watched here
        await board.step("w0", entry("w0", "first"))

        async def write_then_end() -> None:
            for i in range(4):
                await asyncio.sleep(0.02)
                await board.step(f"w{i % 3}", entry(f"w{i % 3}", f"n{i}"))
            await other.set_status(board.board_id, BOARD_DONE, "finished: test")

        async def follow(after: int) -> list[int]:
            return [r.seq async for r in watch(store, board.board_id, after=after, poll=0.02)]

        seen, _ = await asyncio.gather(follow(0), write_then_end())
        assert seen == [1, 2, 3, 4, 5]  # every record once, in order, ending with the board
        assert await follow(2) == [3, 4, 5]  # resumed from a seq: nothing lost or repeated
        assert await follow(5) == []

    async def test_stalled_boards(self, store: Store) -> None:
        require(store, ScansStalledBoards)
        assert isinstance(store, ScansStalledBoards)
        empty = await Board.create(store)
        busy = await Board.create(store, agenda=[inv("x")])
        done = await Board.create(store)
        await store.set_status(done.board_id, BOARD_DONE)
        claimed = await Board.create(store, agenda=[inv("y")])
        assert await store.claim(claimed.board_id, owner="o") is not None
        finished = await Board.create(store, agenda=[inv("z")])
        await finished.step("w0", entry("w0", "x"), agenda=AgendaChanges(complete=["z"]))
        stalled = await store.stalled_boards()
        assert stalled == [empty.board_id, finished.board_id]
        assert busy.board_id not in stalled and claimed.board_id not in stalled

    async def test_commit_stats_count_appends_and_flushes(self, store: Store) -> None:
        require(store, ReportsCommits)
        assert isinstance(store, ReportsCommits)
        boards = [await Board.create(store) for _ in range(4)]
        before = store.commit_stats()
        await asyncio.gather(*(b.step("w0", entry("w0", "x")) for b in boards))
        after = store.commit_stats()
        assert after.appends - before.appends == 4
        assert 0 <= after.flushes - before.flushes <= 4
        assert after.batches - before.batches <= 4

    async def test_leases_name_owner_and_end(self, store: Store) -> None:
        require(store, ReportsLeases)
        assert isinstance(store, ReportsLeases)
        board = await Board.create(store, agenda=[inv("a"), inv("b")])
        assert await store.leases(board.board_id) == []
        t = 1_000_000.0
        first = await store.claim(board.board_id, owner="runner-1@host:42", lease_s=10, now=t)
        assert first is not None
        (lease,) = await store.leases(board.board_id)
        assert (lease.invocation_id, lease.owner, lease.lease_until) == (
            first.invocation.id,
            "runner-1@host:42",
            t + 10,
        )
        # given back (a negative lease ends it now): claimable at once by another owner
        await store.heartbeat(board.board_id, first.invocation.id, owner="runner-1@host:42", lease_s=-10, now=t + 1)
        again = await store.claim(
            board.board_id, owner="other", lease_s=10, now=t + 2, invocation_id=first.invocation.id
        )
        assert again is not None and again.owner == "other"
        assert [x.owner for x in await store.leases(board.board_id)] == ["other"]
        with pytest.raises(BoardNotFound):
            await store.leases("no-such-board")
