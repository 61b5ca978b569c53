"""Spend ledgers: a reservation that does not fit is refused; concurrent processes sharing one
PostgreSQL ledger never exceed its cap together."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from slateboard.errors import InvalidInput, UnknownName
from slateboard.runtime.ledger import MemoryLedger, PostgresLedger, to_micro

PG = os.environ.get("SLATEBOARD_TEST_PG")


def test_memory_ledger_refuses_what_does_not_fit_and_settles_real_cost() -> None:
    async def go() -> None:
        ledger = MemoryLedger()
        await ledger.set_cap("day", 1.0)
        results = await asyncio.gather(*(ledger.reserve("day", 0.3) for _ in range(10)))
        assert sum(results) == 3  # 0.9 reserved; a fourth 0.3 would be 1.2 > 1.0
        for _ in range(3):
            await ledger.settle("day", 0.3, 0.1)  # real cost below the worst case frees room
        state = await ledger.state("day")
        assert state.spent == pytest.approx(0.3) and state.reserved == 0.0
        assert await ledger.reserve("day", 0.7)
        assert not await ledger.reserve("day", 0.000001)
        assert "spent $0.3000, reserved $0.7000" in (await ledger.state("day")).line()
        with pytest.raises(UnknownName, match="unknown ledger 'nope'"):
            await ledger.state("nope")

    asyncio.run(go())


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_bad_amounts_are_refused_by_name(bad: object) -> None:
    with pytest.raises(InvalidInput, match="ledger amount"):
        to_micro(bad)  # type: ignore[arg-type]


_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from slateboard.runtime.ledger import PostgresLedger
    async def main():
        ledger = PostgresLedger(sys.argv[1], table=sys.argv[2])
        got = 0
        for _ in range(40):
            if await ledger.reserve("shared", 0.07):
                got += 1
                await ledger.settle("shared", 0.07, 0.05)
        print(got)
    asyncio.run(main())
    """
)


@pytest.mark.skipif(not PG, reason="SLATEBOARD_TEST_PG not set: no PostgreSQL to share a ledger on")
def test_two_processes_on_one_postgres_ledger_never_exceed_it(tmp_path: Path) -> None:
    assert PG
    table = f"ledger_t_{uuid.uuid4().hex[:12]}"
    ledger = PostgresLedger(PG, table=table)
    asyncio.run(ledger.set_cap("shared", 1.0))
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, str(script), PG, table], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    counts = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    state = asyncio.run(ledger.state("shared"))
    # each call reserves 0.07 and spends 0.05: calls stop once spent + 0.07 > 1.0, i.e. after 19
    assert sum(counts) == 19
    assert state.spent == pytest.approx(0.95) and state.spent <= 1.0
    assert state.reserved == 0.0

    async def drop() -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(PG, autocommit=True) as conn:
            await conn.execute(f"DROP TABLE {table}")

    asyncio.run(drop())
