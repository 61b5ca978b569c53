"""Issue 29, R2: ``slateboard mcp serve`` with several MCP clients on one board.

A real server process (the CLI, streamable HTTP on loopback, a real SQLite store) and real MCP
SDK clients, one session each. Fails on ec36c64: there every session was handed the one waiting
invocation, the kernel's decisions went to whichever ``propose`` call read the shared queue
first (client 7 was told another client's decision) and a patch could land on an invocation
whose view its author never read; ``--parallel`` did not exist.

- Eight clients (the server one invocation at a time): every answer is the decision on the
  client's own patch (its record's patch, invocation and outcome), no client is ever handed an
  invocation another one holds.
- Two clients that both read ``value`` 0 and propose ``value`` 1 (``--parallel 2``): one commit,
  one ``stale`` rejection, and once the stale one re-proposes from its fresh view, 2: no lost
  update.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the mcp extra is not installed")

from mcp import Client

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.runtime import create_board
from slateboard.stores import open_store

CLI = "import sys; from slateboard.cli import main; main(sys.argv[1:])"
CLIENTS = 8

BLUEPRINT: dict[str, Any] = {
    "name": "mcp-many",
    "schema": {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "jobs": {"type": "array", "items": {"type": "string"}},
            "marks": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "initial_state": {"value": 0, "jobs": [], "marks": {}},
    "workers": {"agent": {"reads": ["/value", "/jobs"], "writes": ["/value", "/jobs/-", "/marks/*"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "agent"},
        {"on": {"op": "add", "path": "/jobs/*"}, "invoke": "agent"},
    ],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def patch_of(rec: Any) -> Any:
    """A record's patch as JSON (the log keeps the canonical text)."""
    return json.loads(rec.patch) if isinstance(rec.patch, str) else rec.patch


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


@asynccontextmanager
async def served(db: Path, board: str, *extra: str) -> AsyncIterator[str]:
    """``slateboard mcp serve`` over HTTP on loopback; yields its URL."""
    port = _free_port()
    argv = [sys.executable, "-c", CLI, "mcp", "serve", "--board", board, "--worker", "agent"]
    argv += [
        "--store",
        f"sqlite:///{db}",
        "--transport",
        "http",
        "--port",
        str(port),
        "--timeout",
        "120",
        "--model",
        'scripted:["[]"]',
        *extra,
    ]
    proc = subprocess.Popen(argv, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = await asyncio.to_thread(proc.stderr.readline)
        url = f"http://127.0.0.1:{port}/mcp"
        assert url in line, line + (proc.stderr.read() if proc.poll() is not None else "")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@asynccontextmanager
async def client(url: str) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url)) as c:
        yield c


async def _make_board(db: Path) -> str:
    store = await open_store(f"sqlite:///{db}")
    try:
        return await create_board(store, BLUEPRINT)
    finally:
        await store.close()


async def _records(db: Path, board: str) -> tuple[list[Any], Any]:
    store = await open_store(f"sqlite:///{db}")
    try:
        loaded = await store.load_board(board)
        records = await store.read_records(board)
        assert replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records).ok
        return records, loaded
    finally:
        await store.close()


async def test_each_of_eight_clients_is_answered_about_its_own_patch(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    board = await _make_board(db)
    answers: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    held: dict[str, str] = {}  # invocation -> the client holding it now

    async with served(db, board) as url:
        async with client(url) as first:
            w = data(await first.call_tool("wait_for_invocation", {"timeout_s": 60}))
            jobs = [{"op": "add", "path": "/jobs/-", "value": f"job-{i}"} for i in range(CLIENTS)]
            seeded = data(
                await first.call_tool("propose", {"patch": jobs, "invocation": w["invocation"], "claim": w["claim"]})
            )
            assert seeded["outcome"] == "accepted", seeded

        async def agent(i: int) -> None:
            name = f"client-{i}"
            async with client(url) as c:
                for attempt in range(CLIENTS * 2):
                    w = data(await c.call_tool("wait_for_invocation", {"timeout_s": 8}))
                    if not w["waiting"]:
                        return
                    inv, claim = w["invocation"], w["claim"]
                    assert held.setdefault(inv, name) == name, f"{inv} handed to {name} while {held[inv]} holds it"
                    # asked again, a session is handed the same invocation until it proposes
                    again = data(await c.call_tool("wait_for_invocation", {"timeout_s": 1, "claim": claim}))
                    assert again["invocation"] == inv and again["claim"] == claim
                    view = data(await c.call_tool("read_view", {"claim": claim}))
                    assert view["invocation"] == inv and view["view"]["hash"] == w["view_hash"]
                    await asyncio.sleep(0.01 * ((i * 7 + attempt) % 5))  # interleave the sessions
                    # odd clients first write outside the contract (rejected and retried)
                    if i % 2 and attempt == 0:
                        patch = [{"op": "add", "path": "/forbidden", "value": name}]
                    else:
                        patch = [{"op": "add", "path": f"/marks/{name}-{attempt}", "value": inv}]
                    del held[inv]
                    answer = data(
                        await c.call_tool(
                            "propose",
                            {"patch": patch, "invocation": inv, "view_version": w["view_version"], "claim": claim},
                        )
                    )
                    answers.append((name, answer, patch))

        await asyncio.gather(*(agent(i) for i in range(CLIENTS)))

    records, _ = await _records(db, board)
    by_seq = {r.seq: r for r in records}
    proposals = [r for r in records if r.kind == "proposal"]
    # the seeding patch, one accepted mark per job, and one authorise rejection per odd client
    # that got an invocation on its first attempt
    assert len(answers) == len(proposals) - 1
    assert sum(a["outcome"] == "accepted" for _, a, _ in answers) == CLIENTS
    for name, answer, patch in answers:
        rec = by_seq[answer["seq"]]
        assert patch_of(rec) == patch, f"{name} was answered about seq {rec.seq}, a patch it did not send"
        assert rec.invocation == answer["invocation"]
        assert (rec.outcome, rec.stage) == (answer["outcome"], answer["stage"])
        assert rec.meta.get("viewed_version") == answer["view_version"]
    seqs = [a["seq"] for _, a, _ in answers]
    assert len(set(seqs)) == len(seqs)
    state_marks = {patch_of(r)[0]["path"] for r in proposals if r.outcome == "accepted" and "/marks/" in str(r.patch)}
    assert len(state_marks) == CLIENTS


async def test_two_clients_from_one_version_give_one_commit_and_one_stale(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    board = await _make_board(db)
    async with served(db, board, "--parallel", "2") as url:
        async with client(url) as first:
            w = data(await first.call_tool("wait_for_invocation", {"timeout_s": 60}))
            jobs = [{"op": "add", "path": "/jobs/-", "value": "a"}, {"op": "add", "path": "/jobs/-", "value": "b"}]
            answer = data(await first.call_tool("propose", {"patch": jobs, "claim": w["claim"]}))
            assert answer["outcome"] == "accepted"

        both_read = asyncio.Barrier(2)
        answers: list[dict[str, Any]] = []

        async def increment(c: Any) -> dict[str, Any]:
            w = data(await c.call_tool("wait_for_invocation", {"timeout_s": 60}))
            assert w["waiting"], w
            view = data(await c.call_tool("read_view", {"claim": w["claim"]}))
            value = view["view"]["data"]["/value"]
            await both_read.wait()
            patch = [{"op": "replace", "path": "/value", "value": value + 1}]
            return dict(data(await c.call_tool("propose", {"patch": patch, "claim": w["claim"]})), read=value)

        async with client(url) as a, client(url) as b:
            first_two = await asyncio.gather(increment(a), increment(b))
            answers.extend(first_two)
            assert [x["read"] for x in first_two] == [0, 0]
            outcomes = sorted((x["outcome"], x["stage"]) for x in first_two)
            assert outcomes == [("accepted", None), ("rejected", "stale")], first_two
            loser = a if first_two[0]["stage"] == "stale" else b
            stale = next(x for x in first_two if x["stage"] == "stale")
            assert stale["requeued"] is True
            # the re-queued invocation comes back with a fresh view (value 1): no lost update
            retry = await increment_alone(loser)
            assert retry["read"] == 1 and retry["outcome"] == "accepted", retry
            answers.append(retry)

    records, _ = await _records(db, board)
    by_seq = {r.seq: r for r in records}
    for answer in answers:
        rec = by_seq[answer["seq"]]
        assert (rec.outcome, rec.stage) == (answer["outcome"], answer["stage"])
        assert patch_of(rec) == [{"op": "replace", "path": "/value", "value": answer["read"] + 1}]
    last = [r for r in records if r.kind == "proposal" and r.outcome == "accepted"][-1]
    assert patch_of(last) == [{"op": "replace", "path": "/value", "value": 2}]


async def increment_alone(c: Any) -> dict[str, Any]:
    w = data(await c.call_tool("wait_for_invocation", {"timeout_s": 60}))
    assert w["waiting"], w
    value = data(await c.call_tool("read_view", {"claim": w["claim"]}))["view"]["data"]["/value"]
    patch = [{"op": "replace", "path": "/value", "value": value + 1}]
    args = {"patch": patch, "view_version": w["view_version"], "claim": w["claim"]}
    answer = data(await c.call_tool("propose", args))
    return dict(answer, read=value)


async def test_claimless_agents_never_share_an_invocation(tmp_path: Path) -> None:
    """Two agents without claims (MCP's stateless protocol, in process): the second is never
    handed the invocation the first holds, and cannot propose for it."""
    from slateboard.mcp._server import build_server, open_bridge

    db = tmp_path / "b.db"
    board = await _make_board(db)
    store = await open_store(f"sqlite:///{db}")
    try:
        async with open_bridge(store, board, "agent", timeout=60, model='scripted:["[]"]') as bridge:
            server = build_server(bridge)
            async with Client(server) as a, Client(server) as b:
                w = data(await a.call_tool("wait_for_invocation", {"timeout_s": 30}))
                assert w["waiting"] and w["claim"]
                other = data(await b.call_tool("wait_for_invocation", {"timeout_s": 0.5}))
                assert other == {"waiting": False, "ended": None}
                patch = [{"op": "replace", "path": "/value", "value": 5}]
                refused = await b.call_tool("propose", {"patch": patch, "claim": "not-a-claim"})
                assert refused.is_error and "holds no invocation" in str(refused.content)
                answer = data(await a.call_tool("propose", {"patch": patch}))
                assert answer["outcome"] == "accepted" and answer["invocation"] == w["invocation"]
        records = await store.read_records(board)
        assert [patch_of(r) for r in records if r.kind == "proposal"] == [patch]
    finally:
        await store.close()
