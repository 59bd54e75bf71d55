"""`hitl-gateway mcp` and `hitl-gateway mcp-gate`: registration and entry points.

This module imports no MCP SDK: the core gateway runs without the optional `mcp` extra, and
these commands say in one line which extra to install (exit 2). Both commands run on the agent's
side: they read `[server] public_url`, `[mcp]` and `[mcp_gate]` and need none of the gateway's
secrets, so they load the config without the gateway's own checks.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import shlex
import sys
from typing import Any

from gateway.config import Settings, load_settings
from gateway.core.errors import ConfigError
from gateway.mcp.secret import gate_secret, state_file
from gateway.telemetry.logs import setup_logging

EXTRA_HINT = "hitl-gateway {command}: needs the 'mcp' extra: pip install ./sdk '.[mcp]' from the checkout"
_EXTRA = ("mcp", "uvicorn")  # what the extra `mcp` brings


def add_parser(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="an MCP server with the approval tools (stdio, or --http)")
    _common(mcp)
    mcp.set_defaults(standalone=run)
    gate = sub.add_parser("mcp-gate", help="wrap another MCP server: chosen tools need a human's approval")
    _common(gate)
    gate.add_argument("--upstream", nargs="+", metavar="CMD", help="the wrapped server: a command, or an http(s) URL")
    gate.add_argument("--upstream-header", action="append", default=[], metavar="NAME:VALUE")
    gate.add_argument("--require-approval", nargs="+", action="extend", default=[], metavar="GLOB")
    gate.add_argument("--wait-seconds", type=float, help="how long one call waits for a human (default 25)")
    gate.add_argument("upstream_command", nargs="*", metavar="-- CMD", help="the upstream command, after --")
    gate.set_defaults(standalone=run)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp (default: stdio)")
    p.add_argument("--gateway", metavar="URL", help="the gateway's base URL (default: server.public_url)")
    p.add_argument("--channel", action="append", default=[], help="where cards go when a caller names none")
    p.add_argument("--approver", action="append", default=[], help="who may decide (default: the channel's)")
    p.add_argument("--policy", help="the policy name for approvals that name none")


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config, validate=False)
        return _start(args, settings, gate=args.command == "mcp-gate")
    except ConfigError as exc:
        print(f"hitl-gateway: {exc.message}", file=sys.stderr)
        return 2


def _start(args: argparse.Namespace, settings: Settings, *, gate: bool) -> int:
    """Every start-up problem is one line and exit 2, found before the MCP SDK is imported."""
    name = "mcp-gate" if gate else "mcp"
    if any(importlib.util.find_spec(module) is None for module in _EXTRA):
        print(EXTRA_HINT.format(command=name), file=sys.stderr)
        return 2
    env = os.environ  # the entry point: the only place that reads the environment
    key = env.get("HITL_API_KEY") or None
    base = (args.gateway or settings.server.public_url).rstrip("/")
    try:
        listen = parse_listen(args.http) if args.http else None
        spec = gate_spec(args, settings, {k: v for k, v in env.items() if not k.startswith("HITL_")}) if gate else {}
        secret = gate_secret(settings.mcp_gate.secret, state_file(env)) if gate else None
        if listen is None and not key:
            raise ValueError(f"set HITL_API_KEY to the agent's key for the gateway at {base}")
    except ValueError as exc:
        print(f"hitl-gateway {name}: {exc}", file=sys.stderr)
        return 2
    kept = secret.key.decode() if secret is not None and secret.source != "process" else None
    setup_logging(settings.server.log_level, [s for s in (key, kept) if s])  # never in a log line
    if secret is not None and secret.source == "process":
        logging.getLogger("gateway.mcp.gate").warning(
            "mcp-gate: no [mcp_gate] secret and no state file to keep one in: this process uses its own, so a "
            "call retried after the gate restarts asks for a new approval"
        )
    from gateway.mcp import main as entry  # the MCP SDK, from here on

    try:
        if gate:
            return asyncio.run(entry.run_gate({**spec, "secret": secret.key if secret else b""}, base, key, listen))
        defaults = entry.Defaults(
            tuple(args.channel) or settings.mcp.channels,
            tuple(args.approver) or settings.mcp.approvers,
            args.policy or settings.mcp.policy,
        )
        return asyncio.run(entry.run_server(defaults, base, key, listen))
    except KeyboardInterrupt:
        return 130


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[v6]:PORT`) of `--http`; ValueError names the problem."""
    host, sep, port = value.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ValueError(f"--http: expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def gate_spec(args: argparse.Namespace, settings: Settings, env: dict[str, str]) -> dict[str, Any]:
    """The gate's settings: the command's options over `[mcp_gate]`; ValueError names a problem."""
    cfg = settings.mcp_gate
    upstream = list(args.upstream_command or args.upstream or cfg.upstream)
    if len(upstream) == 1 and not upstream[0].startswith(("http://", "https://")):
        upstream = shlex.split(upstream[0])  # one quoted string: "npx -y some-server /tmp"
    if not upstream:
        raise ValueError("name the wrapped server: --upstream CMD... (or after --), or [mcp_gate] upstream")
    patterns = tuple(args.require_approval) or cfg.require_approval
    if not patterns:
        raise ValueError("name the tools that need a human: --require-approval GLOB... or [mcp_gate] require_approval")
    headers = dict(cfg.upstream_headers)
    for item in args.upstream_header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--upstream-header: expected NAME:VALUE, got {item!r}")
        headers[name.strip()] = value.strip()
    wait = cfg.wait_seconds if args.wait_seconds is None else args.wait_seconds
    if not 0 <= wait <= 600:
        raise ValueError("--wait-seconds: must be between 0 and 600")
    return {
        "upstream": upstream,
        "headers": headers,
        "env": env,
        "require_approval": patterns,
        "channels": tuple(args.channel) or cfg.channels,
        "approvers": tuple(args.approver) or cfg.approvers,
        "policy": args.policy or cfg.policy,
        "wait_seconds": float(wait),
    }


__all__ = ["add_parser", "gate_spec", "parse_listen", "run"]
