"""``slateboard mcp serve``: an MCP server through which an external agent works as one worker.

The server (official ``mcp`` SDK, ``MCPServer``) drives the board with a ``Runner`` in the same
process; the named worker is an ``ExternalWorker`` whose patches come from the MCP client, every
other worker runs as the blueprint says (``model`` for its LLM workers). Tools:

- ``wait_for_invocation(timeout_s)``: the next invocation waiting for this worker's patch;
- ``read_view()``: the view the runner built for it (exactly what an internal worker sees);
- ``pending_invocations()``: this worker's pending and claimed invocations in the store;
- ``propose(patch, expand)``: the patch goes through the kernel like any proposal (logged as a
  record); returns the decision: outcome, stage, reason, seq, version.

Transports: stdio, and streamable HTTP. Over HTTP the dashboard's rule applies: without a token
only loopback ``Host`` names are answered, and binding anything but loopback needs a token sent
as ``Authorization: Bearer TOKEN`` (or ``?token=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..models.protocol import Model
from ..runtime.runner import Runner
from ..stores.base import Store
from ._bridge import Bridge, BridgeError, ExternalWorker

__all__ = ["DEFAULT_EXTERNAL_TIMEOUT", "build_server", "http_app", "open_bridge", "serve_board", "tool_names"]

log = logging.getLogger("slateboard.mcp")

DEFAULT_EXTERNAL_TIMEOUT = 3600.0
"""How long the runner waits for the external agent's patch before the invocation becomes a
``parse`` rejection (worker timed out), as for any worker."""

INSTRUCTIONS = (
    "You are worker {worker!r} on slateboard board {board}. Loop: call wait_for_invocation, then "
    "read_view (your bounded view of the board, the schema fragments you may write, recent "
    "rejections), then propose a JSON Patch (RFC 6902 list of operations) inside your write contract. "
    "propose returns the kernel's decision: on a rejection, read its stage and reason and try again."
)


def build_server(bridge: Bridge) -> Any:
    """The MCP server (an ``mcp.server.mcpserver.MCPServer``) exposing ``bridge``'s worker."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    worker = bridge.worker.name
    server = MCPServer(
        name=f"slateboard-{worker}",
        instructions=INSTRUCTIONS.format(worker=worker, board=bridge.board_id),
    )

    @server.tool()
    async def wait_for_invocation(timeout_s: float = 30.0) -> dict[str, Any]:
        """Wait (up to timeout_s seconds, at most 300) for the next invocation of this worker.

        Returns {"waiting": true, "invocation", "event", "feedback", "view_version", "view_hash"}, or
        {"waiting": false, "ended": REASON} when the board's run ended (ended is null on a timeout)."""
        return await bridge.wait_for_invocation(min(max(timeout_s, 0.0), 300.0))

    @server.tool()
    async def read_view() -> dict[str, Any]:
        """This worker's view for the waiting invocation: bounded, inside its read contract, hashed.

        view.data holds the state values it may read, view.writable the paths and schema fragments
        it may write, view.rejections its recent rejections; text is the canonical rendering."""
        try:
            return bridge.view()
        except BridgeError as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    async def pending_invocations() -> list[dict[str, Any]]:
        """This worker's pending and claimed invocations on the board's agenda."""
        return await bridge.pending()

    @server.tool()
    async def propose(patch: list[dict[str, Any]], expand: list[str] | None = None) -> dict[str, Any]:
        """Propose a JSON Patch for the waiting invocation; the kernel decides it.

        patch: RFC 6902 operations, e.g. [{"op": "add", "path": "/notes/-", "value": {...}}].
        expand: view handles to see in full next time. Returns the decision: outcome (accepted,
        rejected, held), stage and reason of a rejection, the record's seq and the state version."""
        try:
            return await bridge.propose(patch, expand=tuple(expand or ()), client="mcp")
        except BridgeError as exc:
            raise ToolError(str(exc)) from None

    return server


@contextlib.asynccontextmanager
async def open_bridge(
    store: Store,
    board_id: str,
    worker: str,
    *,
    model: Model | str | None = None,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    timeout: float = DEFAULT_EXTERNAL_TIMEOUT,
    max_steps: int | None = None,
) -> Any:
    """Run board ``board_id`` with ``worker`` external while the block runs; yields the Bridge.

    The run task ends with the board (or is cancelled when the block exits; the board then
    resumes later from its log, as after any interrupted run)."""
    external = ExternalWorker(worker)
    runner = Runner(
        store,
        board_id,
        model=model,
        functions=functions,
        workers={worker: external},
        worker_timeout=timeout,
        max_steps=max_steps,
    )
    await runner.open()
    if worker not in runner.blueprint.workers:
        raise InvalidInput(
            f"board {board_id} has no worker {worker!r} (workers: {', '.join(runner.blueprint.workers)})"
        )
    bridge = Bridge(runner, external)
    bridge.start()
    task = asyncio.create_task(runner.run())
    bridge.run_task = task
    try:
        yield bridge
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await bridge.close()


async def serve_board(
    store: Store,
    board_id: str,
    worker: str,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    sock: socket.socket | None = None,
    host: str = "127.0.0.1",
    token: str | None = None,
    model: Model | str | None = None,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    timeout: float = DEFAULT_EXTERNAL_TIMEOUT,
    ready: Callable[[], None] | None = None,
) -> JSON:
    """Serve ``worker`` of ``board_id`` over MCP until the transport closes (stdin's end, or a
    signal for HTTP). Returns the board's end reason if its run ended meanwhile, else None."""
    async with open_bridge(store, board_id, worker, model=model, functions=functions, timeout=timeout) as bridge:
        server = build_server(bridge)
        if transport == "stdio":
            if ready is not None:
                ready()
            await server.run_stdio_async()
        else:
            await _serve_http(server, sock, host, token, ready)
        return bridge.ended


async def _serve_http(
    server: Any, sock: socket.socket | None, host: str, token: str | None, ready: Callable[[], None] | None
) -> None:
    import uvicorn

    if sock is None:
        raise InvalidInput("the HTTP transport needs a listening socket")
    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2, lifespan="on")
    uv = uvicorn.Server(config)
    if ready is not None:
        ready()
    await uv.serve(sockets=[sock])


def http_app(server: Any, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The streamable-HTTP ASGI app of ``server`` (endpoint ``/mcp``) behind the dashboard's guard:
    with ``token`` every request must carry it (``Authorization: Bearer``), else 401; without one
    only loopback ``Host`` names are answered, else 403 (no DNS rebinding onto a loopback server)."""
    from ..httpguard import TokenGuard

    return TokenGuard(server.streamable_http_app(host=host), token, name="this MCP server")


def tool_names() -> Sequence[str]:
    """The tools ``build_server`` exposes."""
    return ("wait_for_invocation", "read_view", "pending_invocations", "propose")
