"""The store conformance suite: the agenda and its claims: pushes, claim order, leases, wake-ups (``AgendaStore``)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from ...scheduling.invocation import Invocation
from ...stores import (
    AgendaChanges,
    AgendaError,
    LeaseLost,
    MemoryStore,
    Store,
    StoreError,
)
from ...vocabulary import (
    BOARD_PAUSED,
    BOARD_RUNNING,
    INVOCATION_CANCELLED,
    INVOCATION_CLAIMED,
    INVOCATION_DONE,
    INVOCATION_PENDING,
)
from ..kit import WORKERS, Board, OpenStore, entry, inv


class AgendaTests:
    """The agenda and its claims: pushes, claim order, leases, wake-ups (``AgendaStore``)."""

    async def test_push_is_idempotent_and_deduplicates_pending_keys(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("s1", binding=("k",))])
        added = await store.push_invocations(
            board.board_id,
            [
                inv("s1", binding=("other",)),
                inv("s2", binding=("k",)),
                inv("s3", binding=("k2",)),
                inv("s4", binding=("k2",)),
            ],
        )
        assert added == ["s3"]
        assert [i.id for i in await store.agenda(board.board_id)] == ["s1", "s3"]
        # Once s1 is no longer pending, its key may be pending again.
        claim = await store.claim(board.board_id, owner="o")
        assert claim is not None and claim.invocation.id == "s1"
        assert await store.push_invocations(board.board_id, [inv("s5", binding=("k",))]) == ["s5"]

    async def test_claim_order_filters_and_board_status(self, store: Store) -> None:
        invs = [
            inv("low-old", "w0", priority=0, order=1),
            inv("high-new", "w1", priority=5, order=9),
            inv("high-old", "w2", priority=5, order=2),
            inv("low-new", "w1", priority=0, order=3),
        ]
        board = await Board.create(store, agenda=invs)
        pending = await store.agenda(board.board_id)
        assert [i.id for i in pending] == ["high-old", "high-new", "low-old", "low-new"]
        c1 = await store.claim(board.board_id, owner="a", worker_names=["w1", "w0"])
        assert c1 is not None and c1.invocation.id == "high-new" and c1.invocation.status == INVOCATION_CLAIMED
        assert c1.board_id == board.board_id and c1.claims == 1
        assert await store.claim(board.board_id, owner="a", worker_names=[]) is None
        await store.set_status(board.board_id, BOARD_PAUSED)
        assert await store.claim(board.board_id, owner="a") is None
        assert await store.claim(None, owner="a") is None
        await store.set_status(board.board_id, BOARD_RUNNING)
        got = [await store.claim(None, owner="b") for _ in range(4)]
        assert [c.invocation.id if c else None for c in got] == ["high-old", "low-old", "low-new", None]
        loaded = await store.load_board(board.board_id)
        assert loaded.pending == [] and {i.id for i in loaded.claimed} == {i.id for i in invs}

    async def test_claim_across_boards(self, store: Store) -> None:
        b1 = await Board.create(store, agenda=[inv("a", priority=1, order=5)])
        b2 = await Board.create(store, agenda=[inv("a", priority=3, order=9), inv("b", priority=1, order=1)])
        got = [await store.claim(None, owner="x") for _ in range(4)]
        assert [(c.board_id, c.invocation.id) if c else None for c in got] == [
            (b2.board_id, "a"),
            (b2.board_id, "b"),
            (b1.board_id, "a"),
            None,
        ]

    async def test_leases_expire_and_invocations_are_reclaimed(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("job")])
        t = 1_000_000.0
        first = await store.claim(board.board_id, owner="dead", lease_s=10, now=t)
        assert first is not None and first.lease_until == t + 10
        assert await store.claim(board.board_id, owner="live", lease_s=10, now=t + 9.9) is None
        assert await store.heartbeat(board.board_id, "job", owner="dead", lease_s=10, now=t + 5) == t + 15
        assert await store.claim(board.board_id, owner="live", lease_s=10, now=t + 14) is None
        again = await store.claim(board.board_id, owner="live", lease_s=10, now=t + 15)
        assert again is not None and again.invocation.id == "job" and again.claims == 2 and again.owner == "live"
        with pytest.raises(LeaseLost):
            await store.heartbeat(board.board_id, "job", owner="dead", lease_s=10, now=t + 16)
        # release_expired puts it back to pending for everyone.
        assert await store.release_expired(now=t + 20) == 0
        assert await store.release_expired(now=t + 25) == 1
        assert [(i.id, i.status) for i in await store.agenda(board.board_id)] == [("job", INVOCATION_PENDING)]
        with pytest.raises(LeaseLost):
            await store.heartbeat(board.board_id, "job", owner="live", lease_s=10, now=t + 26)

    async def test_release_cancels_an_expired_claim_whose_key_is_pending_again(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("x1", binding=("k",))])
        t = 2_000_000.0
        assert await store.claim(board.board_id, owner="o", lease_s=1, now=t) is not None
        assert await store.push_invocations(board.board_id, [inv("x2", binding=("k",))]) == ["x2"]
        assert await store.release_expired(now=t + 5) == 1
        everything = await store.agenda(board.board_id, (INVOCATION_PENDING, INVOCATION_CLAIMED, INVOCATION_CANCELLED))
        assert [(i.id, i.status) for i in everything] == [("x1", INVOCATION_CANCELLED), ("x2", INVOCATION_PENDING)]

    async def test_agenda_changes_in_append(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("a", "w0"), inv("b", "w1"), inv("c", "w2")])
        ca = await store.claim(board.board_id, owner="r", worker_names=["w0"])
        cb = await store.claim(board.board_id, owner="r", worker_names=["w1"])
        assert ca and cb
        requeued = replace(cb.invocation, attempts=1, feedback="stale: /entries changed")
        await board.step(
            "w0",
            entry("w0", "x"),
            invocation="a",
            agenda=AgendaChanges(push=[inv("d", "w1", order=4)], complete=["a"], requeue=[requeued], cancel=["c"]),
        )
        rows = {
            i.id: i
            for i in await store.agenda(
                board.board_id, (INVOCATION_PENDING, INVOCATION_CLAIMED, INVOCATION_DONE, INVOCATION_CANCELLED)
            )
        }
        assert {k: v.status for k, v in rows.items()} == {
            "a": INVOCATION_DONE,
            "b": INVOCATION_PENDING,
            "c": INVOCATION_CANCELLED,
            "d": INVOCATION_PENDING,
        }
        assert rows["b"].attempts == 1 and rows["b"].feedback == "stale: /entries changed"
        with pytest.raises(AgendaError, match="re-queue done"):
            await board.step("w0", entry("w0", "y"), agenda=AgendaChanges(requeue=[rows["a"]]))
        with pytest.raises(AgendaError, match="unknown"):
            await board.step("w0", entry("w0", "y"), agenda=AgendaChanges(cancel=["zzz"]))

    async def test_concurrent_claims_never_hand_out_one_invocation_twice(
        self, store: Store, open_another: OpenStore
    ) -> None:
        other = await open_another()
        board = await Board.create(store, agenda=[inv(f"j{i}", WORKERS[i % 3], order=i) for i in range(12)])

        async def grab(s: Store, who: str) -> list[str]:
            got = []
            while (c := await s.claim(board.board_id, owner=who)) is not None:
                got.append(c.invocation.id)
            return got

        results = await asyncio.gather(*(grab(s, f"r{i}") for i, s in enumerate([store, other] * 3)))
        claimed = [x for r in results for x in r]
        assert sorted(claimed) == sorted(f"j{i}" for i in range(12))

    async def test_wait_for_work(self, store: Store, open_another: OpenStore) -> None:
        other = await open_another()
        board = await Board.create(store)
        t0 = time.perf_counter()
        assert await store.wait_for_work(0.2) is False
        assert time.perf_counter() - t0 >= 0.15

        async def push_later() -> None:
            await asyncio.sleep(0.1)
            await other.push_invocations(board.board_id, [inv("wake")])

        # True (not the timeout's False) says the push woke the waiter: no clock needed.
        woke, _ = await asyncio.gather(store.wait_for_work(5.0), push_later())
        assert woke is True
        claim = await store.claim(board.board_id, owner="idle")
        assert claim is not None and claim.invocation.id == "wake"

    async def test_invocation_round_trip(self, store: Store) -> None:
        original = Invocation(
            "r7:2",
            "w2",
            3,
            17,
            event={"op": "add", "path": "/entries/3", "version": 4},
            rule="critic-on-entry",
            binding=("3", "x"),
            attempts=0,
            feedback=None,
            meta={"nested": [1, {"a": None}]},
        )
        board = await Board.create(store, agenda=[original])
        [got] = await store.agenda(board.board_id)
        assert got == original
        claim = await store.claim(board.board_id, owner="o")
        assert claim is not None and claim.invocation == original.with_status(INVOCATION_CLAIMED)

    async def test_closed_store_refuses_work(self, open_another: OpenStore) -> None:
        first = await open_another()
        if isinstance(first, MemoryStore) or first is await open_another():
            pytest.skip("this store has no connection to close (open_another shares one object)")
        s = await open_another()
        await s.close()
        await s.close()  # idempotent
        with pytest.raises(StoreError, match="closed"):
            await s.list_boards()
