"""The Channel protocol, what the outbox hands a channel, addresses, and the built-in web channel.

Pure (no I/O, no store): the application layer (gateway.service) and the plugin facade
(gateway.plugin) name them without importing the delivery machinery. A channel is a plugin (see
`gateway.delivery.spec` and docs/channels.md): `gateway` never imports one statically. The outbox
owns a delivery end to end; a channel only turns an `OutgoingCard` into platform calls and
returns a reference, or raises a classified `DeliveryError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from aiohttp import web

from gateway.core.errors import UnknownChannel
from gateway.core.identity import WEB
from gateway.core.models import Approval, Decision


class CardVerb(StrEnum):
    """What a card's button asks for, as the chat adapters spell it in a button's id."""

    APPROVE = "approve"
    REJECT = "reject"
    REASON = "reason"  # reject, with a form that asks why
    EDIT = "edit"
    EXTEND = "extend"
    GRANT = "grant"  # approve with a standing grant: `hitl:grant.<offer>.<round tag>:<ref>`


class DeliveryError(Exception):
    """A channel could not deliver. `transient` ones are retried (after `retry_after` if the
    server said so); the others are terminal and recorded.

    `unsent`: the platform certainly did not act (it answered with an error, or the connection
    was never made), so a retry cannot duplicate anything. `uncertain`: it may have acted (a
    read timeout, a dropped connection); a post in that state is recorded as `uncertain` and
    sent again only by a channel whose `resend_unknown` is true."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        retry_after: float | None = None,
        unsent: bool = False,
        uncertain: bool = False,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after
        self.unsent = unsent
        self.uncertain = uncertain


@dataclass(frozen=True, slots=True)
class Attempt:
    """An earlier try at posting this card. `unsent`: the platform certainly did not act on it;
    otherwise nobody knows (the process died mid-call, or a read timed out)."""

    at: datetime
    unsent: bool = False


@dataclass(frozen=True, slots=True)
class OutgoingCard:
    """One delivery: the approval as it is now, where it goes, and the card's reference once
    posted (None for a post, and for a reminder whose card is unknown)."""

    address: str  # e.g. 'web' or '<kind>:<target>'
    target: str
    approval: Approval
    now: datetime
    ref: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # a reminder's number and escalations


class Channel(Protocol):
    """What the outbox and the web server need from a channel.

    `resend_unknown`: whether a post may be sent again after an attempt whose outcome nobody
    knows (a platform with an idempotency key or a lookup may; one that would show the card twice
    should not). `posts_in_flight`: how many posts the outbox runs at once on this channel (None:
    no limit); a post holds its durable attempt marker only while it is really being sent."""

    kind: str

    @property
    def resend_unknown(self) -> bool: ...

    @property
    def posts_in_flight(self) -> int | None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        """Post the card; return its reference (e.g. '<chat_id>:<message_id>'). `attempts` are
        the earlier tries (oldest first), for a channel that can look its card up."""
        ...

    async def update_card(self, card: OutgoingCard) -> None:
        """Re-render the card at `card.ref` from the approval's state (no live buttons once decided)."""
        ...

    async def send_reminder(self, card: OutgoingCard) -> None: ...

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        """The HTTP routes (webhooks, pages) this channel serves."""
        ...


def fresh_timestamp(value: str | None, now: float, window: int) -> bool:
    """A signed request's timestamp header: a plain decimal number of seconds (no sign, spaces,
    decimals or huge values) within `window` seconds of `now`; anything else is not fresh."""
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 12:
        return False
    return abs(now - int(value)) <= window


def arg_text(value: Any) -> str:
    """One argument's value as a card shows it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def decider_text(d: Decision, own_kind: str, escape: Callable[[str], str], mention: Callable[[str], str]) -> str:
    """Who decided, on a card of `own_kind`: the person (`[people]`); else, from another
    platform, its display name with its kind; else `mention(decided_by)`. Always escaped: a
    name is user input."""
    if d.person:
        return escape(d.person)
    kind = d.decided_by.partition(":")[0]
    if d.name and kind != own_kind:
        return f"{escape(d.name)} ({escape(kind)})"
    return mention(d.decided_by)


def parse_address(address: str) -> tuple[str, str]:
    """'kind:target' -> ('kind', 'target'); 'web' -> ('web', '')."""
    kind, _, target = address.partition(":")
    return kind, target


Targets = Mapping[str, Callable[[str], str]]  # kind -> canonical target, or ValueError(why)


def check_address(address: Any, targets: Targets, enabled: frozenset[str], field: str = "channels") -> str:
    """A channel address in canonical form, or UnknownChannel naming `field`. `targets` holds
    every installed channel kind's target syntax (besides the web)."""
    if address == WEB:  # the common case, first
        return WEB
    if not isinstance(address, str) or not address:
        raise UnknownChannel(f"{field}: a channel is 'web' or a string '<kind>:<target>' (kinds: {_kinds(targets)})")
    kind, target = parse_address(address)
    if kind == WEB:
        raise UnknownChannel(f"{field}: the web channel takes no target, write 'web'", channel=address)
    check = targets.get(kind)
    if check is None:
        raise UnknownChannel(f"{field}: unknown channel {address!r} (kinds: {_kinds(targets)})", channel=address)
    if kind not in enabled:
        raise UnknownChannel(f"{field}: channel {kind!r} is not enabled (see the [{kind}] settings)", channel=address)
    if not target:
        raise UnknownChannel(f"{field}: {kind!r} needs a target, like '{kind}:<id>'", channel=address)
    try:
        return f"{kind}:{check(target)}"
    except ValueError as exc:
        raise UnknownChannel(f"{field}: {address!r}: {exc}", channel=address) from None


def _kinds(targets: Targets) -> str:
    return ", ".join(sorted({WEB, *targets}))


# A waiting card on a channel where nobody may decide (its allowlist is empty): no buttons, this.
INFO_ONLY = "For information: nobody decides on this channel, the approvers do it elsewhere."


def web_card_ref(approval_id: str) -> str:
    return f"/approvals/{approval_id}"


def posts_inline(channel: Channel | None) -> bool:
    """Whether the channel's card is the database row itself, so that the suspend records it as
    posted in its own commit instead of through the outbox (a claim, two reads and a write)."""
    return bool(getattr(channel, "inline_cards", False))


class ChannelBase:
    """Defaults for a channel: nothing to start or close, no routes, no reminders, no limit on
    posts at once, and never a second post after one whose outcome nobody knows. A plugin
    subclasses it and writes `post_card` and `update_card` (docs/channels.md)."""

    kind: str = ""
    resend_unknown: bool = False
    posts_in_flight: int | None = None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def send_reminder(self, card: OutgoingCard) -> None:
        return None

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return ()


class WebChannel(ChannelBase):
    """The always-on web inbox: its cards are the approvals in the database, rendered live."""

    kind = WEB
    resend_unknown = True

    @property
    def inline_cards(self) -> bool:
        """Posting a web card is no I/O: the suspend records it in its own commit. A subclass
        with its own `post_card` delivers for real, through the outbox."""
        return type(self).post_card is WebChannel.post_card

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        return web_card_ref(card.approval.id)

    async def update_card(self, card: OutgoingCard) -> None:
        return None


__all__ = [
    "INFO_ONLY",
    "Attempt",
    "Channel",
    "ChannelBase",
    "DeliveryError",
    "OutgoingCard",
    "WebChannel",
    "arg_text",
    "check_address",
    "decider_text",
    "fresh_timestamp",
    "parse_address",
    "posts_inline",
    "web_card_ref",
]
