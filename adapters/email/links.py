"""Pure one-time links: signed, bound to one approval, one outcome and one addressee.

A link is `<public_url>/email/links/<token>`; the token (itsdangerous, purpose
`hitl.email.link.v1`) names the approval, the outcome and the addressee, and expires. Nothing in
it can be edited without the server's key, and the person who confirms decides as the addressee.
"Once" is enforced when a link is confirmed (`use_key`, an inbound mark): a GET never uses it.
The confirmation form carries a CSRF token bound to a cookie set by the page and to the link.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from gateway.core.errors import InvalidToken
from gateway.core.models import Approval, Outcome
from gateway.core.tokens import TokenSigner

PURPOSE = "hitl.email.link.v1"
CSRF_PURPOSE = "hitl.email.csrf.v1"
PATH = "/email/links/"
_CODES = {Outcome.APPROVE: "a", Outcome.REJECT: "r"}
_OUTCOMES = {v: k for k, v in _CODES.items()}


@dataclass(frozen=True, slots=True)
class Link:
    approval_id: str
    outcome: Outcome
    addressee: str  # canonical address: who decides by confirming
    extend: str | None = None  # an extend link: the policy's duration ('1h'); `outcome` is unused


def expiry(approval: Approval, max_age: timedelta) -> datetime:
    """`max_age` after the suspend, or the deadline if that is later (deterministic, so that a
    mail sent again carries the same links)."""
    until = approval.created_at + max_age
    return max(until, approval.deadline) if approval.deadline else until


def token(
    signer: TokenSigner,
    approval: Approval,
    addressee: str,
    outcome: Outcome,
    max_age: timedelta,
    extend: str | None = None,
) -> str:
    payload = {"a": approval.id, "o": _CODES[outcome], "t": addressee} | ({"x": extend} if extend else {})
    return signer.sign(PURPOSE, payload, expiry(approval, max_age))


def url(public_url: str, link_token: str) -> str:
    return f"{public_url.rstrip('/')}{PATH}{link_token}"


def read(signer: TokenSigner, link_token: str, now: datetime) -> Link:
    """The link a token stands for; InvalidToken (forged, edited) or TokenExpired."""
    data = signer.verify(PURPOSE, link_token, now)
    approval_id, code, addressee, extend = data.get("a"), data.get("o"), data.get("t"), data.get("x")
    if not isinstance(approval_id, str) or not isinstance(addressee, str) or code not in _OUTCOMES:
        raise InvalidToken()
    if extend is not None and not isinstance(extend, str):
        raise InvalidToken()
    return Link(approval_id, _OUTCOMES[code], addressee, extend)


def use_key(link: Link) -> str:
    """The inbound mark that makes a link work once."""
    who = hashlib.sha256(link.addressee.encode()).hexdigest()[:16]
    what = f"x{link.extend}" if link.extend else _CODES[link.outcome]
    return f"email:link:{link.approval_id}:{what}:{who}"


CSRF_LENGTH = 32  # hex characters of the form's token


def csrf(signer: TokenSigner, cookie: str, link_token: str) -> str:
    return signer.mac(CSRF_PURPOSE, f"{cookie}:{link_token}", CSRF_LENGTH)


def csrf_ok(signer: TokenSigner, cookie: str | None, link_token: str, given: str | None) -> bool:
    if not cookie or not given:
        return False
    return signer.check_mac(CSRF_PURPOSE, f"{cookie}:{link_token}", given, CSRF_LENGTH)
