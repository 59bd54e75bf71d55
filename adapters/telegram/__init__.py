"""Telegram channel: cards with Approve/Reject buttons, signed callbacks, outcome sync.

The registry (`gateway.delivery.registry`) finds `SPEC`; `SPEC.create(ctx)` builds the channel.
"""

from adapters.telegram.spec import SPEC, TelegramSettings

__all__ = ["SPEC", "TelegramSettings"]
