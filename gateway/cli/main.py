"""The `hitl-gateway` command: serve, migrate, check-config, approvals."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import secrets
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from gateway import __version__
from gateway.cli import web as web_cli
from gateway.cli.common import dump, with_runtime
from gateway.config import Settings, effective_config, load_settings
from gateway.core.errors import ConfigError, GatewayError
from gateway.core.models import Outcome, Status
from gateway.delivery.registry import installed
from gateway.delivery.spec import ChannelSpec
from gateway.delivery.spec import Command as ChannelCommand
from gateway.telemetry.logs import setup_logging

DEV_SECRETS = Path("var/dev-secrets.json")
CLI_OPERATOR = "operator:cli"  # who the CLI's decisions, cancels, retries and re-posts are recorded as
Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


def _write_secrets(path: Path, data: dict[str, str]) -> None:
    """Write the dev secrets readable by the owner only (a new file, renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def dev_defaults(path: Path = DEV_SECRETS) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """A dev secret, agent key and operator key kept under ./var; returns (defaults, the keys
    that are new, to print once). A file from before operators existed gets an operator key."""
    data: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    new: dict[str, str] = {}
    if "secret_key" not in data:
        data["secret_key"] = secrets.token_urlsafe(32)
    for name in ("api_key", "operator_key"):
        if name not in data:
            data[name] = new[name] = f"dev_{'op_' if name == 'operator_key' else ''}" + secrets.token_urlsafe(24)
    if new:
        _write_secrets(path, data)
    # Dev only: deciding by holding the resume token is on, for the README walk-through.
    security = {
        "secret_keys": [data["secret_key"]],
        "agents": {"dev": data["api_key"]},
        "operators": {"dev": data["operator_key"]},
        "token_decisions": True,
    }
    return {"security": security, "web": {"approvers": ["dev"]}}, new


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hitl-gateway", description="Human-in-the-loop approval gateway for AI agents")
    p.add_argument("--version", action="version", version=f"hitl-gateway {__version__}")
    p.add_argument("--config", help="TOML config file (default: $HITL_CONFIG or ./hitl-gateway.toml)")
    p.add_argument("--dev", action="store_true", help="generate a dev secret and API key under ./var if none set")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    sub.add_parser("migrate", help="apply database migrations and exit")
    sub.add_parser("check-config", help="print the effective config (secrets masked)")
    ap = sub.add_parser("approvals", help="list, show and decide approvals").add_subparsers(
        dest="action", required=True
    )
    ls = ap.add_parser("list")
    ls.add_argument("--status", choices=[s.value for s in Status])
    ls.add_argument("--run-id")
    ls.add_argument("--limit", type=int, default=50)
    show = ap.add_parser("show")
    show.add_argument("id")
    for verb in ("approve", "reject"):
        d = ap.add_parser(verb)
        d.add_argument("id")
        d.add_argument("--by", help=f"whom you act for (kept as on_behalf_of; the decision is {CLI_OPERATOR}'s)")
        d.add_argument("--comment")
    c = ap.add_parser("cancel")
    c.add_argument("id")
    c.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    c.add_argument("--reason")
    for spec in installed().values():
        _channel_commands(sub, spec)
    web_cli.register(sub)
    from gateway.cli.cards import add_parser as add_cards
    from gateway.cli.jobs import add_parser as add_jobs

    add_jobs(sub)
    add_cards(sub)
    from gateway.mcp.cli import add_parser as add_mcp

    add_mcp(sub)
    return p


def _channel_commands(sub: Any, spec: ChannelSpec) -> None:
    """A channel's own subcommands (`ChannelSpec.commands`): `hitl-gateway <kind> <name>`."""
    if not spec.commands:
        return
    actions = sub.add_parser(spec.kind, help=spec.summary).add_subparsers(dest="action", required=True)
    for command in spec.commands:
        parser = actions.add_parser(command.name, help=command.help)
        command.arguments(parser)
        parser.set_defaults(handler=functools.partial(_run_channel_command, spec, command))


async def _run_channel_command(
    spec: ChannelSpec, command: ChannelCommand, args: argparse.Namespace, settings: Settings
) -> int:
    from gateway.runtime import Runtime

    if spec.kind not in settings.enabled_channels():
        print(f"hitl-gateway: {spec.disabled_hint or f'the {spec.kind} channel is not enabled'}", file=sys.stderr)
        return 2
    rt = Runtime(settings)
    await rt.start(background=command.background)  # e.g. a poller also delivers cards (the outbox loop)
    try:
        return await command.run(args, rt.channels[spec.kind])
    finally:
        await rt.stop()


def _load(args: argparse.Namespace) -> Settings:
    defaults = None
    if args.dev:
        defaults, new = dev_defaults()
        for name, what in (("api_key", "dev API key (agent:dev)"), ("operator_key", "dev operator key (operator:dev)")):
            if name in new:
                print(f"{what}, kept in {DEV_SECRETS}: {new[name]}", file=sys.stderr)  # shown once
    settings = load_settings(args.config, defaults=defaults)
    if args.command == "serve" and (args.host or args.port is not None):
        from dataclasses import replace

        server = replace(
            settings.server,
            host=args.host or settings.server.host,
            port=settings.server.port if args.port is None else args.port,
        )
        settings = replace(settings, server=server)
    if args.dev and args.command == "serve":
        web_cli.print_dev_link(settings)
    return settings


def _logging(settings: Settings) -> None:
    """Every command logs through the redacting handler (libraries put tokens in messages)."""
    sec = settings.security
    secrets: list[str] = [*sec.secret_keys, *sec.keys]
    patterns: list[str] = []
    quiet: list[str] = []
    for channel in settings.channels.values():
        for key in channel.spec.secrets:
            value = getattr(channel.section, key)
            secrets.extend([value] if isinstance(value, str) else value)
        patterns.extend(channel.spec.secret_patterns)
        quiet.extend(channel.spec.quiet_loggers)
    setup_logging(settings.server.log_level, secrets, patterns, quiet)


def _serve(settings: Settings) -> int:
    from gateway.http import transport
    from gateway.http.app import create_app

    app = create_app(settings)
    app.on_startup.append(freeze_heap)  # after the runtime's own start-up (cleanup_ctx runs first)
    transport.run(
        app,
        settings,
        event_loop(),
        lambda: print(
            f"hitl-gateway {__version__} listening on http://{settings.server.host}:"
            f"{settings.server.port} (store: {settings.store.url})",
            flush=True,
        ),
    )
    return 0


async def freeze_heap(app: Any) -> None:
    """Put everything alive once the gateway has started (modules, classes, templates, the
    runtime) out of the cyclic collector's reach: a full collection then walks only what requests
    allocate. Under suspend load one ran about once a second and took ~40 ms, stalling the event
    loop: most of a suspend's p99 at c=64 (with the freeze ~1.5 ms; docs/performance.md)."""
    gc.collect()
    gc.freeze()


def event_loop() -> asyncio.AbstractEventLoop:
    """The serving loop: uvloop where it is installed (a dependency on Linux and macOS), which
    takes about a tenth off the CPU of a suspend over HTTP (docs/performance.md); asyncio's own
    loop elsewhere."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _approvals(args: argparse.Namespace, rt: Any) -> int:
    svc = rt.service
    if args.action == "list":
        status = Status(args.status) if args.status else None
        items = await rt.store.list_approvals(status=status, run_id=args.run_id, limit=args.limit)
        for a in items:
            print(f"{a.id}  {a.status.value:<16}  {a.run_id}/{a.step}  {a.title}")
        return 0
    if args.action == "show":
        approval = await svc.get(args.id)
        dump({**approval.to_api(), "events": [e.to_api() for e in await rt.store.list_events(approval.id)]})
        return 0
    if args.action == "cancel":
        dump((await svc.cancel(args.id, CLI_OPERATOR, args.reason, on_behalf_of=args.by)).to_api())
        return 0
    outcome = Outcome.APPROVE if args.action == "approve" else Outcome.REJECT
    approval = await svc.decide(
        args.id, outcome, CLI_OPERATOR, comment=args.comment, channel="cli", trusted=True, on_behalf_of=args.by
    )
    dump(approval.to_api())
    return 0


async def _migrate(settings: Settings) -> int:
    async def run(rt: Any) -> int:
        print(f"schema at version {await rt.store.schema_version()}")
        return 0

    return await with_runtime(settings, run)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = _parser()  # loads the channel plugins, which add their subcommands
    except ConfigError as exc:
        print(f"hitl-gateway: {exc.message}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    standalone = getattr(args, "standalone", None)
    if standalone is not None:  # agent-side commands (mcp, mcp-gate): they load their own settings
        return int(standalone(args))
    try:
        settings = _load(args)
        if args.command == "check-config":
            dump(effective_config(settings))
            return 0
        _logging(settings)
        if args.command == "serve":
            return _serve(settings)
        if args.command == "migrate":
            return asyncio.run(_migrate(settings))
        if args.command == "approvals":
            return asyncio.run(with_runtime(settings, lambda rt: _approvals(args, rt)))
        handler = getattr(args, "handler", None)
        if handler is not None:
            return int(asyncio.run(handler(args, settings)))
        return 2
    except ConfigError as exc:
        print(f"hitl-gateway: {exc.message}", file=sys.stderr)
        return 2
    except GatewayError as exc:
        print(f"hitl-gateway: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
