"""The `X-HITL-Signature` of `url` workers: `t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`.

The gateway signs each POST with `sign`; the receiving agent checks it with `verify` (within a
5-minute window by default, so a captured request cannot be replayed later).
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["sign", "verify"]


def sign(body: bytes, secret: str, t: int) -> str:
    """The X-HITL-Signature value: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">."""
    mac = hmac.new(secret.encode("utf-8"), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def verify(header: str, body: bytes, secret: str, now: float, tolerance: float = 300) -> bool:
    """For receivers of `url` workers: a valid signature made within `tolerance` seconds."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        t = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(now - t) > tolerance:
        return False
    return hmac.compare_digest(sign(body, secret, t), f"t={t},v1={parts.get('v1', '')}")
