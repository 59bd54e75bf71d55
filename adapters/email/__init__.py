"""E-mail channel: a card per addressee with one-time signed links to a confirmation page.

The registry (`gateway.delivery.registry`) finds `SPEC`; `SPEC.create(ctx)` builds the channel.
docs/channels.md walks through this adapter as the example of a channel plugin.
"""

from adapters.email.spec import SPEC, EmailSettings

__all__ = ["SPEC", "EmailSettings"]
