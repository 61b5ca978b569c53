"""The Python API: ``open_store(url, tenant=...)`` sees one tenant's boards, and every call on
another tenant's board raises the ``BoardNotFound`` of a missing one (class and message)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenant_testkit import NOTES, OTHER_ID

from slateboard.errors import InvalidInput
from slateboard.kernel.record import GENESIS
from slateboard.runtime.create import create_board
from slateboard.runtime.runner import Runner
from slateboard.stores import BoardNotFound, open_store
from slateboard.stores.base import ReportsLeases, ScansStalledBoards, supports
from slateboard.stores.tenancy import (
    TENANT_META,
    TenantStore,
    UnknownTenant,
    board_tenant,
    check_tenant_id,
    tenant_registry,
)


async def _two_tenants(url: str) -> tuple[Any, Any, Any]:
    shared = await open_store(url)
    for tenant in ("acme", "globex"):
        await tenant_registry(shared).add(tenant)
    if url.startswith("memory:"):  # one process's store: scope the very object
        return shared, await TenantStore.open(shared, "acme"), await TenantStore.open(shared, "globex")
    return shared, await open_store(url, tenant="acme"), await open_store(url, tenant="globex")


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    return "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'shared.db'}"


async def _missing(call: Any, theirs: str) -> tuple[type[BaseException], str]:
    try:
        await call(theirs)
    except BaseException as exc:
        return type(exc), str(exc).replace(theirs, OTHER_ID)
    raise AssertionError("no error")


def _calls(store: Any) -> list[Any]:
    from slateboard.scheduling.invocation import Invocation

    return [
        store.board_info,
        store.load_board,
        store.read_records,
        store.agenda,
        store.compact,
        store.leases,
        lambda b: store.set_status(b, "cancelled", "taken over"),
        lambda b: store.claim(b, owner="thief"),
        lambda b: store.heartbeat(b, "x", owner="thief", lease_s=5),
        lambda b: store.push_invocations(b, [Invocation(id="evil", worker="writer", priority=0, order=0)]),
        lambda b: store.wait_for_board(b, 0.01),
        lambda b: store.write_snapshot(b, {}, version=0, seq=0, last_hash=GENESIS, state_hash="0"),
    ]


async def test_one_tenant_sees_its_boards_only(url: str) -> None:
    shared, acme, globex = await _two_tenants(url)
    try:
        mine = await create_board(acme, NOTES, task="acme secret")
        theirs = await create_board(globex, NOTES, task="globex")
        plain = await create_board(shared, NOTES, task="nobody")
        assert [b.board_id for b in await acme.list_boards()] == [mine]
        assert [b.board_id for b in await globex.list_boards()] == [theirs]
        assert len(await shared.list_boards()) == 3  # the operator sees every board
        assert board_tenant(await shared.board_info(mine)) == "acme"
        assert board_tenant(await shared.board_info(plain)) is None
        for call in _calls(globex):
            got = await _missing(call, mine)
            assert got == await _missing(call, OTHER_ID), call
            assert got[0] is BoardNotFound
        await globex.delete_board(mine)  # as for a missing board: nothing, silently
        assert (await acme.board_info(mine)).status == "running"
        assert (await acme.load_board(mine)).info.meta[TENANT_META] == "acme"
        with pytest.raises(BoardNotFound):
            await acme.board_info(plain)
    finally:
        for s in (acme, globex, shared):
            await s.close()


async def test_runs_and_claims_stay_in_the_tenant(url: str) -> None:
    shared, acme, globex = await _two_tenants(url)
    try:
        mine = await create_board(acme, NOTES, task="a")
        theirs = await create_board(globex, NOTES, task="g")
        # a claim of any board (runner processes) hands out the tenant's work only
        got = await globex.claim(None, owner="g")
        assert got is not None and got.board_id == theirs
        assert await globex.claim(None, owner="g") is None
        assert await globex.release_expired(now=got.lease_until + 1) == 1  # its own expired claim
        result = await Runner(acme, mine).run()
        assert result.answer == "2 notes"
        assert (await globex.board_info(theirs)).version == 0  # untouched
        if supports(globex, ScansStalledBoards):
            assert mine not in await globex.stalled_boards()
        assert supports(acme, ReportsLeases) == supports(shared, ReportsLeases)
    finally:
        for s in (acme, globex, shared):
            await s.close()


async def test_a_board_cannot_be_created_into_another_tenant(url: str) -> None:
    shared, acme, globex = await _two_tenants(url)
    try:
        with pytest.raises(InvalidInput, match="scoped to 'globex'"):
            await create_board(globex, NOTES, meta={TENANT_META: "acme"})
        assert await shared.list_boards() == []
        with pytest.raises(InvalidInput, match="over the shared store"):
            TenantStore(acme, "globex")
    finally:
        for s in (acme, globex, shared):
            await s.close()


async def test_unknown_and_malformed_tenants_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    shared = await open_store(url)
    await tenant_registry(shared).add("acme")
    try:
        with pytest.raises(UnknownTenant, match="no tenant 'globex' in this store") as err:
            await open_store(url, tenant="globex")
        assert "acme" not in str(err.value)
        with pytest.raises(InvalidInput, match="malformed"):
            await open_store(url, tenant="Acme")
        # a malformed id is refused before anything is opened or created
        with pytest.raises(InvalidInput):
            await open_store(f"sqlite:///{tmp_path / 'never.db'}", tenant="../etc")
        assert not (tmp_path / "never.db").exists()
        token = await tenant_registry(shared).add("globex")
        assert await tenant_registry(shared).tenant_of(token) == "globex"
        assert await tenant_registry(shared).tenant_of(token + "x") is None
        newer = await tenant_registry(shared).issue_token("globex")
        assert await tenant_registry(shared).tenant_of(token) is None
        assert await tenant_registry(shared).tenant_of(newer) == "globex"
    finally:
        await shared.close()


@given(st.text(max_size=70))
def test_tenant_ids_are_checked(text: str) -> None:
    ok = bool(text) and len(text) <= 63 and text[0].isascii() and text[0].isalnum() and text[0] == text[0].lower()
    ok = ok and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_-" for c in text)
    if ok:
        assert check_tenant_id(text) == text
    else:
        with pytest.raises(InvalidInput, match="malformed"):
            check_tenant_id(text)


def test_the_check_is_remembered_but_a_fresh_header_is_always_checked(tmp_path: Path) -> None:
    """A board once checked is not read again for every append; load_board and board_info
    still check the header they read, so a board deleted and made again by another tenant
    under the same id is not served from the memory of the first."""

    async def go() -> None:
        url = f"sqlite:///{tmp_path / 's.db'}"
        shared, acme, globex = await _two_tenants(url)
        try:
            board = await create_board(acme, NOTES, board_id="b1")
            await acme.read_records(board)
            await acme.delete_board(board)
            await create_board(globex, NOTES, board_id="b1")
            with pytest.raises(BoardNotFound):
                await acme.load_board("b1")
            with pytest.raises(BoardNotFound):
                await acme.read_records("b1")
        finally:
            for s in (acme, globex, shared):
                await s.close()

    asyncio.run(go())
