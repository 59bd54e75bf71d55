"""`[mcp]` (`hitl-gateway mcp`) and `[mcp_gate]` (`hitl-gateway mcp-gate`): the agent-side commands."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.settings.coerce import Coerce, integer, string, strings, table


@dataclass(frozen=True, slots=True)
class McpSettings:
    """`hitl-gateway mcp` (docs/mcp.md): where cards go when a caller names none (Claude Code's
    permission prompt never does)."""

    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""


@dataclass(frozen=True, slots=True)
class McpGateSettings:
    """`hitl-gateway mcp-gate` (docs/mcp.md): the wrapped MCP server and the tools that need a human."""

    upstream: tuple[str, ...] = ()  # a command and its arguments, or one http(s):// URL
    upstream_headers: Mapping[str, str] = field(default_factory=dict)  # for an HTTP upstream
    require_approval: tuple[str, ...] = ()  # tool-name globs (fnmatch)
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""
    wait_seconds: int = 25
    # The key of the MAC that names the gate's approvals and runs (or HITL_MCP_GATE_SECRET):
    # the agent must not be able to derive them, or it could post the gate's approval itself.
    secret: str = ""


MCP_KEYS: dict[str, Coerce] = {"channels": strings, "approvers": strings, "policy": string}
MCP_GATE_KEYS: dict[str, Coerce] = {
    "upstream": strings,
    "upstream_headers": table,
    "require_approval": strings,
    "channels": strings,
    "approvers": strings,
    "policy": string,
    "wait_seconds": integer,
    "secret": string,
}

__all__ = ["MCP_GATE_KEYS", "MCP_KEYS", "McpGateSettings", "McpSettings"]
