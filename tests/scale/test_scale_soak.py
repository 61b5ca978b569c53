"""Soak: 4 runner processes serve 50 boards on PostgreSQL while runners are SIGKILLed and restarted.

Real ``slateboard worker`` subprocesses (lease 1.5 s) run boards of the NOTES_PAIR blueprint
(two writers appending at once, then a decider) on a scripted model with seeded random latency
that also proposes invalid notes now and then. Each time another 1/(KILLS+1) of the boards has
ended, a runner that holds claims is killed with SIGKILL and a fresh one started. Then:

- every board ended ``done`` with its answer, exactly one run-end record, as its last record;
- every log verifies: hash chain, contiguous seqs and versions, state hashes (replay), and every
  decision re-decided by the kernel (replay with revalidation), also through ``replay --verify``;
- no invocation was committed twice: at most one accepted record per invocation id, and every
  done invocation's completing record names it;
- invocations claimed by killed runners were claimed again (after their leases expired) and
  committed once;
- the surviving runners exit 0 on SIGTERM.
"""

from __future__ import annotations

import asyncio
import random
import re
import signal
import time
from collections import Counter
from typing import Any

from scale_testkit import NOTES_PAIR, Worker, Workers, run_cli

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.runtime import submit
from slateboard.runtime.session import ends_run
from slateboard.stores import Store

BOARDS = 50
RUNNERS = 4
KILLS = 5
SEED = 8
LEASE_S = "1.5"
LIMIT_S = 240.0  # a safety net against a hang, far above the expected run time


async def _claims_by_owner(store: Any) -> Counter[str]:
    async with store._conn() as conn:  # the test peeks at the agenda rows directly
        cur = await conn.execute("SELECT owner FROM invocations WHERE status = 'claimed'")
        return Counter(r[0] for r in await cur.fetchall())


def _owner(worker: Worker) -> str | None:
    found = re.search(r"runner (runner-[0-9a-f]+) started", worker.output())
    return found.group(1) if found else None


async def test_soak_many_runners_with_sigkills(pg_schema_url: str, pg_store: Store, workers: Workers) -> None:
    rng = random.Random(SEED)
    ids = [
        await submit(pg_store, NOTES_PAIR, task=f"soak {i}", model="python:scale_models:soak_model")
        for i in range(BOARDS)
    ]

    def start(slot: int, generation: int) -> Worker:
        return workers.start(
            pg_schema_url,
            "--concurrency",
            "3",
            "--lease",
            LEASE_S,
            "--grace",
            "5",
            SLATEBOARD_SOAK_SEED=str(SEED * 1000 + slot * 10 + generation),
            SLATEBOARD_SOAK_INVALID="0.1",
            # Model calls of 100-300 ms keep claims in flight long enough for every scheduled
            # kill to find a runner holding one: with 5-40 ms calls the faster step engine
            # finished all 50 boards before the fifth kill could land.
            SLATEBOARD_SOAK_MIN_MS="100",
            SLATEBOARD_SOAK_MAX_MS="300",
        )

    procs = [start(slot, 0) for slot in range(RUNNERS)]
    kills = 0
    deadline = time.monotonic() + LIMIT_S
    running = BOARDS
    while running and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        running = len(await pg_store.list_boards(status="running"))
        ended = BOARDS - running
        if kills < KILLS and ended >= (kills + 1) * BOARDS // (KILLS + 1):
            holding = await _claims_by_owner(pg_store)
            busy = [slot for slot, w in enumerate(procs) if holding.get(_owner(w) or "", 0) > 0]
            if not busy:
                continue  # every runner between two claims right now: try again in a moment
            slot = rng.choice(busy)
            procs[slot].signal(signal.SIGKILL)
            assert procs[slot].finish() == -signal.SIGKILL
            kills += 1
            procs[slot] = start(slot, kills)
    assert running == 0, f"{running} boards still running after {LIMIT_S:g} s"
    assert kills == KILLS

    for w in procs:
        w.wait_for("started")  # a runner replaced a moment ago may still be importing
        w.signal(signal.SIGTERM)
    for w in procs:
        assert w.finish() == 0, w.output()[-2000:]
        assert w.output().rstrip().splitlines()[-1].startswith("runner ")  # the "stopped: ..." line

    accepted_per_invocation: Counter[tuple[str, str]] = Counter()
    rejected = 0
    for board_id in ids:
        info = await pg_store.board_info(board_id)
        assert (info.status, info.reason) == ("done", "done"), (board_id, info)
        loaded = await pg_store.load_board(board_id)
        records = await pg_store.read_records(board_id)
        assert [r.seq for r in records] == list(range(1, info.seq + 1))
        blueprint = compile_blueprint(loaded.blueprint)
        for revalidate in (False, True):
            report = replay(blueprint, loaded.initial_state, records, revalidate=revalidate)
            assert report.ok, f"board {board_id}: {report}"
        accepted = [r for r in records if r.outcome == "accepted"]
        assert [r.version for r in accepted] == list(range(1, len(accepted) + 1))
        trail = [(r.seq, r.kind, r.outcome, r.invocation) for r in records[-4:]]
        assert [r.seq for r in records if ends_run(r)] == [records[-1].seq], f"board {board_id}: {trail}"
        assert str(report.state["answer"]).endswith("notes")
        rejected += sum(r.outcome == "rejected" and r.stage == "invariants" for r in records)
        for r in accepted:
            if r.invocation is not None:
                accepted_per_invocation[(board_id, r.invocation)] += 1
    assert accepted_per_invocation and max(accepted_per_invocation.values()) == 1
    assert rejected > 0  # the model's invalid notes were rejected, retried with feedback, and the boards went on

    async with pg_store._conn() as conn:  # type: ignore[attr-defined]
        cur = await conn.execute("SELECT board_id, id, done_seq, claims FROM invocations WHERE status = 'done'")
        done = await cur.fetchall()
    reclaimed = 0
    for board_id, inv_id, done_seq, claims in done:
        [completing] = await pg_store.read_records(board_id, done_seq, limit=1)
        assert completing.invocation == inv_id
        reclaimed += claims > 1
    assert reclaimed >= 1  # killed runners held claims: someone else claimed and committed them
    print(f"soak: {BOARDS} boards, {kills} SIGKILLs, {reclaimed} invocations re-claimed, {rejected} rejections")

    sample = ids[0]
    verified = run_cli("replay", sample, "--verify", "--store", pg_schema_url)
    assert verified.returncode == 0, verified.stderr
