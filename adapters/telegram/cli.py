"""`hitl-gateway telegram set-webhook | poll` (declared by the spec). Polling feeds the same
handler as the webhook."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from telegram.error import TelegramError

from adapters.telegram.channel import ALLOWED_UPDATES, WEBHOOK_PATH, TelegramChannel
from gateway.plugin import Channel

log = logging.getLogger("adapters.telegram")


def webhook_url(channel: TelegramChannel) -> str:
    return channel.ctx.public_url + WEBHOOK_PATH


async def set_webhook(args: argparse.Namespace, channel: Channel) -> int:
    assert isinstance(channel, TelegramChannel)
    secret = channel.settings.webhook_secret
    if not secret:
        print("hitl-gateway: telegram.webhook_secret is not set (1-256 of A-Z a-z 0-9 _ -)", file=sys.stderr)
        return 2
    url = webhook_url(channel)
    if not url.startswith("https://"):
        print(f"warning: Telegram only calls https:// webhooks; {url} will be refused", file=sys.stderr)
    await channel.bot.set_webhook(url, secret_token=secret, allowed_updates=list(ALLOWED_UPDATES))
    print(f"webhook set: {url} (updates: {', '.join(ALLOWED_UPDATES)})")
    return 0


async def poll_once(channel: TelegramChannel, offset: int | None, wait: int) -> int | None:
    """One getUpdates round; each update goes through `TelegramUpdates.handle`. Returns the next offset."""
    updates = await channel.bot.get_updates(offset=offset, timeout=wait, allowed_updates=list(ALLOWED_UPDATES))
    for update in updates:
        outcome = await channel.updates.handle(update)
        log.info("telegram update %s: %s", update.update_id, outcome)
        offset = update.update_id + 1
    return offset


async def poll(args: argparse.Namespace, channel: Channel) -> int:
    assert isinstance(channel, TelegramChannel)
    await channel.bot.delete_webhook()
    print("polling Telegram for updates (Ctrl-C to stop)", flush=True)
    offset: int | None = None
    while True:
        try:
            offset = await poll_once(channel, offset, args.timeout)
        except TelegramError as exc:
            log.warning("telegram: getUpdates failed (%s); retrying in 5 s", exc.message)
            await asyncio.sleep(5)
