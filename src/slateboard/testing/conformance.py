"""The store conformance suite, shipped in the package so any backend can run it.

Every backend passes the same tests; a third-party backend runs them from its own test module::

    import pytest
    from slateboard.testing import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def open_another(self, tmp_path):
            # yields a callable opening another handle on ONE fresh, empty store
            ...

(pytest with pytest-asyncio in ``asyncio_mode = "auto"``). The groups:

- required, every ``Store``: boards and logs (``LogStore``: create, append with its
  compare-and-set, atomicity and once-only invocation commits, snapshots), and agenda and
  claims (``AgendaStore``: pushes, claim order, leases, wake-ups), including the claim made
  inside an append, and concurrent appends of many boards (group commit: one failing
  compare-and-set fails alone);
- optional, one per capability (``WatchesWork``, ``WatchesBoards``, ``ScansStalledBoards``,
  ``ReportsCommits``, ``ReportsLeases``): a test of a capability the backend does not declare is skipped, with the
  reason printed. ``ServesManyRunners`` (claims that never wait for each other) is a promise
  about contention with no test here: the required claim tests already hold every backend to
  "two claimers never get the same invocation".

``open_another`` must return the same object every time for a store without connections (like
``memory://``), and a new handle on the same database otherwise.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any, cast

import pytest

from ..kernel import GENESIS, Kernel, Proposal, replay
from ..kernel.record import GENESIS_META
from ..scheduling.invocation import Invocation
from ..stores import (
    AgendaChanges,
    AgendaError,
    BoardExists,
    BoardNotFound,
    ClaimRequest,
    Conflict,
    DuplicateInvocationCommit,
    LeaseLost,
    MemoryStore,
    ReportsCommits,
    ReportsLeases,
    ScansStalledBoards,
    Store,
    StoreError,
    WatchesBoards,
    WatchesWork,
    supports,
)
from ..vocabulary import BOARD_DONE, BOARD_PAUSED, BOARD_RUNNING, BoardStatus
from .kit import WORKERS, Board, OpenStore, compiled, entry, inv, kernel_from

UNICODE = [
    "plain",
    "naïve café — “quotes”",
    "日本語のテキスト",
    "עברית ومرحبا",
    "emoji 🧪🚀👩🏽‍🔬",
    "nul \u0000 and controls \u0001\u001f\u007f",
    'line\nbreaks\r\tand \\ backslashes " quotes',
    "\U0010fffd max plane",
]


def _sizes(values: list[Any]) -> list[int]:
    return [len(str(v)) for v in values]


def require(store: Store, capability: type) -> None:
    """Skip the calling test (printing why) unless ``store`` declares ``capability``."""
    if not supports(store, capability):
        pytest.skip(f"{type(store).__name__} does not declare the optional capability {capability.__name__}")


class StoreConformance:
    """The conformance tests; a subclass provides the ``open_another`` fixture (see the module
    docstring). ``store`` is the first handle it opens."""

    @pytest.fixture
    async def store(self, open_another: OpenStore) -> Store:
        """The store under test (first handle of ``open_another``)."""
        return await open_another()

    # -- boards ---------------------------------------------------------------------------------------

    async def test_create_and_load_empty_board(self, store: Store) -> None:
        bp = compiled()
        info = await store.create_board(bp.spec.to_json(), bp.initial_state(), meta={"who": "test"})
        assert len(info.board_id) == 32
        assert (info.status, info.version, info.seq, info.last_hash) == (BOARD_RUNNING, 0, 0, GENESIS)
        assert info.name == "storetest" and _user_meta(info.meta) == {"who": "test"}
        loaded = await store.load_board(info.board_id)
        assert loaded.blueprint == bp.spec.to_json()
        assert loaded.initial_state == {"entries": [], "notes": {}}
        assert loaded.snapshot is None and loaded.records == [] and loaded.pending == []
        assert (loaded.start_version, loaded.start_seq, loaded.start_hash) == (0, 0, GENESIS)
        assert await store.board_info(info.board_id) == info

    async def test_board_ids_are_unique_and_missing_boards_are_named(self, store: Store) -> None:
        bp = compiled()
        await store.create_board(bp.spec.to_json(), {}, board_id="b1")
        with pytest.raises(BoardExists, match="b1"):
            await store.create_board(bp.spec.to_json(), {}, board_id="b1")
        for call in (
            store.load_board("nope"),
            store.board_info("nope"),
            store.read_records("nope"),
            store.set_status("nope", BOARD_DONE),
            store.push_invocations("nope", [inv("x")]),
            store.agenda("nope"),
        ):
            with pytest.raises(BoardNotFound, match="nope"):
                await call
        rec = Kernel(bp).prepare(Proposal("w0", entry("w0", "x"))).record
        with pytest.raises(BoardNotFound):
            await store.append("nope", rec)

    async def test_list_boards_and_status(self, store: Store) -> None:
        bp = compiled()
        ids = [(await store.create_board(bp.spec.to_json(), {}, name=f"n{i}")).board_id for i in range(3)]
        assert [b.board_id for b in await store.list_boards()] == ids
        done = await store.set_status(ids[1], BOARD_DONE, "finished: done condition")
        assert (done.status, done.reason) == (BOARD_DONE, "finished: done condition")
        assert [b.board_id for b in await store.list_boards(status=BOARD_DONE)] == [ids[1]]
        assert [b.board_id for b in await store.list_boards(status=BOARD_RUNNING)] == [ids[0], ids[2]]
        with pytest.raises(StoreError, match="unknown board status"):
            await store.set_status(ids[0], cast(BoardStatus, "exploded"))  # a caller mypy does not check
        await store.delete_board(ids[0])
        assert [b.board_id for b in await store.list_boards()] == ids[1:]
        with pytest.raises(BoardNotFound):
            await store.load_board(ids[0])

    # -- the log --------------------------------------------------------------------------------------

    async def test_append_and_load_round_trip(self, store: Store) -> None:
        board = await Board.create(store)
        await board.step("w0", entry("w0", "first"))
        await board.step("w1", [{"op": "add", "path": "/nope", "value": 1}])  # rejected: schema
        await board.step("w2", [{"op": "add", "path": "/notes/k", "value": "v"}])
        await board.step("w2", [{"op": "test", "path": "/notes/k", "value": "v"}])  # noop
        outcomes = [r.outcome for r in board.records]
        assert outcomes == ["accepted", "rejected", "accepted", "noop"]
        info = await store.board_info(board.board_id)
        assert (info.seq, info.version, info.last_hash) == (4, 2, board.kernel.last_hash)
        loaded = await store.load_board(board.board_id)
        assert loaded.records == board.records
        rebuilt = kernel_from(loaded)
        assert rebuilt.state == board.kernel.state and rebuilt.state_hash == board.kernel.state_hash
        assert await store.read_records(board.board_id, 3) == board.records[2:]
        assert await store.read_records(board.board_id, 2, limit=2) == board.records[1:3]
        assert await store.read_records(board.board_id, 5) == []

    async def test_cas_refuses_records_that_do_not_continue_the_log(self, store: Store) -> None:
        board = await Board.create(store)
        await board.step("w0", entry("w0", "a"))
        decision = board.prepare("w1", entry("w1", "b"))
        rec = decision.record
        board.kernel.abort(decision)
        stale = replace(rec, seq=1, prev=GENESIS).sealed()
        with pytest.raises(Conflict, match="log ends at 1") as info:
            await store.append(board.board_id, stale)
        assert (info.value.expected_seq, info.value.actual_seq) == (0, 1)
        forked = replace(rec, prev="f" * 64).sealed()
        with pytest.raises(Conflict, match="chains to"):
            await store.append(board.board_id, forked)
        with pytest.raises(Conflict, match="expected version 0"):
            await store.append(board.board_id, rec, expected_version=0)
        with pytest.raises(StoreError, match="not sealed"):
            await store.append(board.board_id, replace(rec, reason="tampered"))
        with pytest.raises(StoreError, match="carries version"):
            await store.append(board.board_id, replace(rec, version=7).sealed())
        assert [r.seq for r in await store.read_records(board.board_id)] == [1]
        await store.append(board.board_id, rec, expected_version=1)
        assert (await store.board_info(board.board_id)).version == 2

    @pytest.mark.parametrize("rounds", [12])
    async def test_two_writers_racing_on_the_same_version(
        self, store: Store, open_another: OpenStore, rounds: int
    ) -> None:
        other = await open_another()
        board = await Board.create(store)
        bp = compiled()
        for i in range(rounds):
            loaded = await other.load_board(board.board_id)
            k2 = kernel_from(loaded, bp)
            d1 = board.prepare("w0", entry("w0", f"one {i}"))
            d2 = k2.prepare(Proposal("w1", entry("w1", f"two {i}")))
            assert d1.record.seq == d2.record.seq and d1.record.prev == d2.record.prev
            results = await asyncio.gather(
                store.append(board.board_id, d1.record, state=board.kernel.state),
                other.append(board.board_id, d2.record, state=k2.state),
                return_exceptions=True,
            )
            wins = [r for r in results if not isinstance(r, BaseException)]
            losses = [r for r in results if isinstance(r, BaseException)]
            assert len(wins) == 1 and len(losses) == 1, results
            assert isinstance(losses[0], Conflict), losses[0]
            assert "prepared after record" in str(losses[0]) or "chains to" in str(losses[0])
            winner_record = d1.record if not isinstance(results[0], BaseException) else d2.record
            if isinstance(results[0], BaseException):
                board.kernel.abort(d1)
                board = await Board.load(store, board.board_id)
            else:
                board.kernel.commit(d1)
            k2.abort(d2)
            stored = await store.read_records(board.board_id, d1.record.seq)
            assert stored == [winner_record]
        records = await store.read_records(board.board_id)
        assert len(records) == rounds
        report = replay(bp, bp.initial_state(), records)
        assert report.ok and report.version == rounds

    async def test_failed_append_leaves_no_trace(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("start")])
        claim = await store.claim(board.board_id, owner="me")
        assert claim is not None
        rec1, _ = await board.step(
            "w0", entry("w0", "a"), invocation="start", agenda=AgendaChanges(push=[inv("i1")], complete=["start"])
        )
        before_state = board.kernel.state_hash
        before_agenda = await store.agenda(board.board_id, ("pending", "claimed", "done"))
        # The record would be fine; its agenda change names an unknown invocation: nothing may stick.
        with pytest.raises(AgendaError, match="unknown invocation 'ghost'"):
            await board.step(
                "w1",
                entry("w1", "b"),
                agenda=AgendaChanges(push=[inv("i2"), inv("i3")], complete=["i1", "ghost"]),
            )
        assert board.kernel.state_hash == before_state and board.kernel.seq == 1
        info = await store.board_info(board.board_id)
        assert (info.seq, info.version, info.last_hash) == (1, 1, rec1.hash)
        assert await store.read_records(board.board_id) == [rec1]
        assert await store.agenda(board.board_id, ("pending", "claimed", "done")) == before_agenda
        # The same position is still free.
        rec2, _ = await board.step("w1", entry("w1", "b"), agenda=AgendaChanges(complete=["i1"]))
        assert rec2.seq == 2
        assert kernel_from(await store.load_board(board.board_id)).state == board.kernel.state

    async def test_an_invocation_is_committed_once(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("a"), inv("b")])
        await board.step("w0", entry("w0", "x"), invocation="a", agenda=AgendaChanges(complete=["a"]))
        with pytest.raises(DuplicateInvocationCommit, match="'a' was already committed") as err:
            await board.step("w0", entry("w0", "y"), invocation="a", agenda=AgendaChanges(complete=["a"]))
        assert isinstance(err.value, Conflict) and err.value.done_seq in (1, None)
        assert err.value.done_seq == 1
        with pytest.raises(DuplicateInvocationCommit):
            await board.step("w0", entry("w0", "y"), agenda=AgendaChanges(complete=["b", "b"]))
        assert (await store.board_info(board.board_id)).seq == 1
        await store.append(
            board.board_id,
            (d := board.prepare("w1", entry("w1", "z"))).record,
            agenda=AgendaChanges(cancel=["b"]),
        )
        board.kernel.commit(d)
        with pytest.raises(AgendaError, match="cancelled"):
            await board.step("w1", entry("w1", "q"), agenda=AgendaChanges(complete=["b"]))

    async def test_large_values(self, store: Store) -> None:
        board = await Board.create(store)
        big = "x" * (3 << 20) + "é"
        rec, _ = await board.step("w0", entry("w0", big))
        mixed = "".join(chr(32 + (i * 7919) % 20000) for i in range(200_000))
        await board.step("w1", [{"op": "add", "path": "/notes/big", "value": mixed}])
        store.snapshot_every = 2
        await board.step("w2", entry("w2", "small"))
        loaded = await store.load_board(board.board_id)
        assert loaded.snapshot is not None and loaded.snapshot.seq == 3 and loaded.records == []
        rebuilt = kernel_from(loaded)
        assert rebuilt.state["entries"][0]["text"] == big and rebuilt.state["notes"]["big"] == mixed
        assert (await store.read_records(board.board_id, 1, limit=1)) == [rec]

    async def test_unicode(self, store: Store) -> None:
        board = await Board.create(store)
        for i, text in enumerate(UNICODE):
            await board.step(WORKERS[i % 3], entry(WORKERS[i % 3], text))
        await board.step("w0", [{"op": "add", "path": "/notes/ключ~1с~0тильдой", "value": "значение 🔑"}])
        meta = {"ключ": "値 🧩", "nul": "\u0000"}
        info = await store.create_board(compiled().spec.to_json(), {"entries": [], "notes": {"é": "ü"}}, meta=meta)
        assert _user_meta(info.meta) == meta
        loaded = await store.load_board(board.board_id)
        assert [e["text"] for e in kernel_from(loaded).state["entries"]] == UNICODE
        assert kernel_from(loaded).state["notes"] == {"ключ/с~тильдой": "значение 🔑"}
        assert (await store.load_board(info.board_id)).initial_state == {"entries": [], "notes": {"é": "ü"}}
        uni = inv("вызов-🧪", "w1")
        await store.push_invocations(board.board_id, [replace(uni, meta={"why": "パッチ"})])
        claim = await store.claim(board.board_id, owner="ägent 🤖")
        assert claim is not None and claim.invocation.id == "вызов-🧪" and claim.invocation.meta == {"why": "パッチ"}
        assert claim.owner == "ägent 🤖"

    async def test_ten_thousand_record_board(self, store: Store) -> None:
        board = await Board.create(store)
        for i in range(10_000):
            w = WORKERS[i % 3]
            await board.step(w, entry(w, f"entry {i} " + "x" * 40, i))
        loaded = await store.load_board(board.board_id)
        # A load reads the latest snapshot and replays only the log written after it: a small
        # part of the history, not all of it (no timing is asserted: machines are noisy).
        assert loaded.snapshot is not None and loaded.snapshot.seq + len(loaded.records) == 10_000
        assert len(loaded.records) < 2_000
        assert kernel_from(loaded).state_hash == board.kernel.state_hash
        records = await store.read_records(board.board_id)
        assert len(records) == 10_000
        bp = compiled()
        report = replay(bp, bp.initial_state(), records)
        assert report.ok and report.version == 10_000 and report.state_hash == board.kernel.state_hash
        tail = await store.read_records(board.board_id, 9_990)
        assert [r.seq for r in tail] == list(range(9_990, 10_001))

    # -- snapshots ------------------------------------------------------------------------------------

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

    # -- the agenda -----------------------------------------------------------------------------------

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
        assert c1 is not None and c1.invocation.id == "high-new" and c1.invocation.status == "claimed"
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
        assert [(i.id, i.status) for i in await store.agenda(board.board_id)] == [("job", "pending")]
        with pytest.raises(LeaseLost):
            await store.heartbeat(board.board_id, "job", owner="live", lease_s=10, now=t + 26)

    async def test_release_cancels_an_expired_claim_whose_key_is_pending_again(self, store: Store) -> None:
        board = await Board.create(store, agenda=[inv("x1", binding=("k",))])
        t = 2_000_000.0
        assert await store.claim(board.board_id, owner="o", lease_s=1, now=t) is not None
        assert await store.push_invocations(board.board_id, [inv("x2", binding=("k",))]) == ["x2"]
        assert await store.release_expired(now=t + 5) == 1
        everything = await store.agenda(board.board_id, ("pending", "claimed", "cancelled"))
        assert [(i.id, i.status) for i in everything] == [("x1", "cancelled"), ("x2", "pending")]

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
        rows = {i.id: i for i in await store.agenda(board.board_id, ("pending", "claimed", "done", "cancelled"))}
        assert {k: v.status for k, v in rows.items()} == {"a": "done", "b": "pending", "c": "cancelled", "d": "pending"}
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
        assert claim is not None and claim.invocation == original.with_status("claimed")

    async def test_closed_store_refuses_work(self, open_another: OpenStore) -> None:
        first = await open_another()
        if isinstance(first, MemoryStore) or first is await open_another():
            pytest.skip("this store has no connection to close (open_another shares one object)")
        s = await open_another()
        await s.close()
        await s.close()  # idempotent
        with pytest.raises(StoreError, match="closed"):
            await s.list_boards()

    # -- claims inside appends, group commit, snapshots off the commit path ----------------------

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
        statuses = {i.id: i.status for i in await store.agenda(board.board_id, ("pending", "claimed", "done"))}
        assert statuses == {"a": "done", "b": "pending", "c": "claimed"}
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
        assert [(i.id, i.status) for i in await store.agenda(board.board_id)] == [("b", "pending")]

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

    # -- optional capabilities -------------------------------------------------------------------

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
        from ..runtime.watch import watch

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


def _user_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A board's meta without the genesis binding the built-in stores add (issue 29, R1)."""
    return {k: v for k, v in meta.items() if k != GENESIS_META}
