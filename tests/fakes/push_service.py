"""A local push service (a browser vendor's Web Push endpoint) on aiohttp, speaking the wire format.

`FakePushService.browser(vapid_public_key)` does what a browser does on `PushManager.subscribe()`:
it generates a P-256 key pair and a 16-byte auth secret, and gets an endpoint bound to the
application server key it subscribed with. A push to `POST /push/<id>` is checked as a real
push service checks it, and refused the way one refuses:
- `Authorization: vapid t=<JWT>, k=<key>` (RFC 8292): `k` must be the key the browser subscribed
  with, the JWT must be ES256 and verify with it, its `aud` the service's origin, its `exp` in
  the future and at most 24 h away (by the service's clock, the test's), its `sub` a `mailto:`
  or `https:` contact: else 401 (403 for a key other than the subscription's);
- `TTL` present, `Content-Encoding: aes128gcm`, a body of at most 4096 bytes (413);
- the payload is DECRYPTED (RFC 8291) with the browser's private key and auth secret
  (`http_ece`): a payload that does not decrypt is 400.
Delivered pushes are kept per browser, decrypted; `gone` endpoints answer 410 (an unsubscribed
browser) and `faults` queue statuses to answer next (e.g. 503, 429).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import http_ece
import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from multidict import CIMultiDict

MAX_BODY = 4096
MAX_EXP = timedelta(hours=24)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Browser:
    """One subscription, as `PushSubscription.toJSON()` gives it, with the private half kept here."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey
    auth_secret: bytes
    server_key: str  # the VAPID public key it subscribed with (base64url)
    received: list[dict[str, Any]] = field(default_factory=list)  # the decrypted payloads
    headers: list[CIMultiDict[str]] = field(default_factory=list)  # case-insensitive, as HTTP's

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)

    @property
    def auth(self) -> str:
        return b64url(self.auth_secret)

    def form(self) -> dict[str, str]:
        return {"endpoint": self.endpoint, "p256dh": self.p256dh, "auth": self.auth}


class FakePushService:
    def __init__(self, now: Callable[[], datetime]) -> None:
        self.now = now
        self.origin = ""  # set by the test once the server listens
        self.browsers: dict[str, Browser] = {}
        self.gone: set[str] = set()
        self.faults: dict[str, list[int]] = defaultdict(list)
        self.refused: list[tuple[int, str]] = []
        self._ids = itertools.count(1)
        self.app = web.Application()
        self.app.router.add_post("/push/{id}", self.push)

    def browser(self, server_key: str) -> Browser:
        sub_id = f"{next(self._ids)}-{b64url(os.urandom(12))}"
        key = ec.generate_private_key(ec.SECP256R1())
        found = Browser(f"{self.origin}/push/{sub_id}", key, os.urandom(16), server_key)
        self.browsers[sub_id] = found
        return found

    def _refuse(self, status: int, why: str) -> web.Response:
        self.refused.append((status, why))
        return web.Response(status=status, text=why)

    def _check_vapid(self, header: str, browser: Browser) -> str | None:
        scheme, _, params = header.partition(" ")
        if scheme.lower() != "vapid":
            return "expected the vapid scheme"
        parts = dict(p.strip().split("=", 1) for p in params.split(",") if "=" in p)
        token, key = parts.get("t", ""), parts.get("k", "")
        if key != browser.server_key:
            return "k: not the key this subscription was made with"
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
        if jwt.get_unverified_header(token).get("alg") != "ES256":
            return "the JWT must be ES256"
        try:
            claims = jwt.decode(
                token, public, algorithms=["ES256"], audience=self.origin, options={"verify_exp": False}
            )
        except jwt.InvalidTokenError as exc:
            return f"JWT: {exc}"
        exp, now = claims.get("exp"), self.now().timestamp()
        if not isinstance(exp, int) or exp <= now or exp > now + MAX_EXP.total_seconds():
            return "exp: must be in the future and within 24 hours"
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.startswith(("mailto:", "https:")):
            return "sub: a mailto: or https: contact is required"
        return None

    async def push(self, request: web.Request) -> web.Response:
        sub_id = request.match_info["id"]
        browser = self.browsers.get(sub_id)
        if browser is None:
            return self._refuse(404, "no such subscription")
        if sub_id in self.gone:
            return self._refuse(410, "unsubscribed")
        if self.faults[sub_id]:
            return self._refuse(self.faults[sub_id].pop(0), "injected fault")
        why = self._check_vapid(request.headers.get("Authorization", ""), browser)
        if why is not None:
            return self._refuse(403 if why.startswith("k:") else 401, why)
        if "TTL" not in request.headers:
            return self._refuse(400, "TTL header required")
        if request.headers.get("Content-Encoding") != "aes128gcm":
            return self._refuse(415, "Content-Encoding must be aes128gcm")
        body = await request.read()
        if len(body) > MAX_BODY:
            return self._refuse(413, "payload too large")
        try:
            plain = http_ece.decrypt(
                body, private_key=browser.private_key, auth_secret=browser.auth_secret, version="aes128gcm"
            )
        except Exception as exc:  # any failure to decrypt is the sender's fault
            return self._refuse(400, f"decryption failed: {type(exc).__name__}")
        browser.received.append(json.loads(plain))
        browser.headers.append(CIMultiDict(request.headers))
        return web.Response(status=201, headers={"Location": f"{self.origin}/message/{next(self._ids)}"})
