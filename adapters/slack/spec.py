"""The Slack channel's spec: its `[slack]` section, member ids and channel addresses.

Importing this module is cheap: slack_sdk is imported only when the channel is created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.plugin import Channel, ChannelContext, ChannelSpec, string, strings

_CHANNEL_RE = re.compile(r"[A-Za-z0-9]{2,32}", re.ASCII)
_TEAM_RE = re.compile(r"[Tt][A-Za-z0-9]{1,31}", re.ASCII)


@dataclass(frozen=True, slots=True)
class SlackSettings:
    bot_token: str = ""
    signing_secret: str = ""
    base_url: str = "https://slack.com/api/"
    approvers: tuple[str, ...] = ()
    # Where agents may send cards: conversation ids, each open to every agent, or "NAME:C…" to
    # agent NAME only. Any other channel in a suspend is refused.
    channels: tuple[str, ...] = ()
    app_token: str = ""  # xapp-…: interactions over Socket Mode instead of the public webhook
    # The workspaces whose members may press (team ids, T…); empty: the one auth.test reports at start.
    team_ids: tuple[str, ...] = ()


def _enabled(section: SlackSettings) -> bool:
    return bool(section.bot_token)  # off while the bot token is empty


def _check(section: SlackSettings) -> None:
    if section.app_token and not section.app_token.startswith("xapp-"):
        raise ConfigError(
            "slack.app_token", "an app-level token starts with 'xapp-' (Basic Information → App-Level Tokens)"
        )
    if _enabled(section) and not section.signing_secret and not section.app_token:
        raise ConfigError("slack.signing_secret", "required when slack.bot_token is set (or set slack.app_token)")
    for i, team in enumerate(section.team_ids):
        if not _TEAM_RE.fullmatch(team):
            raise ConfigError(
                f"slack.team_ids[{i}]", "a Slack team id is T followed by letters and digits, like T0123ABCD"
            )


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
    schema={
        "bot_token": string,
        "signing_secret": string,
        "base_url": string,
        "approvers": strings,
        "channels": strings,
        "app_token": string,
        "team_ids": strings,
    },
    # member ids: U… (or W… on Enterprise Grid), upper case
    identity=IdSyntax(r"[UWuw][A-Za-z0-9]{1,31}", "a Slack member id like U012AB3CD", str.upper),
    target=channel_target,
    destinations=("channels",),
    create=_create,
    enabled=_enabled,
    check=_check,
    secrets=frozenset({"bot_token", "signing_secret", "app_token"}),
    # bot, user and app-level tokens keep their prefix
    secret_patterns=(r"(?i)(xox[abpr]-)[A-Za-z0-9-]+", r"(?i)(xapp-)[A-Za-z0-9-]+"),
    quiet_loggers=("slack_sdk",),
    sample=(
        "# [slack]                    # docs/slack.md: cards with buttons; the app manifest is in deploy/\n"
        '# bot_token = ""             # xoxb-...\n'
        '# signing_secret = ""\n'
        '# app_token = ""             # xapp-...: Socket Mode, no public URL needed (then no signing_secret)\n'
        '# approvers = ["U111"]       # member ids\n'
        '# channels = ["C0123ABCD"]   # where agents may send cards\n'
    ),
)

__all__ = ["SPEC", "SlackSettings", "channel_target"]
