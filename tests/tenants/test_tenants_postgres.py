"""Two tenants' processes at once on one PostgreSQL store: a runner process (``slateboard
worker --tenant T``) per tenant claims and runs its tenant's boards only, while the other's
runs beside it; memory and the registry on PostgreSQL keep tenants apart too."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tenant_testkit import NOTES

from slateboard.memory import NewFact, open_memory
from slateboard.runtime.create import create_board
from slateboard.stores import open_store
from slateboard.stores.tenancy import UnknownTenant, tenant_registry

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def _dsn() -> str:
    dsn = os.environ.get("SLATEBOARD_TEST_PG")
    if not dsn:
        pytest.skip("SLATEBOARD_TEST_PG not set")
    return dsn


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    import psycopg

    dsn = _dsn()
    schema = f"tenants_{uuid.uuid4().hex[:10]}"
    yield f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _worker(url: str, tenant: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.pop("SLATEBOARD_TENANT", None)
    code = "import sys; from slateboard.cli import main; main(sys.argv[1:])"
    args = ["worker", "--store", url, "--tenant", tenant, "--lease", "5"]
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stderr=subprocess.PIPE, text=True, cwd=HERE)


async def _all_done(url: str, tenant: str, want: int, limit_s: float = 120.0) -> list[str]:
    """Wait (a deadline, not a measurement) until the tenant has ``want`` boards, all ended."""
    async with await open_store(url, tenant=tenant) as store:
        for _ in range(int(limit_s / 0.2)):
            boards = await store.list_boards()
            if len(boards) == want and all(b.status != "running" for b in boards):
                return [b.status for b in boards]
            await asyncio.sleep(0.2)
    raise AssertionError(f"tenant {tenant}: boards did not all end")


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


async def test_two_tenants_runner_processes_at_once(pg_url: str) -> None:
    async with await open_store(pg_url) as shared:
        for tenant in ("acme", "globex"):
            await tenant_registry(shared).add(tenant)
    boards: dict[str, list[str]] = {"acme": [], "globex": []}
    for tenant in boards:
        async with await open_store(pg_url, tenant=tenant) as scoped:
            boards[tenant] += [await create_board(scoped, NOTES, task=f"{tenant} {i}") for i in range(3)]
    acme = _worker(pg_url, "acme")
    globex = None
    try:
        assert await _all_done(pg_url, "acme", 3) == ["done"] * 3
        # acme's runner process never claimed globex's work: still where it was created
        async with await open_store(pg_url, tenant="globex") as scoped:
            assert [(b.status, b.version) for b in await scoped.list_boards()] == [("running", 0)] * 3
        # now both at once, with new boards of both tenants arriving while they run
        globex = _worker(pg_url, "globex")
        for tenant in boards:
            async with await open_store(pg_url, tenant=tenant) as scoped:
                boards[tenant] += [await create_board(scoped, NOTES, task=f"{tenant} late {i}") for i in range(2)]
        assert await _all_done(pg_url, "acme", 5) == ["done"] * 5
        assert await _all_done(pg_url, "globex", 5) == ["done"] * 5
    finally:
        logs = {"acme": _stop(acme), "globex": _stop(globex) if globex is not None else ""}
    # each process's log names its own boards only
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        assert not any(b in logs[tenant] for b in boards[other]), logs[tenant]
    async with await open_store(pg_url) as shared:
        for tenant, ids in boards.items():
            for board in ids:
                info = await shared.board_info(board)
                assert info.meta["tenant"] == tenant
                records = await shared.read_records(board)
                assert [r.worker for r in records if r.kind == "proposal"] == ["writer", "writer", "decider"]


async def test_memory_and_registry_on_postgres(pg_url: str) -> None:
    async with await open_store(pg_url) as shared:
        await tenant_registry(shared).add("acme")
        with pytest.raises(UnknownTenant):
            await open_store(pg_url, tenant="globex")
    # a second store (another schema) of the same database has a registry of its own
    other = pg_url.rsplit("schema=", 1)[0] + f"schema=tenants_other_{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(UnknownTenant):
            await open_store(other, tenant="acme")
    finally:
        import psycopg

        async with await psycopg.AsyncConnection.connect(_dsn(), autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{other.rsplit("schema=", 1)[1]}" CASCADE')
    acme = await open_memory(pg_url, tenant="acme")
    globex = await open_memory(pg_url, tenant="globex")
    try:
        await acme.add([NewFact("acme keeps the swordfish code", "a1")])
        await globex.add([NewFact("globex eats swordfish", "g1")])
        assert [f.board for f in await acme.search("swordfish")] == ["a1"]
        assert [f.board for f in await globex.facts()] == ["g1"]
        assert await globex.prune(keep_last=0) == 1
        assert [f.board for f in await acme.facts()] == ["a1"]
    finally:
        await acme.close()
        await globex.close()
