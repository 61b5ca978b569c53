"""Model Context Protocol integration (the ``mcp`` extra: the official ``mcp`` SDK).

``slateboard mcp serve --board BOARD --worker NAME`` lets an external agent (Claude Desktop, an
IDE, another framework) work on a board as one of its workers, under the same contract, view
budget, kernel and log as an internal worker (``_server``, ``_bridge``). ``mcp_tools`` gives LLM
workers the tools of MCP servers, with every call and result kept in the log (``_tools``).
"""

from ._bridge import Bridge, BridgeError, ExternalWorker, Waiting
from ._server import DEFAULT_EXTERNAL_TIMEOUT, build_server, http_app, open_bridge, serve_board, tool_names
from ._tools import ServerSpec, mcp_tools, server_target

__all__ = [
    "DEFAULT_EXTERNAL_TIMEOUT",
    "Bridge",
    "BridgeError",
    "ExternalWorker",
    "ServerSpec",
    "Waiting",
    "build_server",
    "http_app",
    "mcp_tools",
    "open_bridge",
    "serve_board",
    "server_target",
    "tool_names",
]
