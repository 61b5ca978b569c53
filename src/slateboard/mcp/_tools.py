"""MCP servers' tools for LLM workers.

``mcp_tools(*servers)`` connects to MCP servers (a stdio command line, a ``{"command", "args",
"env"}`` mapping, or a streamable-HTTP URL) with the official SDK's client, and yields their tools
as slateboard ``Tool`` objects for an LLM worker::

    async with mcp_tools("python weather_server.py", "http://127.0.0.1:9000/mcp") as tools:
        await Runner(store, board, tools={"researcher": tools}).run()

The sessions stay open for the block. A tool call goes to its server; an error result (or a lost
connection) comes back to the model as a failed call, never as an exception out of the worker.
Every call's arguments and the text the model got back are in the proposal's record
(``meta.tool_log``), so the log holds every input that entered the board through a tool, and
replay (which never runs workers) never calls a server again.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..workers.tools import Tool

__all__ = ["ServerSpec", "mcp_tools", "server_target"]

ServerSpec = str | Mapping[str, Any]
"""An MCP server: ``"http(s)://host/mcp"``, a command line (``"python server.py --flag"``), or
``{"command": ..., "args": [...], "env": {...}}`` / ``{"url": ...}``."""


def server_target(spec: ServerSpec) -> Any:
    """What ``mcp.Client`` connects to for ``spec`` (a URL string or ``StdioServerParameters``)."""
    from mcp import StdioServerParameters

    if isinstance(spec, Mapping):
        if "url" in spec:
            return str(spec["url"])
        if "command" not in spec:
            raise InvalidInput(f"an MCP server mapping needs 'command' or 'url', got {sorted(spec)}")
        env = spec.get("env")
        return StdioServerParameters(
            command=str(spec["command"]),
            args=[str(a) for a in spec.get("args", [])],
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else None,
        )
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        return text
    parts = shlex.split(text)
    if not parts:
        raise InvalidInput("an empty MCP server command")
    return StdioServerParameters(command=parts[0], args=parts[1:])


def _text_of(result: Any) -> str:
    return "\n".join(str(getattr(c, "text", "")) for c in result.content if getattr(c, "type", "") == "text")


def _caller(client: Any, name: str) -> Callable[..., Awaitable[JSON]]:
    async def call(**args: Any) -> JSON:
        result = await client.call_tool(name, args)
        if result.is_error:
            # Tool.call turns this into a failed call whose text the model reads
            raise RuntimeError(_text_of(result) or f"tool {name} failed")
        structured = result.structured_content
        if structured is not None:
            return structured
        return _text_of(result)

    call.__name__ = name
    return call


@contextlib.asynccontextmanager
async def mcp_tools(*servers: ServerSpec, prefix: bool = False, untrusted: bool = False) -> AsyncIterator[list[Tool]]:
    """Connect to ``servers`` and yield their tools (see the module docstring). With ``prefix``
    each tool is named ``SERVERINDEX_NAME`` so equally named tools of two servers stay apart;
    otherwise a duplicate name raises ValueError. ``untrusted``: every tool of these servers
    puts its output into the board's quarantine region instead of the calling model's prompt
    (``slateboard.workers.tools``)."""
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        tools: list[Tool] = []
        for i, spec in enumerate(servers):
            client = await stack.enter_async_context(Client(server_target(spec)))
            for t in (await client.list_tools()).tools:
                name = f"s{i}_{t.name}" if prefix else t.name
                if any(existing.name == name for existing in tools):
                    raise InvalidInput(f"two MCP servers offer a tool {name!r}: pass prefix=True")
                tools.append(
                    Tool(
                        name,
                        _caller(client, t.name),
                        description=t.description or "",
                        parameters=t.input_schema,
                        untrusted=untrusted,
                    )
                )
        yield tools
