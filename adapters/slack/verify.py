"""Pure Slack request signing (v0): HMAC-SHA256 over `v0:{timestamp}:{raw body}`.

A request is valid only if its timestamp is a plain integer within 5 minutes of `now` and its
signature matches. Anything missing or malformed is simply invalid: never an exception.
"""

from __future__ import annotations

import hashlib
import hmac

from gateway.core.channels import fresh_timestamp

WINDOW_SECONDS = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack would send for this body."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def is_valid(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    now: float,
    window: int = WINDOW_SECONDS,
) -> bool:
    """True when the signature matches and the timestamp is within `window` seconds of `now`."""
    if not secret or signature is None or not fresh_timestamp(timestamp, now, window):
        return False
    assert timestamp is not None
    expected = sign(secret, timestamp, body)
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))
