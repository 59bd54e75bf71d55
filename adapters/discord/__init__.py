"""Discord channel: embed cards with buttons, Ed25519-signed interactions, modals, outcome sync.

The registry (`gateway.delivery.registry`) finds `SPEC`; `SPEC.create(ctx)` builds the channel.
"""

from adapters.discord.spec import SPEC, DiscordSettings

__all__ = ["SPEC", "DiscordSettings"]
