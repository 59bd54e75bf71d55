"""Web Push: the web inbox's card, pushed to the phones and browsers of its approvers.

With `[webpush]` set, the web channel's card is no longer only the database row: it goes
through the outbox like any channel's (at least once, retried with backoff), and posting it
sends one push to each subscription of a web user who may decide the approval
(`gateway.service.push.PushSubscriptions.for_approval`). A push carries the title, the summary
and two one-time links (gateway.core.webpush), which the service worker (/sw.js) shows as the
notification's Approve and Reject actions; a link opens a confirmation page, whose POST decides.

pywebpush encrypts each payload (RFC 8291, aes128gcm) and sends it over the gateway's aiohttp
session (`WebPusher.send_async`); the VAPID JWT (RFC 8292) is signed with py_vapid, with `exp`
from the gateway's clock. A push service that answers 404 or 410 has forgotten the
subscription: it is deleted. A 429 or 5xx, or a network error, retries the whole card; a push
carries a `Topic` and the notification a `tag` per approval, so a push sent again replaces the
first rather than showing twice. Nothing secret is logged: no key, no link, no endpoint path.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import socket
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from py_vapid import Vapid02
from pywebpush import WebPusher

from gateway.core import rounds
from gateway.core import webpush as links
from gateway.core.channels import Attempt, DeliveryError, OutgoingCard, WebChannel, web_card_ref
from gateway.core.models import Approval, Outcome
from gateway.core.tokens import TokenSigner
from gateway.core.webpush import PushSubscription
from gateway.service.push import PushSubscriptions
from gateway.settings.webpush import WebPushSettings, placeholder_subject

log = logging.getLogger("gateway.webpush")
MAX_TITLE, MAX_BODY = 120, 600  # characters
MAX_PAYLOAD = 3000  # bytes: a push is at most 4096 once encrypted (RFC 8291), with room for the links
JWT_LIFETIME = timedelta(hours=12)  # RFC 8292: at most 24 h
_GONE = frozenset({404, 410})


def payload(approval: Approval, public_url: str, urls: dict[Outcome, str]) -> bytes:
    """What the service worker shows (pure), as UTF-8 JSON of at most MAX_PAYLOAD bytes: a
    notification per approval (`tag`), with an Approve and a Reject action, each opening its
    one-time link; a tap opens the approval. A long title or summary is cut to fit."""
    body = approval.summary or f"{approval.run_id} · {approval.step}"
    title, body = approval.title[:MAX_TITLE], body[:MAX_BODY]
    while True:
        data = json.dumps(_shown(approval, public_url, urls, title, body), ensure_ascii=False, separators=(",", ":"))
        encoded = data.encode()
        if len(encoded) <= MAX_PAYLOAD or not (title or body):
            return encoded
        if body:
            body = body[: len(body) // 2]
        else:
            title = title[: len(title) // 2]


def _shown(approval: Approval, public_url: str, urls: dict[Outcome, str], title: str, body: str) -> dict[str, Any]:
    return {
        "title": title,
        "body": body,
        "tag": f"hitl-{approval.id}",
        "url": f"{public_url.rstrip('/')}{web_card_ref(approval.id)}",
        "actions": [
            {"action": "approve", "title": "Approve", "url": urls[Outcome.APPROVE]},
            {"action": "reject", "title": "Reject", "url": urls[Outcome.REJECT]},
        ],
    }


def origin(endpoint: str) -> str:
    """The push service's origin: the VAPID JWT's audience."""
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


class _NoRedirects:
    """The gateway's HTTP session for pywebpush, whose `post` never follows a redirect: a push
    service answers a push itself, and an endpoint that checked out as public must not bounce
    the POST (a 307 keeps it one) to an address inside the gateway's network."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def post(self, url: str, **kwargs: Any) -> Any:
        return self._session.post(url, allow_redirects=False, **kwargs)


class NotPublic(OSError):
    """A push endpoint's name resolved to no public address."""


class PublicOnly(AbstractResolver):
    """Resolves as `inner` does, and keeps the global addresses only. The endpoint's host was
    checked when subscribed (a public name, never an address inside), but a name is only as
    good as its DNS: one an approver controls (or `169.254.169.254.nip.io`) can lead to the
    gateway's own network, now or at any later push. `localhost` keeps its loopback addresses
    (a local push service, as a loopback endpoint is allowed); an IP literal is not resolved."""

    def __init__(self, inner: AbstractResolver) -> None:
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        local = host == "localhost"
        kept = [r for r in found if _reachable(r["host"], local)]
        if not kept:
            raise NotPublic(f"{host} resolves to no public address")
        return kept

    async def close(self) -> None:
        await self._inner.close()


def _reachable(address: str, local: bool) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global or (local and ip.is_loopback)


class PushingWebChannel(WebChannel):
    """The web inbox's channel with Web Push: its cards are delivered through the outbox."""

    def __init__(
        self,
        settings: WebPushSettings,
        public_url: str,
        signer: TokenSigner,
        subscriptions: PushSubscriptions,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self.settings, self.public_url, self.signer = settings, public_url.rstrip("/"), signer
        self.subscriptions = subscriptions
        self._vapid = Vapid02.from_raw(settings.private_key.encode())
        # A session of its own: its resolver answers public addresses only (PublicOnly), which the
        # gateway's other clients (webhooks to the operator's own hosts) must not be held to.
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None
        # what `init` writes: pushes work, but when they go wrong the push services write to no one
        if placeholder_subject(settings.subject):
            log.warning(
                "webpush.subject %s names no one: push services write to it when this gateway's pushes go wrong; "
                "set your own mailto: address or https: URL",
                settings.subject,
            )

    def http(self) -> aiohttp.ClientSession:
        """The push session (opened on first use, in the running loop)."""
        if self._session is None or self._session.closed:
            resolver = PublicOnly(self._resolver or DefaultResolver())
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=resolver))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        await self._push_all(card)
        return web_card_ref(card.approval.id)

    async def send_reminder(self, card: OutgoingCard) -> None:
        """A reminder (the policy's `remind`, or an edit that restarted the votes) is pushed
        again, with the links of the round it asks about; it replaces the first notification."""
        await self._push_all(card)

    async def _push_all(self, card: OutgoingCard) -> None:
        approval = card.approval
        if approval.status.final:  # decided before the outbox got to it: nothing to ask
            return
        retry: list[str] = []
        for sub in await self.subscriptions.for_approval(approval):
            error = await self._push(sub, approval, card)
            if error:
                retry.append(error)
        if retry:
            raise DeliveryError(f"webpush: {'; '.join(retry)}"[:300], transient=True)

    def _urls(self, approval: Approval, sub: PushSubscription) -> dict[Outcome, str]:
        """The links of one push: for its subscription's person, and working while it is kept."""
        seen, age = rounds.tag(self.signer, approval), self.settings.link_max_age
        return {
            o: links.url(
                self.public_url, links.token(self.signer, approval, sub.user, o, seen, age, subscription=sub.id)
            )
            for o in (Outcome.APPROVE, Outcome.REJECT)
        }

    def headers(self, endpoint: str, approval_id: str, card: OutgoingCard) -> dict[str, str]:
        """The VAPID Authorization header (its JWT's `exp` from the card's `now`) and a Topic."""
        claims = {
            "aud": origin(endpoint),
            "exp": int((card.now + JWT_LIFETIME).timestamp()),
            "sub": self.settings.subject,
        }
        topic = hashlib.sha256(approval_id.encode()).hexdigest()[:32]  # at most 32 base64url characters
        return {**self._vapid.sign(claims), "Topic": topic, "Urgency": "high"}

    async def _push(self, sub: PushSubscription, approval: Approval, card: OutgoingCard) -> str | None:
        """Send one push; the error to retry the card for, or None (sent, or the subscription is gone)."""
        body = payload(approval, self.public_url, self._urls(approval, sub))
        where = origin(sub.endpoint)  # never the endpoint's path: it is the subscription's secret
        try:
            resp = await WebPusher(sub.info(), aiohttp_session=_NoRedirects(self.http())).send_async(
                body,
                self.headers(sub.endpoint, approval.id, card),
                ttl=int(self.settings.ttl.total_seconds()),
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout.total_seconds()),
            )
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, NotPublic):  # never sent: trying again changes nothing
                log.warning("web push to %s for %s refused: %s", where, approval.id, exc.os_error)
                return None
            log.warning("web push to %s for %s failed: %s", where, approval.id, type(exc).__name__)
            return f"{where}: {type(exc).__name__}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("web push to %s for %s failed: %s", where, approval.id, type(exc).__name__)
            return f"{where}: {type(exc).__name__}"
        status = resp.status if isinstance(resp, aiohttp.ClientResponse) else 0
        if status in _GONE:
            await self.subscriptions.gone(sub.endpoint)
            log.info("web push subscription of %s at %s is gone (%d): deleted", sub.user, where, status)
            return None
        if status == 429 or status >= 500:
            return f"{where}: {status}"
        if status >= 300:  # the push service refused this push for good (400, 403, 413): say so, go on
            log.warning("web push to %s for %s refused: %d", where, approval.id, status)
        return None


__all__ = ["JWT_LIFETIME", "PushingWebChannel", "origin", "payload"]
