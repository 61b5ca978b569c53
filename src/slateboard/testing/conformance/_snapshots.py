"""The store conformance suite: snapshots: when they are due, who writes them, only the latest kept (``LogStore``)."""

from __future__ import annotations

import pytest

from ...stores import (
    Conflict,
    Store,
)
from ..kit import WORKERS, Board, entry, kernel_from


class SnapshotTests:
    """Snapshots: when they are due, who writes them, only the latest kept (``LogStore``)."""

    async def test_snapshots_every_n_records_keep_only_the_latest(self, store: Store) -> None:
        store.snapshot_every = 5
        board = await Board.create(store)
        results = []
        for i in range(12):
            _, res = await board.step(WORKERS[i % 3], entry(WORKERS[i % 3], f"e{i}"))
            results.append(res)
        assert [r.snapshot_written for r in results] == [i + 1 in (5, 10) for i in range(12)]
        loaded = await store.load_board(board.board_id)
        assert loaded.snapshot is not None
        assert (loaded.snapshot.seq, loaded.snapshot.version) == (10, 10)
        assert loaded.snapshot.last_hash == board.records[9].hash
        assert loaded.snapshot.state_hash == board.records[9].state_after
        assert [r.seq for r in loaded.records] == [11, 12]
        assert len(loaded.snapshot.state["entries"]) == 10
        assert kernel_from(loaded).state == board.kernel.state

    async def test_snapshot_due_without_state_then_written_by_the_caller_or_compacted(self, store: Store) -> None:
        store.snapshot_every = 3
        board = await Board.create(store)
        res = []
        for i in range(4):
            res.append((await board.step("w0", entry("w0", f"e{i}"), with_state=False))[1])
        assert [r.snapshot_due for r in res] == [False, False, True, True]
        assert (await store.load_board(board.board_id)).snapshot is None
        rec3 = board.records[2]
        with pytest.raises(Conflict):
            await store.write_snapshot(board.board_id, {}, version=3, seq=3, last_hash=rec3.hash, state_hash="0" * 64)
        with pytest.raises(Conflict):
            await store.write_snapshot(
                board.board_id, {}, version=9, seq=9, last_hash=rec3.hash, state_hash=rec3.state_after
            )
        k = board.kernel
        await store.write_snapshot(
            board.board_id, k.state, version=k.version, seq=k.seq, last_hash=k.last_hash, state_hash=k.state_hash
        )
        loaded = await store.load_board(board.board_id)
        assert loaded.snapshot is not None and loaded.snapshot.seq == 4 and loaded.records == []
        await board.step("w1", entry("w1", "after"), with_state=False)
        await board.step("w1", [{"op": "add", "path": "/bad", "value": 1}], with_state=False)
        snap = await store.compact(board.board_id)
        assert snap is not None and (snap.seq, snap.version, snap.state_hash) == (6, 5, board.kernel.state_hash)
        loaded = await store.load_board(board.board_id)
        assert loaded.snapshot == snap and loaded.records == []
        assert kernel_from(loaded).state == board.kernel.state
