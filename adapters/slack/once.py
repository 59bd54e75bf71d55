"""A card is never posted twice, even when a `chat.postMessage` outcome is unknown.

Slack has no idempotency key for `chat.postMessage`. If the process dies (or the connection
drops) after Slack posted the card but before the outbox recorded it, a blind retry would post
a second card. The outbox writes a durable marker before every post and hands the channel the
earlier attempts; a post with earlier attempts first looks the card up by its message metadata
(`hitl_card` + `approval_id`, via `conversations.history`) and adopts it instead of posting again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from gateway.plugin import DeliveryError

log = logging.getLogger("adapters.slack")
CARD_EVENT = "hitl_card"
PAGES = 5
SLACK_SKEW_SECONDS = 120

Call = Callable[..., Awaitable[dict[str, Any]]]


def card_metadata(approval_id: str) -> dict[str, Any]:
    return {"event_type": CARD_EVENT, "event_payload": {"approval_id": approval_id}}


def match_card(messages: Iterable[Mapping[str, Any]], approval_id: str) -> str | None:
    """The `ts` of our card for this approval among `messages` (pure)."""
    for msg in messages:
        meta = msg.get("metadata")
        if not isinstance(meta, dict) or meta.get("event_type") != CARD_EVENT:
            continue
        payload = meta.get("event_payload")
        if isinstance(payload, dict) and payload.get("approval_id") == approval_id and msg.get("ts"):
            return str(msg["ts"])
    return None


async def find_posted(call: Call, channel_id: str, approval_id: str, since: datetime) -> str | None:
    """Look for the card in the channel's history since `since`; None if it is not there.

    Without the `channels:history` scope the lookup is impossible: that is logged and treated
    as 'not posted' (the rare crash-mid-post case may then post twice; see docs/slack.md).
    """
    cursor = ""
    for _ in range(PAGES):
        params: dict[str, Any] = {
            "channel": channel_id,
            "oldest": f"{since.timestamp() - SLACK_SKEW_SECONDS:.6f}",
            "include_all_metadata": "true",
            "limit": 200,
        }
        if cursor:
            params["cursor"] = cursor
        try:
            data = await call("conversations.history", http_verb="GET", params=params)
        except DeliveryError as exc:
            if exc.transient or "missing_scope" not in str(exc):
                raise
            log.warning("slack: cannot check for an earlier card (add the channels:history scope)")
            return None
        messages = data.get("messages")
        ts = match_card(messages if isinstance(messages, list) else [], approval_id)
        if ts is not None:
            return ts
        meta = data.get("response_metadata")
        cursor = meta.get("next_cursor", "") if isinstance(meta, dict) else ""
        if not data.get("has_more") or not cursor:
            return None
    return None
