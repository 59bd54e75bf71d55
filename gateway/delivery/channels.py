"""The Channel protocol, the registry that loads adapters by name, and the built-in web channel.

`gateway` never imports `adapters` statically: `load_channel("telegram", runtime)` imports
`adapters.telegram` and calls its `create_channel(runtime)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from gateway.core.errors import UnknownChannel
from gateway.core.models import Approval

if TYPE_CHECKING:
    from gateway.runtime import Runtime


class DeliveryError(Exception):
    """A channel could not deliver. `transient` ones are retried (after `retry_after` if the
    server said so); the others are terminal and recorded.

    `unsent`: the platform certainly did not act (it answered with an error, or the connection
    was never made), so a retry cannot duplicate anything. `uncertain`: it may have acted (a
    read timeout, a dropped connection, an earlier attempt cut short by a crash); a post in that
    state is recorded as `uncertain` and not sent again."""

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


class Channel(Protocol):
    kind: str

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def post_card(self, target: str, approval: Approval, now: datetime) -> str:
        """Post the card; return its reference (e.g. 'chat_id:message_id')."""
        ...

    async def update_card(self, target: str, ref: str, approval: Approval, now: datetime) -> None:
        """Re-render the card from the approval's current state (buttons gone once decided)."""
        ...

    async def send_reminder(self, target: str, ref: str | None, approval: Approval, now: datetime) -> None: ...

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        """Webhook routes this channel serves."""
        ...


def parse_address(address: str) -> tuple[str, str]:
    """'telegram:-100123' -> ('telegram', '-100123'); 'web' -> ('web', '')."""
    kind, _, target = address.partition(":")
    return kind, target


def check_address(address: Any, enabled: frozenset[str], field: str = "channels") -> str:
    if not isinstance(address, str) or not address:
        raise UnknownChannel(f"{field}: a channel is a string like 'telegram:<chat_id>', 'slack:<id>' or 'web'")
    kind, target = parse_address(address)
    if kind not in ("web", "telegram", "slack"):
        raise UnknownChannel(f"{field}: unknown channel {address!r}", channel=address)
    if kind not in enabled:
        raise UnknownChannel(f"{field}: channel {kind!r} is not enabled (no bot token configured)", channel=address)
    if kind == "web" and target:
        raise UnknownChannel(f"{field}: the web channel takes no target, write 'web'", channel=address)
    if kind != "web" and not target:
        raise UnknownChannel(f"{field}: {kind!r} needs a target, like '{kind}:<id>'", channel=address)
    return address


def web_card_ref(approval_id: str) -> str:
    return f"/approvals/{approval_id}"


def posts_inline(channel: Channel | None) -> bool:
    """Whether the channel's card is the database row itself, so that the suspend records it as
    posted in its own commit instead of through the outbox (a claim, two reads and a write)."""
    return bool(getattr(channel, "inline_cards", False))


class WebChannel:
    """The always-on web inbox: its cards are the approvals in the database, rendered live."""

    kind = "web"

    @property
    def inline_cards(self) -> bool:
        """Posting a web card is no I/O: the suspend records it in its own commit. A subclass
        with its own `post_card` delivers for real, through the outbox."""
        return type(self).post_card is WebChannel.post_card

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def post_card(self, target: str, approval: Approval, now: datetime) -> str:
        return web_card_ref(approval.id)

    async def update_card(self, target: str, ref: str, approval: Approval, now: datetime) -> None:
        return None

    async def send_reminder(self, target: str, ref: str | None, approval: Approval, now: datetime) -> None:
        return None

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return ()


def load_channel(kind: str, runtime: Runtime) -> Channel:
    if kind == "web":
        return WebChannel()
    module = importlib.import_module(f"adapters.{kind}")
    channel: Channel = module.create_channel(runtime)
    return channel
