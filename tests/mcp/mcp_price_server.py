"""A small MCP server for tests (stdio): a price list, counting its calls in $PRICE_SERVER_LOG
(or the file named by its first argument: the SDK starts stdio servers with a minimal environment)."""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PRICES = {"widget": 17, "gadget": 42}
server = MCPServer("prices")


def _count(item: str) -> None:
    path = os.environ.get("PRICE_SERVER_LOG") or (sys.argv[1] if len(sys.argv) > 1 else None)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(item + "\n")


@server.tool()
def lookup_price(item: str) -> dict[str, Any]:
    """The unit price of an item, in euros."""
    _count(item)
    if item not in PRICES:
        raise ToolError(f"no price for {item!r}")
    return {"item": item, "price_eur": PRICES[item]}


if __name__ == "__main__":
    server.run()
