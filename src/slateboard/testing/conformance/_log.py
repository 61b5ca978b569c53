"""The store conformance suite: the log: appends and their compare-and-set, atomicity, once-only commits, odd values (``LogStore``)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from ...kernel import GENESIS, Proposal, replay
from ...stores import (
    AgendaChanges,
    AgendaError,
    Conflict,
    DuplicateInvocationCommit,
    Store,
    StoreError,
)
from ...vocabulary import (
    INVOCATION_CLAIMED,
    INVOCATION_DONE,
    INVOCATION_PENDING,
    OUTCOME_ACCEPTED,
    OUTCOME_NOOP,
    OUTCOME_REJECTED,
)
from ..kit import WORKERS, Board, OpenStore, compiled, entry, inv, kernel_from
from ._support import UNICODE, user_meta


class LogTests:
    """The log: appends and their compare-and-set, atomicity, once-only commits, odd values (``LogStore``)."""

    async def test_append_and_load_round_trip(self, store: Store) -> None:
        board = await Board.create(store)
        await board.step("w0", entry("w0", "first"))
        await board.step("w1", [{"op": "add", "path": "/nope", "value": 1}])  # rejected: schema
        await board.step("w2", [{"op": "add", "path": "/notes/k", "value": "v"}])
        await board.step("w2", [{"op": "test", "path": "/notes/k", "value": "v"}])  # noop
        outcomes = [r.outcome for r in board.records]
        assert outcomes == [OUTCOME_ACCEPTED, OUTCOME_REJECTED, OUTCOME_ACCEPTED, OUTCOME_NOOP]
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
        before_agenda = await store.agenda(board.board_id, (INVOCATION_PENDING, INVOCATION_CLAIMED, INVOCATION_DONE))
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
        assert (
            await store.agenda(board.board_id, (INVOCATION_PENDING, INVOCATION_CLAIMED, INVOCATION_DONE))
            == before_agenda
        )
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
        assert user_meta(info.meta) == meta
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
