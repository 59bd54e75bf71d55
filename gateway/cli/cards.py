"""`hitl-gateway cards resend`: post a card again whose post failed for good or is uncertain."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.common import with_runtime
from gateway.settings import Settings


def add_parser(sub: Any) -> None:
    cards = sub.add_parser("cards", help="chat cards of an approval").add_subparsers(dest="action", required=True)
    resend = cards.add_parser(
        "resend",
        help="post the card again (after a post failed for good, or is 'uncertain': it may be in the chat already)",
    )
    resend.add_argument("id", help="the approval id")
    resend.add_argument("channel", help="the card's channel address, as listed under cards in approvals show")
    resend.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    sub.choices["cards"].set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.service.deliveries import ResendCard

    async def resend(deliveries: Any) -> int:
        await deliveries.resend(ResendCard(args.id, args.channel, "operator:cli", args.by))
        print(f"{args.id}: the card on {args.channel} is queued; a running gateway posts it")
        return 0

    return await with_runtime(settings, lambda rt: resend(rt.deliveries))
