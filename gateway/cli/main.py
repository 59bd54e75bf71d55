"""The `hitl-gateway` command: its parser, loading the config, and what each outcome exits with.

Exit codes: 0 done; 2 the user's to fix (bad config, a busy port, an unknown id, a decision that
is no longer possible...); 1 the gateway failed. A closed stdout (`... | head`) exits quietly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from gateway import __version__
from gateway.cli import approvals, cards, channels, delegations, init, jobs, remote, rules, serve
from gateway.cli import audit as audit_cli
from gateway.cli import events as events_cli
from gateway.cli import web as web_cli
from gateway.cli.common import dump, program, with_runtime
from gateway.cli.dev import DEV_SECRETS, dev_defaults
from gateway.config import Settings, config_path, effective_config, load_settings
from gateway.core.errors import ConfigError, GatewayError
from gateway.telemetry.logs import setup_logging

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]  # a subcommand's handler


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hitl-gateway", description="Human-in-the-loop approval gateway for AI agents")
    p.add_argument("--version", action="version", version=f"hitl-gateway {__version__}")
    _global_options(p)
    sub = p.add_subparsers(dest="command", required=True)
    srv = sub.add_parser("serve", help="run the gateway")
    srv.add_argument("--host")
    srv.add_argument("--port", type=int)
    sub.add_parser("migrate", help="apply database migrations and exit")
    sub.add_parser("check-config", help="print the effective config (secrets masked)")
    init.add_parser(sub)
    approvals.add_parser(sub)
    channels.add_parsers(sub)  # loads the channel plugins, which add their subcommands
    web_cli.register(sub)
    jobs.add_parser(sub)
    delegations.add_parser(sub)
    events_cli.add_parser(sub)
    cards.add_parser(sub)
    audit_cli.add_parser(sub)
    rules.add_parser(sub)
    from gateway.mcp.cli import add_parser as add_mcp

    add_mcp(sub)
    return p


def _global_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (default: $HITL_CONFIG or ./hitl-gateway.toml)")
    parser.add_argument("--dev", action="store_true", help="a dev secret, agent key and operator under ./var")
    parser.add_argument(
        "--url",
        help="act on the gateway at URL over HTTP (approvals, jobs, delegations, events; default: $HITL_URL), "
        "not on the store",
    )
    parser.add_argument("--operator-key", help="the operator key for --url (default: $HITL_OPERATOR_KEY)")


_VALUED = ("--config", "--url", "--operator-key")  # the global options that take a value


def hoist_globals(argv: Sequence[str]) -> list[str]:
    """Global options may also follow the subcommand, as people type them
    (`hitl-gateway serve --config F --dev`): move them to the front, where argparse wants them.
    Nothing after a `--` moves."""
    front: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for a in args:
        if a == "--":
            rest += [a, *args]
        elif a == "--dev" or a.startswith(tuple(f"{o}=" for o in _VALUED)):
            front.append(a)
        elif a in _VALUED:
            front += [a, next(args, "")]
        else:
            rest.append(a)
    return front + rest


def _load(args: argparse.Namespace) -> Settings:
    defaults, env = None, cast(Mapping[str, str], os.environ)
    if args.dev:
        # --dev is its own world: it reads only a file named by --config. A copy of the environment
        # (not os.environ itself) also keeps config_path from picking ./hitl-gateway.toml.
        env = {k: v for k, v in os.environ.items() if k != "HITL_CONFIG"}
        found = None if args.config else config_path(None, os.environ)
        if found is not None:  # said, never silent: its keys and store are not the dev ones
            print(f"hitl-gateway: --dev ignores {found} (run without --dev to use it)", file=sys.stderr)
        defaults, new = dev_defaults()
        for name, what in (("api_key", "dev API key (agent:dev)"), ("operator_key", "dev operator key (operator:dev)")):
            if name in new:
                print(f"{what}, kept in {DEV_SECRETS}: {new[name]}", file=sys.stderr)  # shown once
    overrides: dict[str, dict[str, Any]] = {}
    if args.command == "serve":
        if args.host:
            overrides.setdefault("server", {})["host"] = args.host
        if args.port is not None:
            overrides.setdefault("server", {})["port"] = args.port
    try:
        return load_settings(args.config, env, defaults=defaults, overrides=overrides)
    except ConfigError as exc:
        if args.dev or config_path(args.config, os.environ) is not None:
            raise
        hint = f"no config file found: run `{program()} init` to write one, or use --dev for a local trial"
        raise ConfigError(exc.key, f"{exc.problem}; {hint}") from None


def log_secrets(settings: Settings) -> list[str]:
    """Every configured secret, masked wherever it shows up in a log line: keys, the push key,
    the channels' tokens, and the webhooks' secrets (the previous ones of a rotation too)."""
    sec = settings.security
    secrets: list[str] = [*sec.secret_keys, *sec.keys, settings.webpush.private_key, *settings.events.secrets()]
    for channel in settings.channels.values():
        for key in channel.spec.secrets:
            value = getattr(channel.section, key)
            secrets.extend([value] if isinstance(value, str) else value)
    return secrets


def _logging(settings: Settings) -> None:
    """Every command logs through the redacting handler (libraries put tokens in messages)."""
    patterns: list[str] = []
    quiet: list[str] = []
    for channel in settings.channels.values():
        patterns.extend(channel.spec.secret_patterns)
        quiet.extend(channel.spec.quiet_loggers)
    setup_logging(settings.server.log_level, log_secrets(settings), patterns, quiet)


async def _migrate(settings: Settings) -> int:
    async def run(rt: Any) -> int:
        print(f"schema at version {await rt.maintenance.schema_version()}")
        return 0

    return await with_runtime(settings, run)


def _remote(args: argparse.Namespace) -> str | None:
    """With --url (or $HITL_URL): why this command cannot run remotely, else None; fills in the key."""
    args.url = args.url or os.environ.get("HITL_URL") or None
    args.operator_key = args.operator_key or os.environ.get("HITL_OPERATOR_KEY") or None
    if args.url is None:
        return None
    if not getattr(args, "remote", False):
        return f"--url works with `approvals`, `jobs`, `delegations` and `events` only, not `{args.command}`"
    if args.dev or args.config:
        return "--url acts on a server: --dev and --config are for the local store"
    if not args.operator_key:
        return "--url needs an operator key: --operator-key KEY or $HITL_OPERATOR_KEY"
    try:
        remote.check_url(args.url)
    except ValueError as exc:
        return str(exc)
    return None


def _run(args: argparse.Namespace) -> int:
    handler = getattr(args, "handler", None)
    refused = _remote(args)
    if refused:
        print(f"hitl-gateway: {refused}", file=sys.stderr)
        return 2
    if args.url and handler is not None:  # the server holds the config: none is read here
        return int(asyncio.run(handler(args, None)))
    if handler is not None and getattr(args, "needs_config", True) is False:
        return int(asyncio.run(handler(args, None)))
    settings = _load(args)
    if args.command == "check-config":
        dump(effective_config(settings))
        return 0
    _logging(settings)
    if args.command == "serve":
        return serve.serve(settings, dev_link=args.dev)
    if args.command == "migrate":
        return asyncio.run(_migrate(settings))
    if handler is not None:
        return int(asyncio.run(handler(args, settings)))
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = _parser()  # loads the channel plugins, which add their subcommands
    except ConfigError as exc:
        print(f"hitl-gateway: {exc.message}", file=sys.stderr)
        return 2
    args = parser.parse_args(hoist_globals(sys.argv[1:] if argv is None else argv))
    standalone = getattr(args, "standalone", None)
    try:
        if standalone is not None:  # agent-side commands (mcp, mcp-gate): they load their own settings
            return int(standalone(args))
        return _run(args)
    except (ConfigError, serve.CannotListen) as exc:
        print(f"hitl-gateway: {exc.message}", file=sys.stderr)
        return 2
    except GatewayError as exc:
        print(f"hitl-gateway: {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except remote.ServerRefused as exc:  # as the local errors: the user's to fix (4xx) exit 2
        print(f"hitl-gateway: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.status < 500 else 1
    except remote.ServerUnreachable as exc:
        print(f"hitl-gateway: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        _quiet_stdout()
        return 0


def _quiet_stdout() -> None:
    """The reader of stdout went away (`... | head`): point stdout at /dev/null, so that the
    interpreter's final flush does not print a second BrokenPipeError at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
