"""A keyed mark of a web user's password hash: what a session cookie and a push subscription
carry of the password they were made under, so that a new password in `[web] passwords` ends
both (a leaked password's thief's session, and the browser they subscribed to pushes whose links
decide without a sign-in). Never the hash itself, which a cookie must not carry; checked under
every key of the signer, so that rotating the keys ends nothing."""

from __future__ import annotations

from gateway.core.tokens import TokenSigner

PURPOSE = "hitl.web.password.v1"
LENGTH = 16


def mark(signer: TokenSigner, hashed: str | None) -> str:
    """The mark of a password hash; '' for a user without a password (a sign-in link, OIDC)."""
    return signer.mac(PURPOSE, hashed, LENGTH) if hashed else ""


def same(signer: TokenSigner, hashed: str | None, given: object) -> bool:
    """Whether `given` is the mark of `hashed`, the user's password now."""
    if not hashed:
        return given == ""
    return isinstance(given, str) and signer.check_mac(PURPOSE, hashed, given, LENGTH)


__all__ = ["mark", "same"]
