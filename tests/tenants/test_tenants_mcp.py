"""MCP within one tenant: ``slateboard mcp serve`` (and ``open_bridge`` under it) runs on the
tenant's scope of the store, so it serves the tenant's boards and answers another tenant's as
a missing one; the agent of the tenant's own board works as ever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the mcp extra is not installed")

from mcp import Client
from tenant_testkit import OTHER_ID, Cli, same_as_missing

from slateboard.mcp._server import build_server, open_bridge
from slateboard.runtime.create import create_board
from slateboard.stores import BoardNotFound, open_store
from slateboard.stores.tenancy import TenantStore, tenant_registry

BLUEPRINT: dict[str, Any] = {
    "name": "mcp-notes",
    "schema": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "notes": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"task": "acme secret task", "notes": []},
    "workers": {"agent": {"reads": ["/task", "/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "agent"}],
    "done": "size(state.notes) >= 1",
}


async def test_a_bridge_bound_to_one_tenant_cannot_open_anothers_board(tmp_path: Path) -> None:
    shared = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        for tenant in ("acme", "globex"):
            await tenant_registry(shared).add(tenant)
        acme, globex = TenantStore(shared, "acme"), TenantStore(shared, "globex")
        board = await create_board(acme, BLUEPRINT)
        errors = []
        for target in (board, OTHER_ID):
            with pytest.raises(BoardNotFound) as err:
                async with open_bridge(globex, target, "agent", timeout=5):
                    pass
            errors.append(str(err.value))
        assert same_as_missing(errors[0], errors[1], board)
        # the board's own tenant serves it: read the view, propose, and the board ends
        async with open_bridge(acme, board, "agent", timeout=30) as bridge, Client(build_server(bridge)) as client:
            waiting = (await client.call_tool("wait_for_invocation", {"timeout_s": 30})).structured_content
            assert waiting["waiting"] is True
            view = (await client.call_tool("read_view", {})).structured_content
            assert view["view"]["data"]["/task"] == "acme secret task"
            patch = [{"op": "add", "path": "/notes/-", "value": "from outside"}]
            decided = (await client.call_tool("propose", {"patch": patch})).structured_content
            assert decided["outcome"] == "accepted"
            done = (await client.call_tool("wait_for_invocation", {"timeout_s": 30})).structured_content
            assert done == {"waiting": False, "ended": "done"}
        assert (await acme.board_info(board)).status == "done"
        assert (await globex.list_boards()) == []
    finally:
        await shared.close()


def test_cli_mcp_serve_in_another_tenant_answers_as_for_a_missing_board(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'b.db'}"
    cli = Cli(url)
    for tenant in ("acme", "globex"):
        assert cli("tenant", "add", tenant).exit_code == 0

    async def make() -> str:
        async with await open_store(url, tenant="acme") as acme:
            return await create_board(acme, BLUEPRINT)

    board = asyncio.run(make())
    got = cli("mcp", "serve", board, "agent", tenant="globex")
    missing = cli("mcp", "serve", OTHER_ID, "agent", tenant="globex")
    assert got.exit_code == missing.exit_code != 0
    assert same_as_missing(got.stderr, missing.stderr, board), (got.stderr, missing.stderr)
    assert "secret" not in got.output
