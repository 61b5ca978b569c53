"""Sub-board links in the CLI (issue 43): ``boards --json`` and ``show`` name a child board's
parent (worker, item, invocation) and a parent's children; with ``--tenant`` another tenant's
listing names none of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from subboards_kit import parent_blueprint
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.runtime import Runner, create_board
from slateboard.runtime.children import child_id
from slateboard.stores import open_store
from slateboard.stores.tenancy import TenantStore, tenant_registry

DOCS = ["alpha", "beta"]


async def _fan_out(url: str) -> tuple[str, str]:
    """acme runs a fan-out over DOCS; globex exists (a registered tenant with no boards)."""
    shared = await open_store(url)
    try:
        for tenant in ("acme", "globex"):
            await tenant_registry(shared).add(tenant)
        acme = TenantStore(shared, "acme")
        board = await create_board(acme, parent_blueprint(DOCS))
        await Runner(acme, board).run()
        invocation = next(r.invocation for r in await acme.read_records(board) if r.worker == "each_doc")
        return board, str(invocation)
    finally:
        await shared.close()


def _cli(url: str, *args: str) -> Any:
    env = {"SLATEBOARD_STORE": url, "COLUMNS": "400", "SLATEBOARD_TENANT": ""}
    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_boards_and_show_name_parent_and_children(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"
    parent, invocation = asyncio.run(_fan_out(url))
    kids = [child_id(parent, invocation, i) for i in range(len(DOCS))]
    listed = {b["board_id"]: b for b in json.loads(_cli(url, "boards", "--json", "--tenant", "acme"))}
    assert [
        (c["board_id"], c["index"], c["invocation"], c["worker"], c["end_status"]) for c in listed[parent]["subboards"]
    ] == [(kid, i, invocation, "each_doc", "solved") for i, kid in enumerate(kids)]
    assert listed[parent]["subboard_of"] is None
    for i, kid in enumerate(kids):
        assert listed[kid]["subboard_of"] == {
            "board": parent,
            "invocation": invocation,
            "index": i,
            "worker": "each_doc",
        }
        assert listed[kid]["subboards"] == []
    shown = json.loads(_cli(url, "show", kids[1], "--json", "--tenant", "acme"))
    assert shown["subboard_of"]["index"] == 1 and shown["state"]["summary"] == "BETA"
    text = _cli(url, "show", parent, "--tenant", "acme")
    assert f"2 sub-boards: {kids[0]} (item 0, solved), {kids[1]} (item 1, solved)" in text
    assert f"sub-board of {parent} (worker each_doc, item 0, invocation {invocation})" in _cli(
        url, "show", kids[0], "--tenant", "acme"
    )
    # another tenant's listing holds none of them, and names none of them
    other = _cli(url, "boards", "--json", "--tenant", "globex")
    assert json.loads(other) == [] and parent not in other and not any(kid in other for kid in kids)
