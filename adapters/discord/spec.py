"""The Discord channel's spec: its `[discord]` section, user ids and channel addresses.

Approvers are Discord user ids (snowflakes: `discord:<user id>`); a card goes to a text channel
(`discord:<channel id>`). Presses count only from the guilds in `guild_ids`: the interactions
endpoint is the application's, shared by every server it is installed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.plugin import Channel, ChannelContext, ChannelSpec, ids, string

SNOWFLAKE = r"[0-9]{15,21}"
_SNOWFLAKE_RE = re.compile(SNOWFLAKE, re.ASCII)
_KEY_RE = re.compile(r"[0-9a-fA-F]{64}", re.ASCII)
API_BASE = "https://discord.com/api/v10"


@dataclass(frozen=True, slots=True)
class DiscordSettings:
    bot_token: str = ""
    public_key: str = ""  # the application's Ed25519 public key, hex (General Information → Public Key)
    application_id: str = ""
    # The servers whose members may press; every press from elsewhere (or from a DM) is refused.
    guild_ids: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()  # user ids
    # Where agents may send cards: channel ids, each open to every agent, or "NAME:<id>" to agent NAME only.
    channels: tuple[str, ...] = ()
    base_url: str = API_BASE


def one_id(key: str, v: Any) -> str:
    """An id written as a number or a string (TOML has both)."""
    if isinstance(v, bool) or not isinstance(v, str | int):
        raise ConfigError(key, f"expected an id (a number or a string), got {type(v).__name__}")
    return str(v)


def _enabled(section: DiscordSettings) -> bool:
    return bool(section.bot_token)  # off while the bot token is empty


def _check(section: DiscordSettings) -> None:
    if not _enabled(section):
        return
    if not _KEY_RE.fullmatch(section.public_key):
        raise ConfigError("discord.public_key", "the application's public key: 64 hex characters (General Information)")
    if not _SNOWFLAKE_RE.fullmatch(section.application_id):
        raise ConfigError("discord.application_id", "the application id: digits (General Information)")
    if not section.guild_ids:
        raise ConfigError("discord.guild_ids", "required: the server ids whose members may press")
    for i, guild in enumerate(section.guild_ids):
        if not _SNOWFLAKE_RE.fullmatch(guild):
            raise ConfigError(f"discord.guild_ids[{i}]", "a server id is digits, like 1098765432109876543")
    if not section.base_url.startswith(("https://", "http://")):
        raise ConfigError("discord.base_url", "an http(s) URL, like https://discord.com/api/v10")


def channel_target(text: str) -> str:
    """A text channel's id (a snowflake: digits)."""
    if not _SNOWFLAKE_RE.fullmatch(text):
        raise ValueError("a Discord channel id is digits, like 1098765432109876543 (Copy Channel ID)")
    return text


def _create(ctx: ChannelContext) -> Channel:
    from adapters.discord.channel import DiscordChannel

    return DiscordChannel(ctx)


SPEC = ChannelSpec(
    kind="discord",
    summary="Discord app: embed cards with buttons, signed interactions",
    settings=DiscordSettings,
    schema={
        "bot_token": string,
        "public_key": string,
        "application_id": one_id,
        "guild_ids": ids,
        "approvers": ids,
        "channels": ids,
        "base_url": string,
    },
    identity=IdSyntax(SNOWFLAKE, "a Discord user id (digits, Copy User ID)"),
    target=channel_target,
    destinations=("channels",),
    create=_create,
    enabled=_enabled,
    check=_check,
    secrets=frozenset({"bot_token"}),
    # a bot token: the bot's id in base64 (kept: not secret), a timestamp and an HMAC
    secret_patterns=(r"\b([A-Za-z0-9_-]{23,28}\.)[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}",),
    disabled_hint="set discord.bot_token (docs/discord.md)",
    sample=(
        "# [discord]                  # docs/discord.md: cards with buttons in a server's channel\n"
        '# bot_token = ""             # Bot → Reset Token\n'
        '# public_key = ""            # General Information → Public Key (hex)\n'
        '# application_id = ""        # General Information → Application ID\n'
        '# guild_ids = ["1098765432109876543"]   # the servers whose members may press\n'
        '# approvers = ["1111111111111111111"]   # user ids\n'
        '# channels = ["1222222222222222222"]    # where agents may send cards\n'
    ),
)

__all__ = ["SPEC", "DiscordSettings", "channel_target"]
