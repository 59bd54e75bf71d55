"""The Slack channel's spec: its `[slack]` section, member ids and channel addresses.

Importing this module is cheap: slack_sdk is imported only when the channel is created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.config import string, strings
from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.delivery.spec import ChannelContext, ChannelSpec

if TYPE_CHECKING:
    from gateway.delivery.channels import Channel

_CHANNEL_RE = re.compile(r"[A-Za-z0-9]{2,32}", re.ASCII)


@dataclass(frozen=True, slots=True)
class SlackSettings:
    bot_token: str = ""
    signing_secret: str = ""
    base_url: str = "https://slack.com/api/"
    approvers: tuple[str, ...] = ()


def _enabled(section: SlackSettings) -> bool:
    return bool(section.bot_token)  # off while the bot token is empty


def _check(section: SlackSettings) -> None:
    if _enabled(section) and not section.signing_secret:
        raise ConfigError("slack.signing_secret", "required when slack.bot_token is set")


def channel_target(text: str) -> str:
    """A conversation id ('C0123ABCD'), in Slack's upper case."""
    if not _CHANNEL_RE.fullmatch(text):
        raise ValueError("a Slack channel id is 2-32 letters and digits, like C0123ABCD")
    return text.upper()


def _create(ctx: ChannelContext) -> Channel:
    from adapters.slack.channel import SlackChannel

    return SlackChannel(ctx)


SPEC = ChannelSpec(
    kind="slack",
    summary="Slack app: Block Kit cards, signed interactivity",
    settings=SlackSettings,
    schema={"bot_token": string, "signing_secret": string, "base_url": string, "approvers": strings},
    # member ids: U… (or W… on Enterprise Grid), upper case
    identity=IdSyntax(r"[UWuw][A-Za-z0-9]{1,31}", "a Slack member id like U012AB3CD", str.upper),
    target=channel_target,
    create=_create,
    enabled=_enabled,
    check=_check,
    secrets=frozenset({"bot_token", "signing_secret"}),
    secret_patterns=(r"(?i)(xox[abpr]-)[A-Za-z0-9-]+",),  # bot and user tokens keep their prefix
    quiet_loggers=("slack_sdk",),
    sample=(
        "# [slack]                    # docs/slack.md: cards with buttons; the app manifest is in deploy/\n"
        '# bot_token = ""             # xoxb-...\n'
        '# signing_secret = ""\n'
        '# approvers = ["U111"]       # member ids\n'
    ),
)

__all__ = ["SPEC", "SlackSettings", "channel_target"]
