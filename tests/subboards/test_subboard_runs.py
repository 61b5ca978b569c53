"""Sub-board workers running (issue 43) on SQLite and PostgreSQL: a fan-out's answers joined in
item order, its children bound in the parent's record and verified with it (a tampered child
log fails the parent's check), bounded parallelism, a child's failure and an over-long fan-out
as rejections naming the worker, spend limits and cancellation passed to children, and a
custom ChildRunner plugged in."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from subboards_kit import parent_blueprint, reset_running, running, write_record

from slateboard.kernel.record import PROPOSAL_KIND, Record
from slateboard.runtime import Runner, create_board, verify_board
from slateboard.runtime.children import CHILD_PREFIX, PARENT_META, ChildRun, ChildRunner, child_id
from slateboard.runtime.ledger import SPEND_META, spend_meta
from slateboard.runtime.result import RunResult
from slateboard.runtime.subboards import SUBBOARDS_META
from slateboard.stores import open_store
from slateboard.stores.base import Store

DOCS = ["alpha", "beta", "gamma", "delta", "epsilon"]


async def _run(store: Store, blueprint: dict[str, Any], **kw: Any) -> tuple[str, RunResult]:
    board = await create_board(store, blueprint, meta=kw.pop("meta", None))
    return board, await Runner(store, board, **kw).run()


async def _children(store: Store, parent: str) -> list[Any]:
    return [b for b in await store.list_boards() if (b.meta.get(PARENT_META) or {}).get("board") == parent]


async def test_a_fan_out_joins_the_answers_in_item_order_and_binds_every_child(store_url: str) -> None:
    store = await open_store(store_url)
    try:
        board, result = await _run(store, parent_blueprint(DOCS, max_parallel=2))
        assert result.end_reason == "done" and result.answer == [d.upper() for d in DOCS]
        records = list(await store.read_records(board))
        (proposal,) = [r for r in records if r.worker == "each_doc" and r.kind == PROPOSAL_KIND]
        bound = proposal.meta[SUBBOARDS_META]
        assert isinstance(bound, list) and len(bound) == len(DOCS)
        for i, entry in enumerate(bound):
            assert isinstance(entry, dict)
            assert entry["board"] == child_id(board, str(proposal.invocation), i)
            info = await store.board_info(str(entry["board"]))
            assert entry["seq"] == info.seq and info.meta[PARENT_META] == {
                "board": board, "invocation": proposal.invocation, "index": i, "worker": "each_doc",
            }  # fmt: skip
        assert len(await _children(store, board)) == len(DOCS)
        report = await verify_board(store, board)
        assert report.ok, report.problem
    finally:
        await store.close()


async def test_one_child_without_each_gives_its_answer_itself(store_url: str) -> None:
    store = await open_store(store_url)
    try:
        _, result = await _run(store, parent_blueprint(["solo"], each=False))
        assert result.answer == "SOLO"
    finally:
        await store.close()


async def test_children_run_at_most_max_parallel_at_once(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        reset_running()
        _, result = await _run(store, parent_blueprint([f"d{i}" for i in range(9)], max_parallel=3))
        assert result.end_reason == "done"
        assert running()["most"] == 3  # the bound, reached: nothing serialised them below it
    finally:
        await store.close()


async def test_editing_a_child_log_fails_the_parents_check(store_url: str) -> None:
    store = await open_store(store_url)
    board, _ = await _run(store, parent_blueprint(DOCS[:3]))
    (proposal,) = [r for r in await store.read_records(board) if r.worker == "each_doc" and r.kind == PROPOSAL_KIND]
    bound = proposal.meta[SUBBOARDS_META]
    assert isinstance(bound, list) and isinstance(bound[1], dict)
    child = str(bound[1]["board"])
    first: Record = (await store.read_records(child, 1, limit=1))[0]
    last: Record = (await store.read_records(child))[-1]
    await store.close()
    # 1. an accepted patch edited in place: the child's own chain breaks, so the parent's check does
    edited = dataclasses.replace(first, patch=(first.patch or "").replace("BETA", "EVIL"))
    write_record(store_url, child, first.seq, edited.to_bytes())
    store = await open_store(store_url)
    try:
        report = await verify_board(store, board)
        assert not report.ok and report.bad_seq == proposal.seq
        assert f"sub-board {child}" in (report.problem or "") and "does not verify" in (report.problem or "")
    finally:
        await store.close()
    cli = subprocess.run(
        [sys.executable, "-m", "slateboard", "replay", board, "--verify", "--store", store_url],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert cli.returncode == 3, cli.stdout + cli.stderr
    assert f"record {proposal.seq}: sub-board {child}" in " ".join((cli.stdout + cli.stderr).split())
    # 2. the child's log rewritten consistently (its last record resealed): the child verifies on
    # its own, the head the parent bound does not match
    write_record(store_url, child, first.seq, first.to_bytes())
    resealed = dataclasses.replace(last, reason="done (rewritten)", hash="")
    resealed = dataclasses.replace(resealed, hash=resealed.compute_hash())
    write_record(store_url, child, last.seq, resealed.to_bytes())
    store = await open_store(store_url)
    try:
        assert (await verify_board(store, child)).ok
        report = await verify_board(store, board)
        assert not report.ok and "not the one the parent bound" in (report.problem or "")
    finally:
        await store.close()


async def test_a_failed_child_is_a_rejection_naming_it_not_a_crash(store_url: str) -> None:
    store = await open_store(store_url)
    try:
        board, result = await _run(store, parent_blueprint(["fine", "bad"]))
        assert result.answer is None and result.end_status != "solved"
        (rejected,) = [r for r in await store.read_records(board) if r.worker == "each_doc" and r.kind == PROPOSAL_KIND]
        assert rejected.outcome == "rejected" and rejected.stage == "model"
        bad = child_id(board, str(rejected.invocation), 1)
        assert "each_doc" in (rejected.reason or "") and f"item 1: child {bad}" in (rejected.reason or "")
        assert len(rejected.meta[SUBBOARDS_META]) == 2
        assert (await verify_board(store, board)).ok
    finally:
        await store.close()


async def test_a_fan_out_over_max_items_is_refused_before_any_child_starts(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board, result = await _run(store, parent_blueprint([f"d{i}" for i in range(6)], max_items=5))
        (rejected,) = [r for r in await store.read_records(board) if r.worker == "each_doc" and r.kind == PROPOSAL_KIND]
        assert rejected.stage == "model" and "fan-out over 6 items refused" in (rejected.reason or "")
        assert "max_items=5" in (rejected.reason or "") and "'each_doc'" in (rejected.reason or "")
        assert await _children(store, board) == [] and result.answer is None
    finally:
        await store.close()


async def test_children_record_the_parents_spend_limits(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board, result = await _run(store, parent_blueprint(DOCS[:2]), meta=spend_meta(2.5, []))
        assert result.end_reason == "done"
        for child in await _children(store, board):
            assert child.meta[SPEND_META] == {"max_cost": 2.5, "ledgers": []}
    finally:
        await store.close()


async def test_cancelling_the_parent_cancels_its_children_and_a_resume_reattaches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("SB_TEST_GATE", str(gate))
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, parent_blueprint(["slow1", "quick", "slow2"]))
        run = asyncio.create_task(Runner(store, board, lease_s=1.0).run())
        while len([c for c in await _children(store, board) if c.seq]) < 1:  # "quick" has ended
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        kids = {c.board_id: c for c in await _children(store, board)}
        assert len(kids) == 3 and sum(1 for c in kids.values() if c.seq) == 1  # the slow two stopped
        gate.touch()
        result = await Runner(store, board, lease_s=1.0).run()
        assert result.answer == ["SLOW1", "QUICK", "SLOW2"]
        assert set(kids) == {c.board_id for c in await _children(store, board)}  # the same three
        assert (await verify_board(store, board)).ok
    finally:
        await store.close()


class _Recording:
    """A ChildRunner that delegates to the in-process default and notes what it was given."""

    def __init__(self) -> None:
        self.seen: list[ChildRun] = []
        self.default: Runner | None = None

    async def run_child(self, store: Store, child: ChildRun) -> RunResult:
        self.seen.append(child)
        assert self.default is not None
        return await self.default.run_child(store, child)


async def test_a_child_runner_plugs_in_and_gets_plain_data(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, parent_blueprint(DOCS[:3]))
        recording = _Recording()
        assert isinstance(recording, ChildRunner)
        recording.default = Runner(store, board)
        result = await Runner(store, board, children=recording).run()
        assert result.answer == ["ALPHA", "BETA", "GAMMA"]
        assert sorted(c.index for c in recording.seen) == [0, 1, 2]
        for c in recording.seen:
            assert (
                c.child_id.startswith(CHILD_PREFIX) and c.parent_id == board and c.inputs == {"document": DOCS[c.index]}
            )
            assert c.blueprint["name"] == "summarise" and c.meta[PARENT_META]["index"] == c.index
    finally:
        await store.close()
