"""Web Push, pure: a browser's subscription, and the one-time links a push's actions open.

A link is `<public_url>/push/links/<token>`; the token (purpose `hitl.push.link.v2`) names the
approval, the outcome, the web user it was pushed to, the subscription (browser) it was pushed
to and the tag of the args it showed (gateway.core.rounds.tag), and expires. Whoever confirms it
decides as that user, once: "once" is an inbound mark (`use_key`) taken when the confirmation is
POSTed, never on a GET, so that a prefetch or a link preview decides nothing. A link works only
while its subscription is kept: a browser unsubscribed, or revoked from the devices page (a lost
phone), takes the links already pushed to it along.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gateway.core.errors import InvalidToken
from gateway.core.models import Approval, Outcome
from gateway.core.tokens import TokenSigner

PURPOSE = "hitl.push.link.v2"  # v1 named no subscription: refused
PATH = "/push/links/"
_CODES = {Outcome.APPROVE: "a", Outcome.REJECT: "r"}
_OUTCOMES = {v: k for k, v in _CODES.items()}
MAX_LABEL = 80
# (what the User-Agent holds, what to call it), first match wins: Edge and Opera say Chrome too,
# Chrome says Safari, and an iPad may say Macintosh
_SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Windows", "Windows"),
    ("CrOS", "ChromeOS"),
    ("Macintosh", "Mac"),
    ("Linux", "Linux"),
)
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("Firefox/", "Firefox"),
    ("FxiOS/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
)


def new_id() -> str:
    """A subscription's id: random, so that one given up (revoked, unsubscribed) never comes back."""
    return secrets.token_urlsafe(16)


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
    # Named by the links pushed to it (which stop when it goes) and by the devices page's Revoke;
    # a browser subscribing again gets a new one.
    id: str = field(default_factory=new_id)
    label: str = ""  # what the browser said it was when it subscribed (`device_label`), or ""

    def info(self) -> dict[str, object]:
        """The `subscription_info` a push library takes."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


@dataclass(frozen=True, slots=True)
class PushLink:
    approval_id: str
    outcome: Outcome
    user: str  # the web user who decides by confirming
    seen: str  # the round tag of the args the push showed
    subscription: str  # the id of the subscription it was pushed to: the link works while it is kept


def device_label(user_agent: str) -> str:
    """A browser's name for the devices page ("Chrome on Android"), from its User-Agent, or ""."""
    system = next((name for mark, name in _SYSTEMS if mark in user_agent), "")
    browser = next((name for mark, name in _BROWSERS if mark in user_agent), "")
    if browser and system:
        return f"{browser} on {system}"
    return (browser or system)[:MAX_LABEL]


def expiry(approval: Approval, max_age: timedelta) -> datetime:
    """`max_age` after the suspend, or the deadline if later: a push sent again has the same links."""
    until = approval.created_at + max_age
    return max(until, approval.deadline) if approval.deadline else until


def token(
    signer: TokenSigner,
    approval: Approval,
    user: str,
    outcome: Outcome,
    seen: str,
    max_age: timedelta,
    *,
    subscription: str,
) -> str:
    payload = {"a": approval.id, "o": _CODES[outcome], "u": user, "r": seen, "s": subscription}
    return signer.sign(PURPOSE, payload, expiry(approval, max_age))


def url(public_url: str, link_token: str) -> str:
    return f"{public_url.rstrip('/')}{PATH}{link_token}"


def read(signer: TokenSigner, link_token: str, now: datetime) -> PushLink:
    """The link a token stands for; InvalidToken (forged, edited) or TokenExpired."""
    data = signer.verify(PURPOSE, link_token, now)
    approval_id, code, user, seen, sub = (data.get(k) for k in ("a", "o", "u", "r", "s"))
    texts = (approval_id, user, seen, sub)
    if not all(isinstance(t, str) for t in texts) or not sub or code not in _OUTCOMES:
        raise InvalidToken()
    return PushLink(str(approval_id), _OUTCOMES[code], str(user), str(seen), str(sub))


def use_key(link: PushLink) -> str:
    """The inbound mark that makes a link work once (per approval, person and round: the
    Approve and the Reject of one push are one choice)."""
    who = hashlib.sha256(link.user.encode()).hexdigest()[:16]
    return f"push:link:{link.approval_id}:{link.seen}:{who}"


__all__ = [
    "PATH",
    "PURPOSE",
    "PushLink",
    "PushSubscription",
    "device_label",
    "expiry",
    "new_id",
    "read",
    "token",
    "url",
    "use_key",
]
