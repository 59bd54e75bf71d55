"""`hitl-gateway telegram set-webhook | poll`. Polling feeds the same handler as the webhook."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from telegram.error import TelegramError

from adapters.telegram.channel import ALLOWED_UPDATES, WEBHOOK_PATH, TelegramChannel

if TYPE_CHECKING:
    from gateway.config import Settings
    from gateway.runtime import Runtime

log = logging.getLogger("adapters.telegram")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    tg = sub.add_parser("telegram", help="Telegram bot set-up: set-webhook, or poll without a public URL")
    actions = tg.add_subparsers(dest="action", required=True)
    actions.add_parser("set-webhook", help="point Telegram at server.public_url + /webhooks/telegram")
    poll = actions.add_parser("poll", help="long-poll getUpdates (deletes the webhook) and deliver cards")
    poll.add_argument("--timeout", type=int, default=30, help="long-poll timeout in seconds")
    return tg


def webhook_url(settings: Settings) -> str:
    return settings.server.public_url.rstrip("/") + WEBHOOK_PATH


async def set_webhook(channel: TelegramChannel, settings: Settings) -> int:
    if not settings.telegram.webhook_secret:
        print("hitl-gateway: telegram.webhook_secret is not set (1-256 of A-Z a-z 0-9 _ -)", file=sys.stderr)
        return 2
    url = webhook_url(settings)
    if not url.startswith("https://"):
        print(f"warning: Telegram only calls https:// webhooks; {url} will be refused", file=sys.stderr)
    await channel.bot.set_webhook(
        url, secret_token=settings.telegram.webhook_secret, allowed_updates=list(ALLOWED_UPDATES)
    )
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


async def poll(channel: TelegramChannel, wait: int) -> int:
    await channel.bot.delete_webhook()
    print("polling Telegram for updates (Ctrl-C to stop)", flush=True)
    offset: int | None = None
    while True:
        try:
            offset = await poll_once(channel, offset, wait)
        except TelegramError as exc:
            log.warning("telegram: getUpdates failed (%s); retrying in 5 s", exc.message)
            await asyncio.sleep(5)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.runtime import Runtime

    if not settings.telegram.enabled:
        print("hitl-gateway: telegram.bot_token is not set", file=sys.stderr)
        return 2
    rt: Runtime = Runtime(settings)
    await rt.start(background=args.action == "poll")  # polling also delivers cards (the outbox loop)
    channel = rt.channels["telegram"]
    assert isinstance(channel, TelegramChannel)
    try:
        if args.action == "set-webhook":
            return await set_webhook(channel, settings)
        return await poll(channel, args.timeout)
    finally:
        await rt.stop()
