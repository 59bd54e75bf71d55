"""Encryption at rest of an approval's raw args and state (the rehydration copy).

Keys are derived from `security.secret_keys` with HKDF-SHA256 (one Fernet key per secret, a
purpose label as HKDF info). The newest secret encrypts; every listed secret decrypts, so key
rotation works like token signing: add a new key last, keep the old one until old approvals are done.
Fernet is AES-128-CBC with HMAC-SHA256 (authenticated): a tampered row fails to open.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from gateway.core.keys import canonical_json

_INFO = b"hitl-gateway sealed approval state v1"


def _derive(secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))


class SealError(Exception):
    """A sealed value could not be opened (wrong keys or tampered)."""


class Sealer:
    def __init__(self, secret_keys: Sequence[str]) -> None:
        if not secret_keys:
            raise ValueError("at least one secret key is needed")
        self._fernet = MultiFernet([_derive(k) for k in reversed(secret_keys)])  # newest first encrypts

    def seal(self, value: Any) -> str:
        return self.seal_json(canonical_json(value))

    def seal_json(self, text: str) -> str:
        """Seal a value already encoded as JSON text."""
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def open(self, token: str) -> Any:
        try:
            return json.loads(self._fernet.decrypt(token.encode("ascii")))
        except InvalidToken:
            raise SealError("cannot decrypt the sealed state (secret_keys changed or the row was altered)") from None
