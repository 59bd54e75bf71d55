"""A small real MCP server for the gate tests: it counts every call it gets in a file.

`python mcp_upstream.py COUNTS [--http PORT]`: stdio by default. Each call appends one JSON line
`{"tool", "args"}` to COUNTS when it starts (a slow tool's effect has begun by then).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

COUNTS = Path(sys.argv[1])
server: MCPServer[Any] = MCPServer("upstream")


def count(tool: str, args: dict[str, Any]) -> None:
    with COUNTS.open("a") as fh:
        fh.write(json.dumps({"tool": tool, "args": args}) + "\n")
        fh.flush()


@server.tool(description="Delete a file (gated in the tests)")
async def delete_file(path: str) -> dict[str, Any]:
    count("delete_file", {"path": path})
    return {"deleted": path}


@server.tool(description="Send a payment; `delay` seconds pass between its start and its answer")
async def send_payment(to: str, amount: int, delay: float = 0) -> dict[str, Any]:
    count("send_payment", {"to": to, "amount": amount, "delay": delay})
    await asyncio.sleep(delay)
    return {"paid": amount, "to": to, "receipt": f"rcpt-{to}-{amount}"}


@server.tool(name="pay[v2]", description="A payment whose name is no glob: '[v2]' is part of it")
async def pay_v2(to: str, amount: int) -> dict[str, Any]:
    count("pay[v2]", {"to": to, "amount": amount})
    return {"paid": amount, "to": to}


@server.tool(description="Read a file (never gated)")
async def read_file(path: str) -> str:
    count("read_file", {"path": path})
    return f"contents of {path}"


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[2] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]), streamable_http_path="/mcp")
    else:
        server.run()
