"""Pure Slack request signing (v0): HMAC-SHA256 over `v0:{timestamp}:{raw body}`.

A request is valid only if its timestamp is a plain integer within 5 minutes of `now` and its
signature matches. Anything missing or malformed is simply invalid: never an exception.
"""

from __future__ import annotations

import hashlib
import hmac

WINDOW_SECONDS = 300
MAX_TIMESTAMP_DIGITS = 12


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack would send for this body."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def parse_timestamp(value: str | None) -> int | None:
    """A plain decimal number of seconds, or None (no sign, spaces, decimals or huge values)."""
    if value is None or not value.isascii() or not value.isdigit() or len(value) > MAX_TIMESTAMP_DIGITS:
        return None
    return int(value)


def is_valid(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    now: float,
    window: int = WINDOW_SECONDS,
) -> bool:
    """True when the signature matches and the timestamp is within `window` seconds of `now`."""
    ts = parse_timestamp(timestamp)
    if not secret or ts is None or signature is None or abs(now - ts) > window:
        return False
    assert timestamp is not None
    expected = sign(secret, timestamp, body)
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))
