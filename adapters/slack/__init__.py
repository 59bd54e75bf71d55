"""Slack channel: Block Kit cards, signed interactivity, reject-with-reason modal, outcome sync.

`gateway.channels.load_channel("slack", runtime)` imports this package and calls `create_channel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.slack.channel import SlackChannel

if TYPE_CHECKING:
    from gateway.runtime import Runtime

__all__ = ["SlackChannel", "create_channel"]


def create_channel(runtime: Runtime) -> SlackChannel:
    return SlackChannel(runtime)
