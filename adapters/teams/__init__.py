"""Microsoft Teams channel: Adaptive Cards with Universal Actions (`Action.Execute`), Bot
Framework tokens checked against the OpenID metadata's keys, cards updated on every outcome.

The registry (`gateway.delivery.registry`) finds `SPEC`; `SPEC.create(ctx)` builds the channel.
"""

from adapters.teams.spec import SPEC, TeamsSettings

__all__ = ["SPEC", "TeamsSettings"]
