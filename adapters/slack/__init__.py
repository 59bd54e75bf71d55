"""Slack channel: Block Kit cards, signed interactivity, reject-with-reason modal, outcome sync.

The registry (`gateway.delivery.registry`) finds `SPEC`; `SPEC.create(ctx)` builds the channel.
"""

from adapters.slack.spec import SPEC, SlackSettings

__all__ = ["SPEC", "SlackSettings"]
