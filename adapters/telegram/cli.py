"""`hitl-gateway telegram set-webhook | poll` (declared by the spec). Polling feeds the same
handler as the webhook. Telegram out of reach (the usual first-day failure, behind a proxy) is
one line and exit 1, never a traceback; a config that cannot work is one line and exit 2."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
from urllib.parse import urlsplit

from telegram.error import InvalidToken, TelegramError

from adapters.telegram.channel import ALLOWED_UPDATES, WEBHOOK_PATH, TelegramChannel
from adapters.telegram.parse import NotAnUpdate
from adapters.telegram.request import scrub
from adapters.telegram.spec import TelegramSettings, check_webhook
from gateway.core import jsontext
from gateway.plugin import Channel

log = logging.getLogger("adapters.telegram")
_TOKEN = re.compile(r"\b\d{6,12}:[A-Za-z0-9_-]{30,}\b")  # as the spec's secret_patterns


def webhook_url(channel: TelegramChannel) -> str:
    return channel.ctx.public_url + WEBHOOK_PATH


def _failed(what: str, exc: TelegramError, settings: TelegramSettings) -> int:
    """One line on stderr, the token masked (python-telegram-bot names it in some messages).
    A refused token is the config's to fix (2); a network failure is 1."""
    token = settings.bot_token
    message = _TOKEN.sub("[REDACTED]", exc.message.replace(token, "[REDACTED]") if token else exc.message)
    host = urlsplit(settings.base_url).netloc or settings.base_url
    hint = "check telegram.bot_token" if isinstance(exc, InvalidToken) else f"can this host reach {host}?"
    print(f"hitl-gateway: telegram {what} failed: {message} ({hint})", file=sys.stderr)
    return 2 if isinstance(exc, InvalidToken) else 1


async def set_webhook(args: argparse.Namespace, channel: Channel) -> int:
    assert isinstance(channel, TelegramChannel)
    check_webhook(channel.settings, channel.ctx.public_url)  # also checked before the start (spec)
    url = webhook_url(channel)
    try:
        await channel.bot.set_webhook(
            url, secret_token=channel.settings.webhook_secret, allowed_updates=list(ALLOWED_UPDATES)
        )
    except TelegramError as exc:
        return _failed("setWebhook", exc, channel.settings)
    print(f"webhook set: {url} (updates: {', '.join(ALLOWED_UPDATES)})")
    return 0


async def poll_once(channel: TelegramChannel, offset: int | None, wait: int) -> int | None:
    """One getUpdates round; each update goes through `TelegramUpdates.handle`. Returns the next offset."""
    updates = await channel.bot.get_updates(offset=offset, timeout=wait, allowed_updates=list(ALLOWED_UPDATES))
    for update in updates:
        data = update.to_dict()
        # As the webhook's 400s: skipped and confirmed (the next offset). Raised out of the loop, such an
        # update would stop the poller, and asked for again at its restart, stop it again.
        if not jsontext.storable(data):  # its text cannot be hashed or stored
            log.warning("telegram update %s: skipped: %s", update.update_id, jsontext.LoneSurrogate("it"))
        else:
            try:
                log.info("telegram update %s: %s", update.update_id, await channel.updates.handle(data))
            except NotAnUpdate as exc:  # a field we read is malformed: nothing was recorded
                log.warning("telegram update %s: skipped: not a Telegram update: %s", update.update_id, exc)
        offset = update.update_id + 1
    return offset


async def poll(args: argparse.Namespace, channel: Channel) -> int:
    assert isinstance(channel, TelegramChannel)
    try:  # the first call says whether Telegram can be reached at all: if not, one line, not a retry loop
        await channel.bot.delete_webhook()
    except TelegramError as exc:
        return _failed("deleteWebhook", exc, channel.settings)
    print("polling Telegram for updates (Ctrl-C to stop)", flush=True)
    offset: int | None = None
    while True:
        try:
            offset = await poll_once(channel, offset, args.timeout)
        except TelegramError as exc:
            why = scrub(exc.message, f"{channel.bot.base_url}/getUpdates")  # an error answer's body may echo the URL
            log.warning("telegram: getUpdates failed (%s); retrying in 5 s", why)
            await asyncio.sleep(5)
