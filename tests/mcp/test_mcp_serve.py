"""MCP: an external agent (the official SDK's client) joins a board as a worker through
``slateboard mcp serve``, reads its view, has one proposal rejected at ``authorise`` and one
accepted, and the board's log shows both (in process, over stdio, and over streamable HTTP)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the mcp extra is not installed")

from mcp import Client, StdioServerParameters

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.mcp._server import build_server, http_app, open_bridge, tool_names
from slateboard.runtime import create_board
from slateboard.stores import open_store
from slateboard.stores.base import Store

BLUEPRINT: dict[str, Any] = {
    "name": "mcp-notes",
    "schema": {
        "type": "object",
        "required": ["task", "notes"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "notes": {"type": "array", "items": {"type": "string"}},
            "answer": {"type": "string"},
        },
    },
    "initial_state": {"task": "write one note", "notes": []},
    "workers": {"agent": {"reads": ["/task", "/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "agent"}],
    "done": "size(state.notes) >= 1",
}

FORBIDDEN = [{"op": "add", "path": "/answer", "value": "I am not allowed to write this"}]
GOOD = [{"op": "add", "path": "/notes/-", "value": "a note from outside"}]


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def agent_session(client: Client) -> list[dict[str, Any]]:
    """What an external agent does: wait, read, propose (rejected), wait, read, propose (accepted)."""
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools == set(tool_names())
    decisions = []
    for patch in (FORBIDDEN, GOOD):
        waiting = data(await client.call_tool("wait_for_invocation", {"timeout_s": 30}))
        assert waiting["waiting"] is True and waiting["invocation"]
        pending = data(await client.call_tool("pending_invocations", {}))
        items = pending["result"] if isinstance(pending, dict) and "result" in pending else pending
        assert [p["invocation"] for p in items if p["awaiting_patch"]] == [waiting["invocation"]]
        view = data(await client.call_tool("read_view", {}))
        assert view["view"]["worker"] == "agent"
        assert view["view"]["hash"] == waiting["view_hash"]
        assert view["view"]["data"]["/task"] == "write one note"
        assert "/answer" not in view["view"]["data"]  # outside the read contract
        decisions.append(data(await client.call_tool("propose", {"patch": patch})))
    return decisions


async def check_log(store: Store, board: str, decisions: list[dict[str, Any]]) -> None:
    rejected, accepted = decisions
    assert rejected["outcome"] == "rejected" and rejected["stage"] == "authorise"
    assert "/answer" in rejected["reason"]
    assert accepted["outcome"] == "accepted" and accepted["stage"] is None
    records = await store.read_records(board)
    proposals = [r for r in records if r.kind == "proposal"]
    assert [(r.outcome, r.stage, r.worker) for r in proposals] == [
        ("rejected", "authorise", "agent"),
        ("accepted", None, "agent"),
    ]
    assert [r.seq for r in proposals] == [rejected["seq"], accepted["seq"]]
    assert all(r.meta.get("kind") == "external" and r.view_hash for r in proposals)
    loaded = await store.load_board(board)
    assert replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records).ok


async def test_sdk_client_in_process(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, BLUEPRINT)
        async with open_bridge(store, board, "agent", timeout=60) as bridge, Client(build_server(bridge)) as client:
            decisions = await agent_session(client)
            done = data(await client.call_tool("wait_for_invocation", {"timeout_s": 30}))
            assert done == {"waiting": False, "ended": "done"}
            refused = await client.call_tool("propose", {"patch": GOOD})
            assert refused.is_error and "ended" in str(refused.content)
        assert (await store.board_info(board)).status == "done"
        state = (await store.load_board(board)).blueprint  # the board is intact and loadable
        assert state["name"] == "mcp-notes"
        await check_log(store, board, decisions)
    finally:
        await store.close()


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    return env


CLI = "import sys; from slateboard.cli import main; main(sys.argv[1:])"


async def test_sdk_client_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = await open_store(f"sqlite:///{db}")
    board = await create_board(store, BLUEPRINT)
    await store.close()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", CLI, "mcp", "serve", "--board", board[:8], "--worker", "agent", "--store", f"sqlite:///{db}"],
        env=_cli_env(),
    )
    async with Client(params) as client:
        decisions = await agent_session(client)
    store = await open_store(f"sqlite:///{db}")
    try:
        await check_log(store, board, decisions)
    finally:
        await store.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_sdk_client_over_http_with_a_token(tmp_path: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    db = tmp_path / "b.db"
    store = await open_store(f"sqlite:///{db}")
    board = await create_board(store, BLUEPRINT)
    await store.close()
    port = _free_port()
    argv = ["-c", CLI, "mcp", "serve", "--board", board, "--worker", "agent", "--store", f"sqlite:///{db}"]
    # off loopback without a token: refused before anything listens
    refused = subprocess.run(
        [sys.executable, *argv, "--transport", "http", "--host", "0.0.0.0"],
        env=_cli_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0 and "without a token" in refused.stderr
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, *argv, "--transport", "http", "--port", str(port), "--token", token],
        env=_cli_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert proc.stderr is not None
        line = await asyncio.to_thread(proc.stderr.readline)
        assert url in line, line
        async with httpx.AsyncClient() as http:
            r = await http.post(url, json={})
            assert r.status_code == 401  # no token
            r = await http.post(url, json={}, headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401
        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with authed, Client(streamable_http_client(url, http_client=authed)) as client:
            decisions = await agent_session(client)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    store = await open_store(f"sqlite:///{db}")
    try:
        await check_log(store, board, decisions)
    finally:
        await store.close()


async def test_http_guard_rules() -> None:
    """Without a token only loopback Host names are answered (403 else); with one, 401 unless sent."""
    from mcp.server.mcpserver import MCPServer

    async def status(app: Any, host: str, headers: dict[str, str] | None = None) -> int:
        # the MCP app itself is not started here (no lifespan): a request the guard lets through
        # fails inside it (500), which is all this test needs to tell it from a 401 or 403
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
            r = await http.get("/mcp", headers=headers or {})
            return r.status_code

    open_app = http_app(MCPServer("x"))
    assert await status(open_app, "evil.example") == 403
    assert await status(open_app, "evil.example:8766") == 403
    assert await status(open_app, "127.0.0.1:8766") not in (401, 403)
    guarded = http_app(MCPServer("x"), host="0.0.0.0", token="s3cret-s3cret")
    assert await status(guarded, "example.org") == 401
    assert await status(guarded, "example.org", {"Authorization": "Bearer nope"}) == 401
    assert await status(guarded, "example.org", {"Authorization": "Bearer s3cret-s3cret"}) not in (401, 403)
    with pytest.raises(ValueError, match="at least 12 characters"):
        http_app(MCPServer("x"), token="short")


def test_cli_refuses_an_unknown_worker_or_transport(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slateboard.cli import app

    url = f"sqlite:///{tmp_path / 'b.db'}"

    async def make() -> str:
        store = await open_store(url)
        try:
            return await create_board(store, BLUEPRINT)
        finally:
            await store.close()

    board = asyncio.run(make())
    cli = CliRunner()
    res = cli.invoke(app, ["mcp", "serve", "--board", board, "--worker", "nobody", "--store", url])
    assert res.exit_code != 0 and "no worker 'nobody'" in res.stdout + res.stderr
    res = cli.invoke(app, ["mcp", "serve", "--board", board, "--worker", "agent", "--transport", "sse", "--store", url])
    assert res.exit_code != 0 and "stdio or http" in res.stdout + res.stderr


CLOSER = """\
def close(view):
    notes = view.data.get("/notes") or []
    return [{"op": "add", "path": "/answer", "value": f"{len(notes)} note(s): {notes[0]}"}]
"""


async def test_serve_from_another_directory_imports_function_workers_beside_the_blueprint(tmp_path: Path) -> None:
    """A board submitted from a blueprint file whose function worker is a module beside it; ``mcp
    serve`` started as a real subprocess from another working directory runs that worker (it
    imports from the board's recorded ``blueprint_dir``) once the external agent's patch lands."""
    module = f"closer_{uuid.uuid4().hex[:8]}"
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / f"{module}.py").write_text(CLOSER, encoding="utf-8")
    blueprint = {
        **BLUEPRINT,
        "workers": {
            **BLUEPRINT["workers"],
            "closer": {"function": f"{module}:close", "reads": ["/notes"], "writes": ["/answer"]},
        },
        "rules": [*BLUEPRINT["rules"], {"on": {"op": "add", "path": "/notes/-"}, "invoke": "closer"}],
        "done": "has(state.answer)",
        "answer": "/answer",
    }
    (project / "bp.yaml").write_text(json.dumps(blueprint), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'b.db'}"
    submitted = subprocess.run(
        [sys.executable, "-c", CLI, "submit", "project/bp.yaml", "--store", url],
        cwd=tmp_path, env=_cli_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    board = submitted.stdout.strip()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", CLI, "mcp", "serve", "--board", board, "--worker", "agent", "--store", url],
        env=_cli_env(),
        cwd=str(elsewhere),
    )
    async with Client(params) as client:
        waiting = data(await client.call_tool("wait_for_invocation", {"timeout_s": 60}))
        assert waiting["waiting"] is True
        accepted = data(await client.call_tool("propose", {"patch": GOOD}))
        assert accepted["outcome"] == "accepted"
        ended = data(await client.call_tool("wait_for_invocation", {"timeout_s": 60}))
        assert ended == {"waiting": False, "ended": "done"}
    store = await open_store(url)
    try:
        assert (await store.board_info(board)).status == "done"
        loaded = await store.load_board(board)
        records = await store.read_records(board)
        closer = [r for r in records if r.worker == "closer"]
        assert [(r.outcome, r.stage) for r in closer] == [("accepted", None)]
        assert replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records).state["answer"] == (
            "1 note(s): a note from outside"
        )
    finally:
        await store.close()
