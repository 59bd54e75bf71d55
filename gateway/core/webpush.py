"""Web Push, pure: a browser's subscription, and the one-time links a push's actions open.

A link is `<public_url>/push/links/<token>`; the token (purpose `hitl.push.link.v1`) names the
approval, the outcome, the web user it was pushed to and the round it was drawn for
(gateway.core.rounds.tag), and expires. Whoever confirms it decides as that user, once: "once"
is an inbound mark (`use_key`) taken when the confirmation is POSTed, never on a GET, so that a
prefetch or a link preview decides nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from gateway.core.errors import InvalidToken
from gateway.core.models import Approval, Outcome
from gateway.core.tokens import TokenSigner

PURPOSE = "hitl.push.link.v1"
PATH = "/push/links/"
_CODES = {Outcome.APPROVE: "a", Outcome.REJECT: "r"}
_OUTCOMES = {v: k for k, v in _CODES.items()}


@dataclass(frozen=True, slots=True)
class PushSubscription:
    """What a browser's `PushManager.subscribe()` gives (endpoint and keys), for one web user."""

    endpoint: str  # the push service's URL for this browser: unique
    user: str  # the web user (web:<user> decides)
    p256dh: str  # the browser's P-256 public key, base64url
    auth: str  # the 16-byte auth secret, base64url
    created_at: datetime
    # The mark of the password its user signed in with (gateway.core.password_marks), so that a
    # new password ends it; None: saved before subscriptions carried one (not checked).
    password_mark: str | None = None

    def info(self) -> dict[str, object]:
        """The `subscription_info` a push library takes."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


@dataclass(frozen=True, slots=True)
class PushLink:
    approval_id: str
    outcome: Outcome
    user: str  # the web user who decides by confirming
    seen: str  # the round tag of the args the push showed


def expiry(approval: Approval, max_age: timedelta) -> datetime:
    """`max_age` after the suspend, or the deadline if later: a push sent again has the same links."""
    until = approval.created_at + max_age
    return max(until, approval.deadline) if approval.deadline else until


def token(signer: TokenSigner, approval: Approval, user: str, outcome: Outcome, seen: str, max_age: timedelta) -> str:
    payload = {"a": approval.id, "o": _CODES[outcome], "u": user, "r": seen}
    return signer.sign(PURPOSE, payload, expiry(approval, max_age))


def url(public_url: str, link_token: str) -> str:
    return f"{public_url.rstrip('/')}{PATH}{link_token}"


def read(signer: TokenSigner, link_token: str, now: datetime) -> PushLink:
    """The link a token stands for; InvalidToken (forged, edited) or TokenExpired."""
    data = signer.verify(PURPOSE, link_token, now)
    approval_id, code, user, seen = data.get("a"), data.get("o"), data.get("u"), data.get("r")
    if not (isinstance(approval_id, str) and isinstance(user, str) and isinstance(seen, str)) or code not in _OUTCOMES:
        raise InvalidToken()
    return PushLink(approval_id, _OUTCOMES[code], user, seen)


def use_key(link: PushLink) -> str:
    """The inbound mark that makes a link work once (per approval, person and round: the
    Approve and the Reject of one push are one choice)."""
    who = hashlib.sha256(link.user.encode()).hexdigest()[:16]
    return f"push:link:{link.approval_id}:{link.seen}:{who}"


__all__ = ["PATH", "PURPOSE", "PushLink", "PushSubscription", "expiry", "read", "token", "url", "use_key"]
