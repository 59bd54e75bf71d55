"""Signed, expiring tokens (itsdangerous, SHA-256, a salt per purpose, key rotation).

Tokens carry their own expiry (`e`, unix seconds) so that the check uses the injected clock and
so that the same approval always gets the same resume token (suspend stays idempotent).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from itsdangerous import BadData, Signer, URLSafeSerializer
from itsdangerous.encoding import want_bytes

from gateway.core.errors import InvalidToken, TokenExpired

RESUME = "hitl.resume.v1"


class _Signer(Signer):
    """itsdangerous' Signer, deriving each key once: it re-derives (a hash) on every call."""

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        cache: dict[bytes, bytes] = self.__dict__.setdefault("_derived", {})
        key = self.secret_keys[-1] if secret_key is None else want_bytes(secret_key)
        derived = cache.get(key)
        if derived is None:
            derived = cache[key] = super().derive_key(key)
        return derived


class _Serializer(URLSafeSerializer):
    """The same tokens, byte for byte; one signer per salt instead of a new one per call."""

    signer = _Signer

    def make_signer(self, salt: str | bytes | None = None) -> Signer:
        signers: dict[str | bytes | None, Signer] = self.__dict__.setdefault("_signers", {})
        found = signers.get(salt)
        if found is None:
            found = signers[salt] = super().make_signer(salt)
        return found


class TokenSigner:
    def __init__(self, secret_keys: Sequence[str]) -> None:
        if not secret_keys:
            raise ValueError("at least one secret key is needed")
        self._keys = list(secret_keys)
        self._serializers: dict[str, _Serializer] = {}

    def _serializer(self, purpose: str) -> _Serializer:
        s = self._serializers.get(purpose)
        if s is None:
            s = _Serializer(self._keys, salt=purpose, signer_kwargs={"digest_method": hashlib.sha256})
            self._serializers[purpose] = s
        return s

    def sign(self, purpose: str, payload: dict[str, Any], expires_at: datetime) -> str:
        return str(self._serializer(purpose).dumps({**payload, "e": int(expires_at.timestamp())}))

    def verify(self, purpose: str, token: str, now: datetime) -> dict[str, Any]:
        """Return the payload; InvalidToken (401) if forged, TokenExpired (410) if stale."""
        try:
            data = self._serializer(purpose).loads(token)
        except BadData:
            raise InvalidToken() from None
        if not isinstance(data, dict) or not isinstance(data.get("e"), int):
            raise InvalidToken()
        if now.timestamp() >= data["e"]:
            raise TokenExpired()
        return data

    def mac(self, purpose: str, message: str, length: int = 10) -> str:
        """A short HMAC (hex) with the newest key, for size-limited places like callback_data."""
        key = hashlib.sha256(f"{purpose}:{self._keys[-1]}".encode()).digest()
        return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()[:length]

    def check_mac(self, purpose: str, message: str, mac: str, length: int = 10) -> bool:
        """Constant-time check against every key (rotation) of a MAC made by `mac(..., length)`:
        exactly `length` characters, so a truncated MAC (down to one guessable character) is
        refused. Compared as bytes: a forged MAC with non-ASCII characters is simply wrong (str
        compare_digest would raise TypeError: a 500)."""
        given = mac.encode("utf-8", "surrogateescape")
        matched = False
        for secret in self._keys:  # no early exit across keys
            key = hashlib.sha256(f"{purpose}:{secret}".encode()).digest()
            expected = hmac.new(key, message.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
            matched |= hmac.compare_digest(expected[:length].encode(), given)
        return matched and len(given) == length > 0

    def ref(self, purpose: str, approval_id: str, length: int = 32) -> str:
        """`<approval id>.<mac>`: an approval named in a platform's opaque field (a button's id,
        a card's data) so that a press cannot point at another approval."""
        return f"{approval_id}.{self.mac(purpose, approval_id, length)}"

    def check_ref(self, purpose: str, ref: str, length: int = 32) -> str | None:
        """The approval id of an authentic `ref(purpose, ...)`, else None."""
        approval_id, dot, mac = ref.rpartition(".")
        if not dot or not approval_id or len(mac) != length:
            return None
        return approval_id if self.check_mac(purpose, approval_id, mac, length) else None
