"""The Telegram channel's spec: its `[telegram]` section, ids, addresses and CLI commands.

Importing this module is cheap: python-telegram-bot is imported only when the channel is created
or a command runs.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.plugin import Channel, ChannelContext, ChannelSpec, Command, boolean, ids, integers, string

_SECRET_RE = re.compile(r"[A-Za-z0-9_-]{1,256}")
_CHAT_RE = re.compile(r"-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31}")


@dataclass(frozen=True, slots=True)
class TelegramSettings:
    bot_token: str = ""
    webhook_secret: str = ""
    base_url: str = "https://api.telegram.org/bot"
    approvers: tuple[int, ...] = ()
    # Where agents may send cards: chat ids or @channels, each open to every agent, or
    # "NAME:<chat>" to agent NAME only. Any other chat in a suspend is refused.
    chats: tuple[str, ...] = ()
    # After a post whose outcome is unknown (crash or read timeout mid-call): false = never post
    # twice (the card is `uncertain` until pressed); true = post again (a duplicate is possible).
    resend_uncertain: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.bot_token)


def _check(section: TelegramSettings) -> None:
    if section.webhook_secret and not _SECRET_RE.fullmatch(section.webhook_secret):
        raise ConfigError("telegram.webhook_secret", "1-256 characters of A-Z, a-z, 0-9, _ and -")
    if not section.base_url.startswith(("https://", "http://")):  # a typo would fail every post, later
        raise ConfigError("telegram.base_url", "an http(s) URL, like https://api.telegram.org/bot")


def chat_target(text: str) -> str:
    """A chat id ('-100123', canonical without leading zeros) or a public '@channelname'."""
    if not _CHAT_RE.fullmatch(text):
        raise ValueError("a Telegram chat id is digits with an optional '-', or '@channelname'")
    return text if text.startswith("@") else str(int(text))


def _create(ctx: ChannelContext) -> Channel:
    from adapters.telegram.channel import TelegramChannel

    return TelegramChannel(ctx)


async def _set_webhook(args: argparse.Namespace, channel: Channel) -> int:
    from adapters.telegram.cli import set_webhook

    return await set_webhook(args, channel)


def check_webhook(section: TelegramSettings, public_url: str) -> None:
    """`set-webhook`, before anything starts: Telegram calls only https:// webhooks, with a secret."""
    if not section.webhook_secret:
        raise ConfigError("telegram.webhook_secret", "is not set (1-256 of A-Z a-z 0-9 _ -)")
    if not public_url.startswith("https://"):
        raise ConfigError(
            "server.public_url",
            f"Telegram calls only https:// webhooks, not {public_url}; set an https:// public_url, "
            "or use `hitl-gateway telegram poll`",
        )


async def _poll(args: argparse.Namespace, channel: Channel) -> int:
    from adapters.telegram.cli import poll

    return await poll(args, channel)


def _poll_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=int, default=30, help="long-poll timeout in seconds")


SPEC = ChannelSpec(
    kind="telegram",
    summary="Telegram bot set-up: set-webhook, or poll without a public URL",
    settings=TelegramSettings,
    schema={
        "bot_token": string,
        "webhook_secret": string,
        "base_url": string,
        "approvers": integers,
        "chats": ids,
        "resend_uncertain": boolean,
    },
    identity=IdSyntax(r"[0-9]{1,20}", "a Telegram user id (digits)", lambda s: str(int(s))),
    target=chat_target,
    destinations=("chats",),
    create=_create,
    enabled=lambda section: section.enabled,
    check=_check,
    secrets=frozenset({"bot_token", "webhook_secret"}),
    secret_patterns=(r"\b\d{6,12}:[A-Za-z0-9_-]{30,}\b",),  # bot tokens: digits ':' 35 characters
    quiet_loggers=("telegram",),
    commands=(
        Command(
            "set-webhook",
            "point Telegram at server.public_url + /webhooks/telegram (https:// only)",
            _set_webhook,
            check=check_webhook,
        ),
        Command(
            "poll",
            "long-poll getUpdates (deletes the webhook) and deliver cards",
            _poll,
            _poll_arguments,
            background=True,
        ),
    ),
    disabled_hint="telegram.bot_token is not set",
    sample=(
        "# [telegram]                 # docs/telegram.md: cards with Approve/Reject buttons\n"
        '# bot_token = ""             # from @BotFather\n'
        '# webhook_secret = "{secret}"   # or `hitl-gateway telegram poll` without a public URL\n'
        "# approvers = [111]          # Telegram user ids\n"
        "# chats = [-1001234567890]   # where agents may send cards\n"
    ),
)

__all__ = ["SPEC", "TelegramSettings", "chat_target"]
