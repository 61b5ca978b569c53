"""Model Context Protocol integration (the ``mcp`` extra: the official ``mcp`` SDK).

``slateboard mcp serve --board BOARD --worker NAME`` lets an external agent (Claude Desktop, an
IDE, another framework) work on a board as one of its workers, under the same contract, view
budget, kernel and log as an internal worker (``_server``, ``_bridge``).
"""

from ._bridge import Bridge, BridgeError, ExternalWorker, Waiting
from ._server import DEFAULT_EXTERNAL_TIMEOUT, build_server, open_bridge, serve_board, tool_names

__all__ = [
    "DEFAULT_EXTERNAL_TIMEOUT",
    "Bridge",
    "BridgeError",
    "ExternalWorker",
    "Waiting",
    "build_server",
    "open_bridge",
    "serve_board",
    "tool_names",
]
