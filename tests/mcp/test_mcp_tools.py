"""LLM workers using an MCP server's tools (a small stdio server the test starts): calls and
results are recorded in the log, and replay verifies without the server."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the mcp extra is not installed")

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.mcp import mcp_tools
from slateboard.mcp._tools import server_target
from slateboard.models.protocol import Message
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

SERVER = Path(__file__).with_name("mcp_price_server.py")

BLUEPRINT: dict[str, Any] = {
    "name": "buyer",
    "schema": {
        "type": "object",
        "required": ["task"],
        "additionalProperties": False,
        "properties": {"task": {"type": "string"}, "answer": {"type": "integer"}},
    },
    "initial_state": {"task": "What does a widget cost, in euros?"},
    "workers": {"buyer": {"reads": ["/task"], "writes": ["/answer"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "buyer"}],
    "done": "has(state.answer)",
    "answer": "/answer",
}


def answer_from_tool(messages: Sequence[Message]) -> str:
    """The model's second turn: it answers from the tool result it was sent."""
    found = re.search(r'"price_eur":(\d+)', messages[-1].content)
    assert found, messages[-1].content
    return json.dumps({"patch": [{"op": "add", "path": "/answer", "value": int(found.group(1))}]})


def server_spec(log: Path) -> dict[str, Any]:
    env = {**os.environ, "PRICE_SERVER_LOG": str(log)}
    return {"command": sys.executable, "args": [str(SERVER)], "env": env}


async def test_llm_worker_calls_mcp_tool_and_the_log_keeps_it(tmp_path: Path) -> None:
    calls_log = tmp_path / "calls.txt"
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, BLUEPRINT)
        model = ScriptedModel(
            [
                '{"tool": "lookup_price", "args": {"item": "gizmo"}}',  # an error result, told to the model
                '{"tool": "lookup_price", "args": {"item": "widget"}}',
                answer_from_tool,
            ]
        )
        async with mcp_tools(server_spec(calls_log)) as tools:
            assert [t.name for t in tools] == ["lookup_price"]
            assert tools[0].parameters is not None and "item" in tools[0].parameters["properties"]
            result = await Runner(store, board, model=model, tools={"buyer": tools}).run()
        assert result.answer == 17
        assert calls_log.read_text().split() == ["gizmo", "widget"]  # the server really answered
        assert "no price for 'gizmo'" in model.calls[1].messages[-1].content
        records = await store.read_records(board)
        proposal = next(r for r in records if r.kind == "proposal")
        assert proposal.outcome == "accepted"
        log = proposal.meta["tool_log"]
        assert log[0]["tool"] == "lookup_price" and log[0]["args"] == {"item": "gizmo"}
        assert "no price for 'gizmo'" in log[0]["result"]
        assert log[1]["args"] == {"item": "widget"} and '"price_eur":17' in log[1]["result"]
        assert proposal.meta["tool_calls"] == [
            {"tool": "lookup_price", "ok": False},
            {"tool": "lookup_price", "ok": True},
        ]
        # replay: the server is gone (its session closed with the block) and is not called again
        loaded = await store.load_board(board)
        report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records)
        assert report.ok, str(report)
        assert calls_log.read_text().split() == ["gizmo", "widget"]
    finally:
        await store.close()


def test_server_specs() -> None:
    assert server_target("http://127.0.0.1:9/mcp") == "http://127.0.0.1:9/mcp"
    stdio = server_target("python -m my_server --port 'a b'")
    assert stdio.command == "python" and stdio.args == ["-m", "my_server", "--port", "a b"]
    assert server_target({"url": "https://x/mcp"}) == "https://x/mcp"
    with pytest.raises(ValueError, match="'command' or 'url'"):
        server_target({"cmd": "x"})


def test_cli_run_with_mcp_tools(tmp_path: Path) -> None:
    import shlex
    import subprocess

    bp = tmp_path / "buyer.json"
    bp.write_text(json.dumps(BLUEPRINT))
    db = tmp_path / "b.db"
    calls_log = tmp_path / "calls.txt"
    replies = [
        '{"tool": "lookup_price", "args": {"item": "gadget"}}',
        '{"patch": [{"op": "add", "path": "/answer", "value": 42}]}',
    ]
    server = f"buyer={shlex.join([sys.executable, str(SERVER), str(calls_log)])}"
    env = {**os.environ, "PRICE_SERVER_LOG": str(calls_log)}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    cli = "import sys; from slateboard.cli import main; main(sys.argv[1:])"
    argv = [sys.executable, "-c", cli, "run", str(bp), "--store", f"sqlite:///{db}", "--json"]
    bad = subprocess.run([*argv, "--mcp", "nobody=python x.py"], env=env, capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "no worker 'nobody'" in bad.stderr
    done = subprocess.run(
        [*argv, "--model", "scripted:" + json.dumps(replies), "--mcp", server],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == 42
    assert calls_log.read_text().split() == ["gadget"]
    records = subprocess.run(
        [sys.executable, "-c", cli, "log", "--store", f"sqlite:///{db}", json.loads(done.stdout)["board_id"], "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    logged = json.loads(records.stdout)
    proposal = next(r for r in logged["records"] if r["kind"] == "proposal")
    assert proposal["meta"]["tool_log"][0]["args"] == {"item": "gadget"}
    assert '"price_eur":42' in proposal["meta"]["tool_log"][0]["result"]
