"""The dashboard with per-tenant tokens: a tenant's token sees its boards only; another
tenant's board is a 404 with a missing board's very body (not a 403); the list, its counts and
the event streams are the tenant's; a token that maps to nothing is a 401."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenant_testkit import NOTES, OTHER_ID

from slateboard.errors import InvalidInput
from slateboard.runtime.create import create_board
from slateboard.runtime.runner import Runner
from slateboard.stores import open_store
from slateboard.stores.tenancy import TenantStore, tenant_registry
from slateboard.web import create_app

OPERATOR = "operator-token-0123456789"


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, Any]]:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    shared = await open_store(f"sqlite:///{tmp_path / 'shared.db'}")
    tokens = {t: await tenant_registry(shared).add(t) for t in ("acme", "globex")}
    boards = {}
    for tenant in ("acme", "globex"):
        scoped = TenantStore(shared, tenant)
        boards[tenant] = await create_board(scoped, NOTES, task=f"{tenant} secret")
        await Runner(scoped, boards[tenant]).run()
    boards["plain"] = await create_board(shared, NOTES, task="nobody's")
    yield {"store": shared, "tokens": tokens, "boards": boards}
    await shared.close()


def client(world: dict[str, Any], token: str | None) -> httpx.AsyncClient:
    app = create_app(world["store"], token=OPERATOR, tenant_tokens=True)
    # latin-1: a header may carry bytes that are not UTF-8 at all (the last case below)
    headers = {b"Authorization": f"Bearer {token}".encode("latin-1")} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", headers=headers)


async def test_a_tenant_token_lists_its_boards_only(world: dict[str, Any]) -> None:
    async with client(world, world["tokens"]["globex"]) as c:
        listing = (await c.get("/api/boards")).json()["boards"]
        assert [b["board_id"] for b in listing] == [world["boards"]["globex"]]
        info = (await c.get("/api/info")).json()
        assert info["tenant"] == "globex" and "shared.db" not in str(info)
    async with client(world, OPERATOR) as c:
        assert len((await c.get("/api/boards")).json()["boards"]) == 3


ROUTES = ["", "/records", "/state", "/state?version=1", "/events", "/views/" + "0" * 64]


@pytest.mark.parametrize("route", ROUTES)
async def test_another_tenants_board_is_a_404_like_a_missing_one(world: dict[str, Any], route: str) -> None:
    theirs = world["boards"]["acme"]
    async with client(world, world["tokens"]["globex"]) as c:
        got = await c.get(f"/api/boards/{theirs}{route}")
        missing = await c.get(f"/api/boards/{OTHER_ID}{route}")
        assert got.status_code == missing.status_code == 404
        assert got.text.replace(theirs, OTHER_ID) == missing.text
        assert "secret" not in got.text
        plain = await c.get(f"/api/boards/{world['boards']['plain']}{route}")
        assert plain.status_code == 404
    async with client(world, world["tokens"]["acme"]) as c:
        if route != "/events" and not route.startswith("/views/"):
            assert (await c.get(f"/api/boards/{theirs}{route}")).status_code == 200


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789", "", "\xff" * 20])
async def test_a_token_that_maps_to_nothing_is_a_401(world: dict[str, Any], token: str | None) -> None:
    async with client(world, token) as c:
        res = await c.get("/api/boards")
        assert res.status_code == 401 and "token" in res.json()["error"]
        assert world["boards"]["acme"] not in res.text


async def test_a_replaced_token_stops_working(world: dict[str, Any]) -> None:
    old = world["tokens"]["acme"]
    new = await tenant_registry(world["store"]).issue_token("acme")
    async with client(world, old) as c:
        assert (await c.get("/api/boards")).status_code == 401
    async with client(world, new) as c:
        assert (await c.get("/api/boards")).status_code == 200


async def test_tenant_tokens_need_the_shared_store(world: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput, match="shared store"):
        create_app(TenantStore(world["store"], "acme"), tenant_tokens=True)
