"""``slateboard mcp serve``: an MCP server through which an external agent works as one worker.

The server (official ``mcp`` SDK, ``MCPServer``) drives the board with a ``Runner`` in the same
process; the named worker is an ``ExternalWorker`` whose patches come from the MCP client, every
other worker runs as the blueprint says (``model`` for its LLM workers). Tools:

- ``wait_for_invocation(timeout_s)``: the next invocation waiting for this worker's patch, now
  held by the calling MCP session (no other session can read or answer it);
- ``read_view()``: the view the runner built for it (exactly what an internal worker sees);
- ``pending_invocations()``: this worker's pending and claimed invocations in the store;
- ``propose(patch, expand, invocation, view_version)``: the patch goes through the kernel like
  any proposal, as of the version of the view the session read (the ``stale`` check), and is
  logged as a record; returns that proposal's decision, to that session only: outcome, stage,
  reason, seq, version.

Several MCP sessions may serve the worker at once (issue 29, R2); ``parallel`` lets that many of
its invocations wait at once, one per session (see ``_bridge``).

Transports: stdio, and streamable HTTP. Over HTTP the dashboard's rule applies: without a token
only loopback ``Host`` names are answered, and binding anything but loopback needs a token sent
as ``Authorization: Bearer TOKEN`` (or ``?token=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..models.protocol import Model
from ..runtime.runner import Runner
from ..stores.base import Store
from ._bridge import ANONYMOUS, Bridge, BridgeError, ExternalWorker, claim_key

__all__ = ["DEFAULT_EXTERNAL_TIMEOUT", "build_server", "http_app", "open_bridge", "serve_board", "tool_names"]

log = logging.getLogger("slateboard.mcp")

DEFAULT_EXTERNAL_TIMEOUT = 3600.0
"""How long the runner waits for the external agent's patch before the invocation becomes a
``parse`` rejection (worker timed out), as for any worker."""

INSTRUCTIONS = (
    "You are worker {worker!r} on slateboard board {board}. Loop: call wait_for_invocation, then "
    "read_view (your bounded view of the board, the schema fragments you may write, recent "
    "rejections), then propose a JSON Patch (RFC 6902 list of operations) inside your write contract. "
    "Pass the claim wait_for_invocation returned to read_view and propose: the invocation is yours alone. "
    "propose returns the kernel's decision: on a rejection, read its stage and reason and try again."
)


def build_server(bridge: Bridge) -> Any:
    """The MCP server (an ``mcp.server.mcpserver.MCPServer``) exposing ``bridge``'s worker."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    worker = bridge.worker.name
    server = MCPServer(
        name=f"slateboard-{worker}",
        instructions=INSTRUCTIONS.format(worker=worker, board=bridge.board_id),
    )

    def tool(fn: Callable[..., Any]) -> Any:
        # The SDK reads the annotations to inject the caller's Context (its session); this
        # module's annotations are strings and Context is imported here, not at module level
        # (the mcp extra is optional), so the one it cannot resolve is given as the class.
        fn.__annotations__["ctx"] = Context
        return server.tool()(fn)

    @tool
    async def wait_for_invocation(ctx: Context, timeout_s: float = 30.0, claim: str | None = None) -> dict[str, Any]:
        """Wait (up to timeout_s seconds, at most 300) for the next invocation of this worker; it is
        yours until you propose for it (asked again with its claim, the same one is returned).

        Returns {"waiting": true, "invocation", "event", "feedback", "view_version", "view_hash",
        "claim"}, or {"waiting": false, "ended": REASON} when the board's run ended (ended is null
        on a timeout). Pass claim to read_view and propose when other agents share this server."""
        return await bridge.wait_for_invocation(min(max(timeout_s, 0.0), 300.0), _session(ctx, claim))

    @tool
    async def read_view(ctx: Context, claim: str | None = None) -> dict[str, Any]:
        """This worker's view for the invocation this session holds: bounded, inside its read
        contract, hashed.

        view.data holds the state values it may read, view.writable the paths and schema fragments
        it may write, view.rejections its recent rejections; text is the canonical rendering."""
        try:
            return bridge.view(_session(ctx, claim))
        except BridgeError as exc:
            raise ToolError(str(exc)) from None

    @tool
    async def pending_invocations(ctx: Context, claim: str | None = None) -> list[dict[str, Any]]:
        """This worker's pending and claimed invocations on the board's agenda."""
        return await bridge.pending(_session(ctx, claim))

    @tool
    async def propose(
        ctx: Context,
        patch: list[dict[str, Any]],
        expand: list[str] | None = None,
        invocation: str | None = None,
        view_version: int | None = None,
        claim: str | None = None,
    ) -> dict[str, Any]:
        """Propose a JSON Patch for the invocation this session holds; the kernel decides it as of
        the version of the view the session read (a proposal whose read or written paths changed
        since is rejected as stale and the invocation re-queued with a fresh view).

        patch: RFC 6902 operations, e.g. [{"op": "add", "path": "/notes/-", "value": {...}}].
        expand: view handles to see in full next time. invocation, view_version, claim: what
        wait_for_invocation returned (optional; a mismatch is refused). Returns the decision:
        outcome (accepted, rejected, held), stage and reason of a rejection, the record's seq and
        the state version."""
        try:
            return await bridge.propose(
                patch,
                expand=tuple(expand or ()),
                client="mcp",
                session=_session(ctx, claim),
                invocation=invocation,
                view_version=view_version,
            )
        except BridgeError as exc:
            raise ToolError(str(exc)) from None

    return server


def _session(ctx: Any, claim: str | None) -> Hashable:
    """The key of the agent session a call belongs to: the claim it passes back (what
    ``wait_for_invocation`` returned), else the streamable-HTTP session id of older protocol
    versions (the transport assigned it and answers only requests that carry it), else one
    anonymous session (MCP 2026-07-28 is stateless: agents sharing a server pass their claim)."""
    if claim:
        return claim_key(claim)
    headers = ctx.headers
    sid = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{sid}" if sid else ANONYMOUS


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
    parallel: int = 1,
) -> Any:
    """Run board ``board_id`` with ``worker`` external while the block runs; yields the Bridge.

    ``parallel``: how many invocations may wait for patches at once (one per agent session);
    above 1, proposals made from one version may conflict, and the kernel rejects the later as
    ``stale`` (re-queued with a fresh view). The run task ends with the board (or is cancelled
    when the block exits; the board then resumes later from its log, as after any interrupted
    run)."""
    external = ExternalWorker(worker)
    runner = Runner(
        store,
        board_id,
        model=model,
        functions=functions,
        workers={worker: external},
        worker_timeout=timeout,
        max_steps=max_steps,
        parallel=parallel,
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
    parallel: int = 1,
) -> JSON:
    """Serve ``worker`` of ``board_id`` over MCP until the transport closes (stdin's end, or a
    signal for HTTP). Returns the board's end reason if its run ended meanwhile, else None."""
    async with open_bridge(
        store, board_id, worker, model=model, functions=functions, timeout=timeout, parallel=parallel
    ) as bridge:
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
