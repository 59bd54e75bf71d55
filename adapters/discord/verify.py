"""Pure Discord request verification: Ed25519 over `timestamp + raw body`, with the
application's public key (hex), and a freshness window on the timestamp against replays.

Anything missing or malformed is simply invalid: never an exception.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.core.channels import fresh_timestamp

WINDOW_SECONDS = 300


def public_key(hex_key: str) -> Ed25519PublicKey | None:
    """The key from its 64 hex characters, or None."""
    try:
        raw = bytes.fromhex(hex_key)
        return Ed25519PublicKey.from_public_bytes(raw) if len(raw) == 32 else None
    except ValueError:
        return None


def sign(private: Ed25519PrivateKey, timestamp: str, body: bytes) -> str:
    """The `X-Signature-Ed25519` value Discord would send for this body."""
    return private.sign(timestamp.encode() + body).hex()


def is_valid(
    key: Ed25519PublicKey | None,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    now: float,
    window: int = WINDOW_SECONDS,
) -> bool:
    """True when the signature matches and the timestamp is within `window` seconds of `now`."""
    if key is None or signature is None or not fresh_timestamp(timestamp, now, window):
        return False
    assert timestamp is not None
    try:
        raw = bytes.fromhex(signature)
    except ValueError:
        return False
    if len(raw) != 64:
        return False
    try:
        key.verify(raw, timestamp.encode() + body)
    except InvalidSignature:
        return False
    return True
