"""A tiny runner for the crash test: runs one board to completion through Kernel + Store.

    python crash_driver.py STORE_URL BOARD_ID TARGET LEASE_S CLAIM_LOG

Three workers append entries round-robin; each committed record completes its invocation and
pushes the next worker's, until TARGET entries are accepted and the board is marked done. It
claims with a lease, reloads the board (snapshot + tail) before each step, and appends with the
store's CAS; it is meant to be killed with SIGKILL at any point and restarted. Every claim is
appended to CLAIM_LOG as ``<invocation> <owner> <claimed_at> <lease_until> <claims>``.
Prints ``ready`` once imported and connected.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stores_testkit import WORKERS, compiled, entry, kernel_from

from slateboard.kernel import Proposal
from slateboard.scheduling.invocation import Invocation
from slateboard.stores import AgendaChanges, Conflict, open_store


async def run(url: str, board_id: str, target: int, lease_s: float, claim_log: str) -> int:
    store = await open_store(url)
    owner = f"pid{os.getpid()}"
    bp = compiled()
    log_fd = os.open(claim_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    print("ready", flush=True)
    try:
        while True:
            claim = await store.claim(board_id, owner=owner, lease_s=lease_s)
            if claim is None:
                info = await store.board_info(board_id)
                if info.status == "done":
                    return 0
                if info.version >= target:  # the last append landed, the status change did not
                    await store.set_status(board_id, "done", f"{target} entries")
                    return 0
                await asyncio.sleep(0.02)  # a dead runner's claim: wait for its lease to expire
                continue
            inv = claim.invocation
            os.write(log_fd, f"{inv.id} {owner} {time.time():.6f} {claim.lease_until:.6f} {claim.claims}\n".encode())
            kernel = kernel_from(await store.load_board(board_id), bp)
            decision = kernel.prepare(
                Proposal(inv.worker, entry(inv.worker, f"by {inv.id}", kernel.version + 1), invocation=inv.id)
            )
            rec = decision.record
            push = []
            if rec.accepted and rec.version < target:
                nxt = WORKERS[(WORKERS.index(inv.worker) + 1) % len(WORKERS)]
                push.append(Invocation(f"i{rec.seq}", nxt, 0, rec.seq, binding=(str(rec.seq),)))
            try:
                await store.append(
                    board_id, rec, agenda=AgendaChanges(push=push, complete=[inv.id]), state=kernel.state
                )
            except Conflict:  # another runner moved the board, or the invocation was committed
                kernel.abort(decision)
                continue
            kernel.commit(decision)
            if rec.version >= target:
                await store.set_status(board_id, "done", f"{target} entries")
                return 0
    finally:
        os.close(log_fd)
        await store.close()


def main() -> int:
    url, board_id, target, lease_s, claim_log = sys.argv[1:6]
    return asyncio.run(run(url, board_id, int(target), float(lease_s), claim_log))


if __name__ == "__main__":
    sys.exit(main())
