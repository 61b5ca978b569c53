"""Sub-board links on the dashboard (issue 43): a fan-out parent's board JSON lists its child
boards (id, status, item index, the record binding them) and each child's names its parent (with
the invocation and item); with per-tenant tokens another tenant's dashboard lists none of them,
and a link forged to point across tenants names nothing of the other side."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from slateboard.kernel.record import PROPOSAL_KIND
from slateboard.runtime import Runner, create_board
from slateboard.runtime.children import PARENT_META, child_id
from slateboard.runtime.subboards import SUBBOARDS_META
from slateboard.stores import open_store
from slateboard.stores.tenancy import TenantStore, tenant_registry
from slateboard.web import create_app

SUBBOARDS = Path(__file__).resolve().parent.parent / "subboards"
DOCS = ["alpha", "beta", "gamma"]
OPERATOR = "operator-token-subboards-0123"


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, Any]]:
    """A shared store: acme ran a fan-out over DOCS (three children), globex a one-child parent
    and a board whose sub-board link is forged to name acme's parent."""
    monkeypatch.syspath_prepend(str(SUBBOARDS))  # the function workers: subboards_kit:summarise
    from subboards_kit import parent_blueprint

    shared = await open_store(f"sqlite:///{tmp_path / 'shared.db'}")
    tokens = {t: await tenant_registry(shared).add(t) for t in ("acme", "globex")}
    acme, globex = TenantStore(shared, "acme"), TenantStore(shared, "globex")
    parent = await create_board(acme, parent_blueprint(DOCS, max_parallel=2))
    assert (await Runner(acme, parent).run()).answer == [d.upper() for d in DOCS]
    other = await create_board(globex, parent_blueprint(["solo"], each=False))
    assert (await Runner(globex, other).run()).answer == "SOLO"
    link = {"board": parent, "invocation": "forged", "index": 0, "worker": "each_doc"}
    forged = await create_board(globex, parent_blueprint(["x"]), meta={PARENT_META: link})
    proposal = next(r for r in await acme.read_records(parent) if r.worker == "each_doc" and r.kind == PROPOSAL_KIND)
    yield {
        "store": shared,
        "tokens": tokens,
        "parent": parent,
        "proposal": proposal,
        "other": other,
        "forged": forged,
    }
    await shared.close()


def client(world: dict[str, Any], token: str) -> httpx.AsyncClient:
    app = create_app(world["store"], token=OPERATOR, tenant_tokens=True)
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {token}"}
    )


async def test_a_fan_out_parent_lists_its_children_and_each_child_links_back(world: dict[str, Any]) -> None:
    parent, proposal = world["parent"], world["proposal"]
    invocation = str(proposal.invocation)
    kids = [child_id(parent, invocation, i) for i in range(len(DOCS))]
    assert [b["board"] for b in proposal.meta[SUBBOARDS_META]] == kids
    async with client(world, world["tokens"]["acme"]) as c:
        shown = (await c.get(f"/api/boards/{parent}")).json()
        children = shown["subboards"]["children"]
        assert shown["subboards"]["parent"] is None
        assert [(k["board_id"], k["index"], k["invocation"], k["worker"]) for k in children] == [
            (kid, i, invocation, "each_doc") for i, kid in enumerate(kids)
        ]
        assert {(k["end_status"], k["name"], k["bound_seq"]) for k in children} == {
            ("solved", "summarise", proposal.seq)
        }
        for i, kid in enumerate(kids):
            child = (await c.get(f"/api/boards/{kid}")).json()["subboards"]
            assert child["parent"] == {
                "board_id": parent,
                "invocation": invocation,
                "index": i,
                "worker": "each_doc",
                "name": "digest",
                "status": shown["status"],
                "end_status": "solved",
                "exists": True,
            }
            assert child["children"] == []
        # the fork lineage is its own thing: a sub-board is no fork
        assert shown["lineage"] == {"parent": None, "children": []}


async def test_another_tenant_sees_none_of_them(world: dict[str, Any]) -> None:
    parent = world["parent"]
    kids = [child_id(parent, str(world["proposal"].invocation), i) for i in range(len(DOCS))]
    async with client(world, world["tokens"]["globex"]) as c:
        listed = {b["board_id"] for b in (await c.get("/api/boards")).json()["boards"]}
        assert parent not in listed and not listed & set(kids)
        for board in (parent, *kids):
            assert (await c.get(f"/api/boards/{board}")).status_code == 404
        # globex's own parent lists its own child only
        own = (await c.get(f"/api/boards/{world['other']}")).json()["subboards"]["children"]
        assert len(own) == 1 and own[0]["board_id"] in listed and own[0]["index"] == 0
        # a link forged to name acme's parent shows it as absent: no name, no status
        forged = (await c.get(f"/api/boards/{world['forged']}")).json()["subboards"]["parent"]
        assert forged["board_id"] == parent and forged["exists"] is False
        assert (forged["name"], forged["status"], forged["end_status"]) == (None, None, None)
    async with client(world, world["tokens"]["acme"]) as c:
        # and acme's parent does not list the forged globex board among its children
        children = (await c.get(f"/api/boards/{parent}")).json()["subboards"]["children"]
        assert [k["board_id"] for k in children] == kids
    async with client(world, OPERATOR) as c:
        # the operator sees every board, the forged one too (it does claim that parent)
        children = (await c.get(f"/api/boards/{parent}")).json()["subboards"]["children"]
        assert [k["board_id"] for k in children] == [*kids, world["forged"]]
        assert children[-1]["bound_seq"] is None and children[-1]["invocation"] == "forged"
