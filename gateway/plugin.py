"""The one module a channel plugin imports from the gateway (besides `gateway.core`).

A plugin (the built-in ones under `adapters/`, or a third-party package: docs/channels.md)
declares a `ChannelSpec`, is given a `ChannelContext`, implements `Channel` (subclass
`ChannelBase`), and turns a person's press into a `Press` for `ctx.inbound`. Everything it may
use is re-exported here, so that the modules behind it can move without breaking a plugin, and an
import contract (pyproject.toml) keeps plugins off the store, the runtime and the service.
"""

from __future__ import annotations

from gateway.core.channels import (
    INFO_ONLY,
    Attempt,
    CardVerb,
    Channel,
    ChannelBase,
    DeliveryError,
    OutgoingCard,
    arg_text,
    decider_text,
    fresh_timestamp,
    parse_address,
    web_card_ref,
)
from gateway.core.deadlines import business_deadline, deadline_beside, shown_deadline
from gateway.delivery.spec import ChannelContext, ChannelSpec, Command
from gateway.http.middleware import error_response
from gateway.http.web import argsform
from gateway.service.presses import (
    REASON_PURPOSE,
    REJECT_PURPOSE,
    Inbound,
    Press,
    PressOutcome,
    PressResult,
    Reply,
    already_text,
)
from gateway.settings.coerce import boolean, duration, ids, integer, integers, string, strings

__all__ = [
    "INFO_ONLY",
    "REASON_PURPOSE",
    "REJECT_PURPOSE",
    "Attempt",
    "CardVerb",
    "Channel",
    "ChannelBase",
    "ChannelContext",
    "ChannelSpec",
    "Command",
    "DeliveryError",
    "Inbound",
    "OutgoingCard",
    "Press",
    "PressOutcome",
    "PressResult",
    "Reply",
    "already_text",
    "arg_text",
    "argsform",
    "boolean",
    "business_deadline",
    "deadline_beside",
    "decider_text",
    "duration",
    "error_response",
    "fresh_timestamp",
    "ids",
    "integer",
    "integers",
    "parse_address",
    "shown_deadline",
    "string",
    "strings",
    "web_card_ref",
]
