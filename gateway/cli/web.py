"""`hitl-gateway web login-link NAME` and `hitl-gateway web hash-password`."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

from gateway.cli import address
from gateway.core.clock import SystemClock
from gateway.core.durations import format_duration
from gateway.core.tokens import TokenSigner
from gateway.settings import Settings


def register(sub: Any) -> None:
    """Add the `web` subcommands to the CLI's subparsers."""
    web = sub.add_parser("web", help="web inbox users: one-time sign-in links, password hashes")
    actions = web.add_subparsers(dest="action", required=True)
    link = actions.add_parser(
        "login-link",
        help="print a one-time sign-in link for a [web] user, to the gateway serving this store here (docs/web.md)",
    )
    link.add_argument("name")
    link.set_defaults(handler=_login_link)
    hashp = actions.add_parser("hash-password", help="read a password (stdin or prompt), print its scrypt hash")
    hashp.set_defaults(handler=_hash_password, needs_config=False)


def print_dev_link(settings: Settings) -> None:
    """`serve --dev`: a one-time link for the built-in `dev` web approver, on the terminal only."""
    if "dev" not in settings.web.approvers:
        return
    from gateway.http.web.auth import login_link

    link = login_link(settings, TokenSigner(settings.security.secret_keys), "dev", SystemClock().now())
    ttl = format_duration(settings.web.login_link_max_age)
    print(f"web inbox: sign in as dev (once, within {ttl}): {link}", file=sys.stderr, flush=True)


async def _login_link(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.http.web.auth import login_link

    signer = TokenSigner(settings.security.secret_keys)
    served = address.at(settings, address.running_url(settings, os.environ))  # follows `serve --port`
    print(login_link(served, signer, args.name, SystemClock().now()))
    return 0


async def _hash_password(args: argparse.Namespace, settings: Settings | None) -> int:
    from gateway.http.web.auth import hash_password

    password = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if len(password) < 8:
        print("hitl-gateway: a password needs at least 8 characters", file=sys.stderr)
        return 2
    print(hash_password(password))
    return 0
