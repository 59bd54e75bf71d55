"""The web inbox's Web Push subscriptions: subscribe, unsubscribe, and who a card is pushed to.

A subscription is a browser's (its push service endpoint and keys) for one web user. A card is
pushed to the subscriptions of the web users who may decide it, by the one check every decision
goes through (`Authorizer.authorize`): a viewer, a user the approval does not name, or its
requester gets no push. A push's links work while the subscription they were pushed to is kept
and would be pushed to (`keeps`); its person sees their subscriptions and revokes one (`revoke`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from datetime import datetime
from urllib.parse import urlsplit

from gateway.core import password_marks
from gateway.core.clock import Clock
from gateway.core.delegation import Delegation
from gateway.core.errors import GatewayError, ValidationError
from gateway.core.identity import WEB
from gateway.core.models import Approval
from gateway.core.tokens import TokenSigner
from gateway.core.webpush import PushSubscription, device_label
from gateway.service.authority import Authorizer
from gateway.service.commands import Authority
from gateway.store import Store

MAX_ENDPOINT = 2000
MAX_PER_USER = 20  # browsers and phones of one person: every card is POSTed to each of them
_KEY_LENGTHS = {"p256dh": (86, 88), "auth": (22, 24)}  # 65 and 16 bytes in base64url, padded or not
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _public(host: str) -> bool:
    """Whether an https endpoint's host may be pushed to: a public address, or a name. Push
    services are named hosts; a number the resolver would take for an address (`2852039166`,
    `0xa9.0xfe.0xa9.0xfe`, `10.1`: its last part is digits or hex) is refused like the address
    it is, so that no subscription aims the gateway's POSTs at its own network (169.254.169.254)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        last = host.rstrip(".").rpartition(".")[2].lower()
        return bool(last) and not (last.isdigit() or last.startswith("0x"))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global


def check_endpoint(endpoint: str) -> str:
    """An https URL of a public host (http or https to this machine too, for a local push
    service), or ValidationError."""
    parts = urlsplit(endpoint)
    try:
        host = parts.hostname or ""
    except ValueError:  # an unclosed IPv6 bracket
        host = ""
    ok = (_loopback(host) and parts.scheme in ("http", "https")) or (parts.scheme == "https" and _public(host))
    if not ok or not host or len(endpoint) > MAX_ENDPOINT or parts.username or parts.password:
        raise ValidationError("endpoint", "expected the https URL of a push service")
    return endpoint


def _valid(endpoint: str) -> bool:
    try:
        check_endpoint(endpoint)
    except ValidationError:
        return False
    return True


def check_key(name: str, value: str) -> str:
    low, high = _KEY_LENGTHS[name]
    if not low <= len(value) <= high or not set(value) <= _B64URL:
        raise ValidationError(f"keys.{name}", "expected the browser's key in base64url")
    return value.rstrip("=")


class PushSubscriptions:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        authorizer: Authorizer,
        signer: TokenSigner,
        passwords: Mapping[str, str] | None = None,
    ) -> None:
        self._store, self._clock, self._authorizer = store, clock, authorizer
        self._signer, self._passwords = signer, passwords or {}

    async def subscribe(
        self, user: str, endpoint: str, p256dh: str, auth: str, user_agent: str = ""
    ) -> PushSubscription:
        """Remember this browser for `user` (replacing what it had, under a new id), under the
        mark of their password now; ValidationError names a bad field."""
        sub = PushSubscription(
            check_endpoint(endpoint),
            user,
            check_key("p256dh", p256dh),
            check_key("auth", auth),
            self._clock.now(),
            password_marks.mark(self._signer, self._passwords.get(user)),
            label=device_label(user_agent),
        )
        await self._store.save_push_subscription(sub)
        # beyond the bound, the oldest go (likely browsers long gone): no one person's
        # subscriptions turn each card into a flood of requests
        mine = sorted(await self.of(user), key=lambda s: (s.created_at, s.endpoint == sub.endpoint))
        for old in mine[: max(0, len(mine) - MAX_PER_USER)]:
            await self._store.delete_push_subscription(old.endpoint, user)
        return sub

    async def unsubscribe(self, user: str, endpoint: str) -> bool:
        """Forget this browser, if it is `user`'s."""
        return await self._store.delete_push_subscription(endpoint, user)

    async def revoke(self, user: str, sub_id: str) -> bool:
        """Forget the subscription of this id, if it is `user`'s (a lost phone): no more pushes
        to it, and the links pushed to it stop working."""
        return bool(sub_id) and await self._store.revoke_push_subscription(sub_id, user)

    async def keeps(self, user: str, sub_id: str) -> bool:
        """Whether `user`'s subscription `sub_id` is kept and would be pushed to: a link pushed to
        a browser works no longer than the browser gets pushes (unsubscribed, revoked, replaced,
        gone at its push service, or made under a password that has changed since: it ends)."""
        sub = await self._store.push_subscription(sub_id)
        return sub is not None and sub.user == user and _valid(sub.endpoint) and self._current(sub)

    async def gone(self, endpoint: str) -> bool:
        """The push service said the subscription no longer exists (404, 410): forget it."""
        return await self._store.delete_push_subscription(endpoint)

    async def of(self, user: str) -> list[PushSubscription]:
        return [s for s in await self._store.push_subscriptions() if s.user == user]

    async def for_approval(self, approval: Approval) -> list[PushSubscription]:
        """The subscriptions of the web users who may decide `approval` now, themselves or
        for someone who delegated to them."""
        may: dict[str, bool] = {}
        out = []
        # one saved before its endpoint's check was as strict as it is now is not pushed to, nor
        # one made under a password that has changed since (a leaked one's thief's browser)
        subs = [s for s in await self._store.push_subscriptions() if _valid(s.endpoint) and self._current(s)]
        now = self._clock.now()
        delegations = await self._store.active_delegations(now) if subs else []
        for sub in subs:
            if sub.user not in may:
                may[sub.user] = await self._may_decide(sub.user, approval, delegations, now)
            if may[sub.user]:
                out.append(sub)
        return out

    def _current(self, sub: PushSubscription) -> bool:
        """Whether `sub` was made under its user's password now (or before subscriptions said)."""
        if sub.password_mark is None:
            return True
        return password_marks.same(self._signer, self._passwords.get(sub.user), sub.password_mark)

    async def _may_decide(
        self, user: str, approval: Approval, delegations: Sequence[Delegation], now: datetime
    ) -> bool:
        try:
            actor = self._authorizer.actor(f"{WEB}:{user}", Authority.APPROVER)
            claimed = await self._authorizer.claimed(actor)
            self._authorizer.authorize(
                Authority.APPROVER, actor, approval, claimed=claimed, delegations=delegations, now=now
            )
        except GatewayError:
            return False
        return True


__all__ = ["PushSubscriptions", "check_endpoint", "check_key"]
