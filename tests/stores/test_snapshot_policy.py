"""The shipped stores' snapshot policy: a snapshot is due after ``snapshot_every`` records AND
once the log written since the last snapshot outweighs it (``SNAPSHOT_TAIL_RATIO``), so the
cost of snapshots per appended byte does not grow with the state (issue 14)."""

from __future__ import annotations

import itertools

from slateboard.stores import Store
from slateboard.stores.backend import StoreBackend
from slateboard.testing import Board, entry
from slateboard.testing.kit import WORKERS, kernel_from


async def test_snapshots_follow_the_weight_of_the_log_not_only_its_length(store: Store) -> None:
    """With a snapshot due at every record by count, a growing state is still not re-encoded at
    every append: their number grows far slower than the log, each one waits until the log
    since the previous one outweighs it, and a load (snapshot + the log after it) gives the
    board's exact state."""
    assert isinstance(store, StoreBackend)
    store.snapshot_every = 1
    board = await Board.create(store)
    at: list[int] = []
    for i in range(300):
        rec, res = await board.step(WORKERS[i % 3], entry(WORKERS[i % 3], f"entry {i} " + "y" * 80, i))
        if res.snapshot_written:
            at.append(rec.seq)
        await store.settle_snapshots(board.board_id)  # the next decision knows the last one's size
    assert 3 <= len(at) <= 150, at  # by count alone: 300
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert gaps[-1] > gaps[0], at  # the state grows, so the log must grow longer before the next
    loaded = await store.load_board(board.board_id)
    assert loaded.snapshot is not None and loaded.snapshot.seq == at[-1]
    assert loaded.snapshot.seq + len(loaded.records) == 300
    assert kernel_from(loaded).state == board.kernel.state


async def test_the_record_count_still_bounds_how_often(store: Store) -> None:
    """``snapshot_every`` stays a minimum distance: a tiny state never snapshots more often."""
    assert isinstance(store, StoreBackend)
    store.snapshot_every = 5
    board = await Board.create(store)
    written = [(await board.step("w0", entry("w0", f"e{i}")))[1].snapshot_written for i in range(12)]
    assert [i + 1 for i, w in enumerate(written) if w] == [5, 10]


async def test_building_a_snapshot_copies_the_start_state_unless_handed_over(store: Store) -> None:
    """``build_snapshot`` applies the log to a copy of the state it starts from; with
    ``owned=True`` (the background builder, which has just decoded it) to that state itself.
    Either way the result is the board's state at the last record."""
    from slateboard.stores import _common as c

    board = await Board.create(store)
    for i in range(4):
        await board.step(WORKERS[i % 3], entry(WORKERS[i % 3], f"entry {i}", i))
    loaded = await store.load_board(board.board_id)
    initial = loaded.initial_state
    before = repr(initial)
    kept = c.build_snapshot("test", None, initial, loaded.records)
    assert kept is not None and kept.state == board.kernel.state and kept.seq == 4
    assert repr(initial) == before  # not handed over: untouched
    handed = c.build_snapshot("test", None, initial, loaded.records, owned=True)
    assert handed is not None and handed.state == board.kernel.state and handed.state_hash == kept.state_hash
    assert handed.state is initial  # handed over: the patches went into it, no copy was made
