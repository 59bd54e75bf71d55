"""The idempotency key a launched worker hands to the effect it runs (`HITL_IDEMPOTENCY_KEY`).

One key per approval, step and approved args: every relaunch of the same job gets the same key,
so an API that de-duplicates on it (a payment API's `Idempotency-Key`) applies the effect once
however often a crash makes the gateway launch the worker again; an approver's edit changes the
approved args, hence the key. It is an HMAC under a key derived (HKDF) from the OLDEST of
`security.secret_keys`: adding a key for rotation keeps it stable, and an agent, which knows the
approval id, step and args, still cannot compute it before its worker is launched, so it cannot
take the key first at the downstream API to block or replace the approved effect. It is a
one-way function of public ids under a secret: it reveals neither the secret nor the resume token.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from gateway.core.keys import canonical_json

__all__ = ["PREFIX", "effect_key"]

PREFIX = "hitl_"  # recognisable in a downstream API's logs; 69 characters in all
_INFO = b"hitl-gateway worker idempotency key v1"


@lru_cache(maxsize=8)
def _mac_key(secret: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret.encode("utf-8"))


def effect_key(secret_keys: Sequence[str], approval_id: str, step: str, args_hash: str) -> str:
    """`hitl_` + hex HMAC-SHA256 of (approval id, step, approved args hash)."""
    message = canonical_json([approval_id, step, args_hash]).encode("utf-8")
    return PREFIX + hmac.new(_mac_key(secret_keys[0]), message, hashlib.sha256).hexdigest()
