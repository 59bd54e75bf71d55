"""One-time signed links to the edit form, bound to one approval and one person.

A chat platform without forms (a Bot API has no reasonable inline form) gives the approver who
pressed "Edit" a link `<public_url>/edit/<token>`: the token (itsdangerous, purpose
`hitl.edit.link.v1`) names the approval, the presser's canonical identity and how the platform
shows them, and expires after EDIT_LINK_TTL. Whoever submits the form decides as that identity,
through the press use case (which checks again that they may decide), so the link is sent to the
presser alone. "Once" is enforced when the form decides (an inbound mark): a GET never uses it.
A refused submit used its link, so the form comes back with a `successor`: a new nonce, the same
expiry. A link's lifetime is fixed when it is issued; only a press on the channel issues a new one.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.core.errors import InvalidToken
from gateway.core.tokens import TokenSigner

PURPOSE = "hitl.edit.link.v1"
PATH = "/edit/"
EDIT_LINK_TTL = timedelta(minutes=30)


@dataclass(frozen=True, slots=True)
class EditLink:
    approval_id: str
    actor: str  # canonical identity: who decides by submitting the form
    name: str | None  # how the platform shows them
    nonce: str
    expires_at: datetime  # fixed at issue: a successor expires then too

    @property
    def use_key(self) -> str:
        """The inbound mark that makes the link work once."""
        digest = hashlib.sha256(f"{self.approval_id}:{self.actor}:{self.nonce}".encode()).hexdigest()[:32]
        return f"edit:link:{digest}"


def token(signer: TokenSigner, approval_id: str, actor: str, name: str | None, now: datetime) -> str:
    payload = {"a": approval_id, "t": actor, "n": name or "", "j": secrets.token_urlsafe(9)}
    return signer.sign(PURPOSE, payload, now + EDIT_LINK_TTL)


def successor(signer: TokenSigner, link: EditLink) -> str:
    """The link a refused submit hands back: the same approval and person, a new nonce (the
    submit used the old one's mark) and the same expiry, so that refused submits (bad input, a
    stale form) cannot renew a link for as long as the approval waits."""
    payload = {"a": link.approval_id, "t": link.actor, "n": link.name or "", "j": secrets.token_urlsafe(9)}
    return signer.sign(PURPOSE, payload, link.expires_at)


def url(public_url: str, link_token: str) -> str:
    return f"{public_url.rstrip('/')}{PATH}{link_token}"


def read(signer: TokenSigner, link_token: str, now: datetime) -> EditLink:
    """The link a token stands for; InvalidToken (forged, edited) or TokenExpired (410)."""
    data = signer.verify(PURPOSE, link_token, now)
    approval_id, actor, name, nonce = data.get("a"), data.get("t"), data.get("n"), data.get("j")
    if not all(isinstance(v, str) for v in (approval_id, actor, name, nonce)):
        raise InvalidToken()
    expires_at = datetime.fromtimestamp(data["e"], UTC)  # an int: verify checked it
    return EditLink(str(approval_id), str(actor), str(name) or None, str(nonce), expires_at)


__all__ = ["EDIT_LINK_TTL", "PATH", "EditLink", "read", "successor", "token", "url"]
