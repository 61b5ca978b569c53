"""Model Context Protocol integration (the ``mcp`` extra: the official ``mcp`` SDK).

``slateboard mcp serve --board BOARD --worker NAME`` lets an external agent (Claude Desktop, an
IDE, another framework) work on a board as one of its workers, under the same contract, view
budget, kernel and log as an internal worker (``_server``, ``_bridge``). ``mcp_tools`` gives LLM
workers the tools of MCP servers, with every call and result kept in the log (``_tools``).
"""

from ._server import serve_board
from ._tools import ServerSpec, mcp_tools

__all__ = [
    "ServerSpec",
    "mcp_tools",
    "serve_board",
]
