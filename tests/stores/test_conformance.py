"""The store conformance suite: every backend (memory, sqlite, postgresql) passes the same tests."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest
from stores_testkit import WORKERS, Board, OpenStore, compiled, entry, inv, kernel_from

from slateboard.kernel import GENESIS, Kernel, Proposal, replay
from slateboard.scheduling.invocation import Invocation
from slateboard.stores import (
    AgendaChanges,
    AgendaError,
    BoardExists,
    BoardNotFound,
    Conflict,
    DuplicateInvocationCommit,
    LeaseLost,
    Store,
    StoreError,
)

# -- boards ---------------------------------------------------------------------------------------


async def test_create_and_load_empty_board(store: Store) -> None:
    bp = compiled()
    info = await store.create_board(bp.spec.to_json(), bp.initial_state(), meta={"who": "test"})
    assert len(info.board_id) == 32
    assert (info.status, info.version, info.seq, info.last_hash) == ("running", 0, 0, GENESIS)
    assert info.name == "storetest" and info.meta == {"who": "test"}
    loaded = await store.load_board(info.board_id)
    assert loaded.blueprint == bp.spec.to_json()
    assert loaded.initial_state == {"entries": [], "notes": {}}
    assert loaded.snapshot is None and loaded.records == [] and loaded.pending == []
    assert (loaded.start_version, loaded.start_seq, loaded.start_hash) == (0, 0, GENESIS)
    assert await store.board_info(info.board_id) == info


async def test_board_ids_are_unique_and_missing_boards_are_named(store: Store) -> None:
    bp = compiled()
    await store.create_board(bp.spec.to_json(), {}, board_id="b1")
    with pytest.raises(BoardExists, match="b1"):
        await store.create_board(bp.spec.to_json(), {}, board_id="b1")
    for call in (
        store.load_board("nope"),
        store.board_info("nope"),
        store.read_records("nope"),
        store.set_status("nope", "done"),
        store.push_invocations("nope", [inv("x")]),
        store.agenda("nope"),
    ):
        with pytest.raises(BoardNotFound, match="nope"):
            await call
    rec = Kernel(bp).prepare(Proposal("w0", entry("w0", "x"))).record
    with pytest.raises(BoardNotFound):
        await store.append("nope", rec)


async def test_list_boards_and_status(store: Store) -> None:
    bp = compiled()
    ids = [(await store.create_board(bp.spec.to_json(), {}, name=f"n{i}")).board_id for i in range(3)]
    assert [b.board_id for b in await store.list_boards()] == ids
    done = await store.set_status(ids[1], "done", "finished: done condition")
    assert (done.status, done.reason) == ("done", "finished: done condition")
    assert [b.board_id for b in await store.list_boards(status="done")] == [ids[1]]
    assert [b.board_id for b in await store.list_boards(status="running")] == [ids[0], ids[2]]
    with pytest.raises(StoreError, match="unknown board status"):
        await store.set_status(ids[0], "exploded")
    await store.delete_board(ids[0])
    assert [b.board_id for b in await store.list_boards()] == ids[1:]
    with pytest.raises(BoardNotFound):
        await store.load_board(ids[0])


# -- the log --------------------------------------------------------------------------------------


async def test_append_and_load_round_trip(store: Store) -> None:
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


async def test_cas_refuses_records_that_do_not_continue_the_log(store: Store) -> None:
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
async def test_two_writers_racing_on_the_same_version(store: Store, open_another: OpenStore, rounds: int) -> None:
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


async def test_failed_append_leaves_no_trace(store: Store) -> None:
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


async def test_an_invocation_is_committed_once(store: Store) -> None:
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


async def test_large_values(store: Store) -> None:
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


async def test_unicode(store: Store) -> None:
    board = await Board.create(store)
    for i, text in enumerate(UNICODE):
        await board.step(WORKERS[i % 3], entry(WORKERS[i % 3], text))
    await board.step("w0", [{"op": "add", "path": "/notes/ключ~1с~0тильдой", "value": "значение 🔑"}])
    meta = {"ключ": "値 🧩", "nul": "\u0000"}
    info = await store.create_board(compiled().spec.to_json(), {"entries": [], "notes": {"é": "ü"}}, meta=meta)
    assert info.meta == meta
    loaded = await store.load_board(board.board_id)
    assert [e["text"] for e in kernel_from(loaded).state["entries"]] == UNICODE
    assert kernel_from(loaded).state["notes"] == {"ключ/с~тильдой": "значение 🔑"}
    assert (await store.load_board(info.board_id)).initial_state == {"entries": [], "notes": {"é": "ü"}}
    uni = inv("вызов-🧪", "w1")
    await store.push_invocations(board.board_id, [replace(uni, meta={"why": "パッチ"})])
    claim = await store.claim(board.board_id, owner="ägent 🤖")
    assert claim is not None and claim.invocation.id == "вызов-🧪" and claim.invocation.meta == {"why": "パッチ"}
    assert claim.owner == "ägent 🤖"


async def test_ten_thousand_record_board(store: Store) -> None:
    board = await Board.create(store)
    t0 = time.perf_counter()
    for i in range(10_000):
        w = WORKERS[i % 3]
        await board.step(w, entry(w, f"entry {i} " + "x" * 40, i))
    append_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = await store.load_board(board.board_id)
    load_s = time.perf_counter() - t0
    assert loaded.snapshot is not None and loaded.snapshot.seq == 10_000 and loaded.records == []
    assert kernel_from(loaded).state_hash == board.kernel.state_hash
    records = await store.read_records(board.board_id)
    assert len(records) == 10_000
    bp = compiled()
    report = replay(bp, bp.initial_state(), records)
    assert report.ok and report.version == 10_000 and report.state_hash == board.kernel.state_hash
    tail = await store.read_records(board.board_id, 9_990)
    assert [r.seq for r in tail] == list(range(9_990, 10_001))
    assert load_s < 2.0, f"loading a 10,000-record board took {load_s:.2f}s (appends: {append_s:.1f}s)"


# -- snapshots ------------------------------------------------------------------------------------


async def test_snapshots_every_n_records_keep_only_the_latest(store: Store) -> None:
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


async def test_snapshot_due_without_state_then_written_by_the_caller_or_compacted(store: Store) -> None:
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


async def test_push_is_idempotent_and_deduplicates_pending_keys(store: Store) -> None:
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


async def test_claim_order_filters_and_board_status(store: Store) -> None:
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
    await store.set_status(board.board_id, "paused")
    assert await store.claim(board.board_id, owner="a") is None
    assert await store.claim(None, owner="a") is None
    await store.set_status(board.board_id, "running")
    got = [await store.claim(None, owner="b") for _ in range(4)]
    assert [c.invocation.id if c else None for c in got] == ["high-old", "low-old", "low-new", None]
    loaded = await store.load_board(board.board_id)
    assert loaded.pending == [] and {i.id for i in loaded.claimed} == {i.id for i in invs}


async def test_claim_across_boards(store: Store) -> None:
    b1 = await Board.create(store, agenda=[inv("a", priority=1, order=5)])
    b2 = await Board.create(store, agenda=[inv("a", priority=3, order=9), inv("b", priority=1, order=1)])
    got = [await store.claim(None, owner="x") for _ in range(4)]
    assert [(c.board_id, c.invocation.id) if c else None for c in got] == [
        (b2.board_id, "a"),
        (b2.board_id, "b"),
        (b1.board_id, "a"),
        None,
    ]


async def test_leases_expire_and_invocations_are_reclaimed(store: Store) -> None:
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


async def test_release_cancels_an_expired_claim_whose_key_is_pending_again(store: Store) -> None:
    board = await Board.create(store, agenda=[inv("x1", binding=("k",))])
    t = 2_000_000.0
    assert await store.claim(board.board_id, owner="o", lease_s=1, now=t) is not None
    assert await store.push_invocations(board.board_id, [inv("x2", binding=("k",))]) == ["x2"]
    assert await store.release_expired(now=t + 5) == 1
    everything = await store.agenda(board.board_id, ("pending", "claimed", "cancelled"))
    assert [(i.id, i.status) for i in everything] == [("x1", "cancelled"), ("x2", "pending")]


async def test_agenda_changes_in_append(store: Store) -> None:
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


async def test_concurrent_claims_never_hand_out_one_invocation_twice(store: Store, open_another: OpenStore) -> None:
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


async def test_wait_for_work(store: Store, open_another: OpenStore) -> None:
    other = await open_another()
    board = await Board.create(store)
    t0 = time.perf_counter()
    assert await store.wait_for_work(0.2) is False
    assert time.perf_counter() - t0 >= 0.15

    async def push_later() -> None:
        await asyncio.sleep(0.1)
        await other.push_invocations(board.board_id, [inv("wake")])

    t0 = time.perf_counter()
    woke, _ = await asyncio.gather(store.wait_for_work(5.0), push_later())
    assert woke is True and time.perf_counter() - t0 < 2.0
    claim = await store.claim(board.board_id, owner="idle")
    assert claim is not None and claim.invocation.id == "wake"


async def test_invocation_round_trip(store: Store) -> None:
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


async def test_closed_store_refuses_work(open_another: OpenStore, backend: str) -> None:
    if backend == "memory":
        pytest.skip("a memory store has no connection to close")
    s = await open_another()
    await s.close()
    await s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await s.list_boards()


def _sizes(values: list[Any]) -> list[int]:
    return [len(str(v)) for v in values]
