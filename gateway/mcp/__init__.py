"""MCP for the gateway (docs/mcp.md): `hitl-gateway mcp`, the approval tools for any MCP client,
and `hitl-gateway mcp-gate`, a gate in front of another MCP server.

Both are thin clients of the gateway's HTTP API and hold no state of their own. Importing this
package does not import the MCP SDK (the optional `mcp` extra): `gateway.mcp.cli` registers the
commands without it; `gateway.mcp.main`, `.server`, `.gate` and `.serve` need it.
"""

from gateway.mcp.cli import add_parser

__all__ = ["add_parser"]
