"""Spend ledgers and memory within one tenant: a tenant's ledger names, states, histories,
errors and holders never show another tenant's, a tenant's board spends on its own ledgers
only; a tenant's facts are added, searched, listed, touched and pruned apart from the others'."""

from __future__ import annotations

from pathlib import Path

import pytest

from slateboard.errors import InvalidInput, UnknownName
from slateboard.memory import NewFact, open_memory
from slateboard.memory._store import InProcessMemory
from slateboard.runtime.ledger import ledger_for
from slateboard.stores import open_store
from slateboard.stores.tenancy import TenantStore, tenant_registry


async def test_ledgers_are_the_tenants_own(tmp_path: Path) -> None:
    shared = await open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        for tenant in ("acme", "globex"):
            await tenant_registry(shared).add(tenant)
        acme = ledger_for(TenantStore(shared, "acme"))
        globex = ledger_for(TenantStore(shared, "globex"))
        await acme.set_cap("team", 1.0)
        await acme.set_cap("ops", 2.0)
        assert await acme.names() == ["ops", "team"]
        assert await globex.names() == []
        with pytest.raises(UnknownName) as err:
            await globex.state("team")
        assert "known: none" in str(err.value) and "acme" not in str(err.value) and "ops" not in str(err.value)
        for call in (globex.reserve("team", 0.1, owner="b"), globex.reset("team"), globex.delete("team")):
            with pytest.raises(UnknownName, match="known: none"):
                await call
        with pytest.raises(UnknownName):
            await globex.history("team")
        # acme spends on its ledger: the rows are acme's, and globex's same-named one is apart
        assert await acme.reserve("team", 0.4, owner="board-a", holder="run-1")
        await acme.settle("team", 0.4, 0.3, owner="board-a", holder="run-1")
        await globex.set_cap("team", 5.0)
        assert (await acme.state("team")).spent == pytest.approx(0.3)
        assert (await globex.state("team")).spent == 0.0
        assert (await globex.state("team")).name == "team"
        assert await globex.holders("team") == {}
        assert sorted(await ledger_for(shared).names()) == ["acme/ops", "acme/team", "globex/team"]
        with pytest.raises(InvalidInput):
            await acme.set_cap("", 1.0)
    finally:
        await shared.close()


async def test_memory_is_the_tenants_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    plain = await open_memory(url)
    acme = await open_memory(url, tenant="acme")
    globex = await open_memory(url, tenant="globex")
    try:
        await acme.add([NewFact("the acme launch code is swordfish", "a1", 1, "w")])
        await globex.add([NewFact("globex likes swordfish sushi", "g1", 1, "w")])
        await plain.add([NewFact("swordfish is a fish", "p1", 1, "w")])
        assert [f.board for f in await acme.search("swordfish")] == ["a1"]
        assert [f.board for f in await globex.search("swordfish launch code")] == ["g1"]
        assert [f.board for f in await acme.facts()] == ["a1"]
        assert await globex.facts(board="a1") == []
        assert len(await plain.facts()) == 3  # the operator's view
        # touch and prune never reach another tenant's facts
        (theirs,) = await acme.facts()
        await globex.touch([theirs.id], now=1.0)
        assert (await acme.facts())[0].last_used != 1.0
        assert await globex.prune(keep_last=0) == 1
        assert [f.board for f in await acme.facts()] == ["a1"]
        assert await acme.prune(older_than_s=0.0, now=10**12) == 1
        assert [f.board for f in await plain.facts()] == ["p1"]
    finally:
        for m in (plain, acme, globex):
            await m.close()


async def test_in_process_memory_scopes_one_pool() -> None:
    pool = InProcessMemory()
    acme, globex = pool.scoped("acme"), pool.scoped("globex")
    await acme.add([NewFact("alpha beta", "a", 1)])
    await globex.add([NewFact("alpha gamma", "g", 1)])
    assert [f.board for f in await acme.search("alpha")] == ["a"]
    assert [f.board for f in await globex.facts()] == ["g"]
    assert len(await pool.facts()) == 2
    assert await globex.prune(keep_last=0) == 1 and len(await pool.facts()) == 1


@pytest.mark.parametrize("tenant", ["Acme", "a b", "", "x" * 64])
async def test_a_malformed_memory_tenant_is_refused(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(InvalidInput, match="malformed"):
        await open_memory(f"sqlite:///{tmp_path / 's.db'}", tenant=tenant)
