"""A channel's own subcommands (`ChannelSpec.commands`): `hitl-gateway <kind> <command>`."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from gateway.delivery.registry import installed
from gateway.delivery.spec import ChannelSpec
from gateway.delivery.spec import Command as ChannelCommand
from gateway.settings import Settings


def add_parsers(sub: Any) -> None:
    for spec in installed().values():
        _channel_commands(sub, spec)


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
    command.check(settings.channels[spec.kind].section, settings.server.public_url)  # before anything starts
    rt = Runtime(settings)
    await rt.start(background=command.background)  # e.g. a poller also delivers cards (the outbox loop)
    try:
        return await command.run(args, rt.channels[spec.kind])
    finally:
        await rt.stop()
