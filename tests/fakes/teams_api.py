"""A local fake of Microsoft's side of a Teams bot, over real HTTP on loopback:

- an **issuer** that signs real RS256 tokens (a key made with `cryptography`) and serves its
  OpenID metadata and JWKS like `login.botframework.com` does (keys endorsed for `msteams`);
- the **token endpoint** (client credentials: the bot's app id and password, else 401);
- the **Bot Connector** (`/v3/conversations/...`): it refuses a call without a bearer token the
  token endpoint issued (401), an unknown conversation or activity (404), and a message over
  Teams' limit (about 28 KB, 413) or one whose card Teams would not render (a card that is not an
  Adaptive Card, an `Action.Execute` without a verb, more than 60 `refresh.userIds`: 400). It
  keeps every activity, so a test reads the card as Teams shows it.

`invoke(...)` builds the `adaptiveCard/action` activity a press sends, and `Issuer.token(...)` the
bearer token that comes with it.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.server import serve_local

APP_ID = "00000000-0000-4000-8000-00000000b071"
APP_PASSWORD = "test-app-password-0123456789"
TENANT = "11111111-1111-4111-8111-111111111111"
OTHER_TENANT = "22222222-2222-4222-8222-222222222222"
CONVERSATION = "19:cards0123456789@thread.tacv2"
ISSUER = "https://api.botframework.com"
MESSAGE_MAX = 28 * 1024  # bytes: what the Bot Connector takes for one activity
USER_IDS_MAX = 60
ADAPTIVE = "application/vnd.microsoft.card.adaptive"


def _b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    endorsements: list[str] = field(default_factory=lambda: ["msteams", "webchat"])  # the channels it signs for

    def jwk(self) -> dict[str, Any]:
        numbers = self.private.public_key().public_numbers()
        key = {"kty": "RSA", "use": "sig", "kid": self.kid, "n": _b64(numbers.n), "e": _b64(numbers.e)}
        return key | {"endorsements": self.endorsements}


class Issuer:
    """Signs tokens as the Bot Framework does; `keys` are the ones its JWKS publishes."""

    def __init__(self, now: Callable[[], float], issuer: str = ISSUER) -> None:
        self.now, self.issuer = now, issuer
        self.key = SigningKey("key-1")
        self.keys = [self.key]
        self.jwks_fetches = 0

    def token(
        self,
        service_url: str,
        *,
        audience: str = APP_ID,
        issuer: str | None = None,
        lifetime: float = 3600,
        key: SigningKey | None = None,
        kid: str | None = None,
        **claims: Any,
    ) -> str:
        now = self.now()
        body = {
            "iss": issuer or self.issuer,
            "aud": audience,
            "serviceUrl": service_url,
            "nbf": int(now) - 5,
            "iat": int(now) - 5,
            "exp": int(now + lifetime),
        } | claims
        signer = key or self.key
        return jwt.encode(body, signer.private, algorithm="RS256", headers={"kid": kid or signer.kid})

    def rotate(self, endorsements: list[str] | None = None) -> SigningKey:
        """A new key, published beside the old one (Microsoft rolls keys this way)."""
        new = SigningKey(f"key-{len(self.keys) + 1}")
        if endorsements is not None:
            new.endorsements = endorsements
        self.keys.append(new)
        return new


@dataclass
class Call:
    method: str
    path: str
    body: Any
    status: int


class FakeTeams:
    def __init__(self, now: Callable[[], float]) -> None:
        self.issuer = Issuer(now)
        self.url = ""
        self.calls: list[Call] = []
        self.tokens: set[str] = set()
        self.token_requests = 0
        self.conversations: dict[str, dict[str, dict[str, Any]]] = {CONVERSATION: {}}
        self.members: dict[str, str] = {}  # Entra object id -> Teams user id ('29:…')
        self.fail_next: list[int] = []  # statuses the next activity calls answer with (429: Retry-After 7)
        self.fail_members: list[int] = []  # statuses the next member look-ups answer with
        self._ids = itertools.count(1_700_000_000_000)
        self._runner: web.AppRunner | None = None

    # ---------------------------------------------------------------- control
    async def start(self) -> str:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_get("/openid/.well-known/openidconfiguration", self._metadata)
        app.router.add_get("/openid/keys", self._jwks)
        app.router.add_post("/token", self._token)
        app.router.add_route("*", "/connector/v3/conversations/{conversation}/activities", self._activities)
        app.router.add_route("*", "/connector/v3/conversations/{conversation}/activities/{activity}", self._activity)
        app.router.add_get("/connector/v3/conversations/{conversation}/members/{member}", self._member)
        self._runner, self.url = await serve_local(app)
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/openid/.well-known/openidconfiguration"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def service_url(self) -> str:
        return f"{self.url}/connector/"

    def section(self, **over: Any) -> dict[str, Any]:
        """The `[teams]` section of a gateway wired to this fake."""
        return {
            "app_id": APP_ID,
            "app_password": APP_PASSWORD,
            "tenant_ids": [TENANT],
            "conversations": [CONVERSATION],
            "openid_metadata": self.metadata_url,
            "token_url": self.token_url,
            "service_url": self.service_url,
        } | over

    def cards(self, conversation: str = CONVERSATION) -> dict[str, dict[str, Any]]:
        """activity id -> the Adaptive Card Teams shows there now."""
        out = {}
        for activity_id, activity in self.conversations[conversation].items():
            for a in activity.get("attachments") or []:
                if a.get("contentType") == ADAPTIVE:
                    out[activity_id] = a["content"]
        return out

    def calls_to(self, method: str, suffix: str = "", *, ok_only: bool = False) -> list[Call]:
        return [
            c for c in self.calls if c.method == method and c.path.endswith(suffix) and (c.status < 300 or not ok_only)
        ]

    # ---------------------------------------------------------------- the issuer
    async def _metadata(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.issuer.issuer,
                "authorization_endpoint": "https://invalid.botframework.com",
                "jwks_uri": f"{self.url}/openid/keys",
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            }
        )

    async def _jwks(self, request: web.Request) -> web.Response:
        self.issuer.jwks_fetches += 1
        return web.json_response({"keys": [k.jwk() for k in self.issuer.keys]})

    # ---------------------------------------------------------------- the token endpoint
    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.token_requests += 1
        if (
            form.get("grant_type") != "client_credentials"
            or form.get("client_id") != APP_ID
            or form.get("client_secret") != APP_PASSWORD
            or form.get("scope") != "https://api.botframework.com/.default"
        ):
            return web.json_response({"error": "invalid_client"}, status=401)
        token = secrets.token_urlsafe(24)
        self.tokens.add(token)
        return web.json_response({"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    # ---------------------------------------------------------------- the Bot Connector
    def _refuse(self, request: web.Request, body: Any, *, injected: bool = True) -> web.Response | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or token not in self.tokens:
            return self._record(request, body, 401, {"error": {"code": "Unauthorized"}})
        if self.fail_next and injected:
            status = self.fail_next.pop(0)
            headers = {"Retry-After": "7"} if status == 429 else {}
            return self._record(request, body, status, {"error": {"code": "Injected"}}, headers)
        conversation = unquote(request.match_info["conversation"])
        if conversation not in self.conversations:
            return self._record(request, body, 404, {"error": {"code": "ConversationNotFound"}})
        return None

    async def _read(self, request: web.Request) -> tuple[Any, int]:
        raw = await request.read()
        try:
            return (json.loads(raw) if raw else None), len(raw)
        except ValueError:
            return None, len(raw)

    async def _activities(self, request: web.Request) -> web.Response:
        body, size = await self._read(request)
        refused = self._refuse(request, body) or self._check(request, body, size)
        if refused is not None:
            return refused
        activity_id = str(next(self._ids))
        self.conversations[unquote(request.match_info["conversation"])][activity_id] = body
        return self._record(request, body, 201, {"id": activity_id})

    async def _activity(self, request: web.Request) -> web.Response:
        body, size = await self._read(request)
        refused = self._refuse(request, body) or self._check(request, body, size)
        if refused is not None:
            return refused
        kept = self.conversations[unquote(request.match_info["conversation"])]
        activity_id = unquote(request.match_info["activity"])
        if activity_id not in kept:
            return self._record(request, body, 404, {"error": {"code": "ActivityNotFound"}})
        if request.method == "PUT":
            if body.get("id") not in (None, activity_id):
                return self._record(request, body, 400, {"error": {"code": "BadArgument"}})
            kept[activity_id] = body
            return self._record(request, body, 200, {"id": activity_id})
        if request.method == "POST":  # a reply in the thread
            reply_id = str(next(self._ids))
            kept[reply_id] = body
            return self._record(request, body, 201, {"id": reply_id})
        return self._record(request, body, 405, {})

    async def _member(self, request: web.Request) -> web.Response:
        refused = self._refuse(request, None, injected=False)
        if refused is not None:
            return refused
        if self.fail_members:
            return self._record(request, None, self.fail_members.pop(0), {"error": {"code": "Injected"}})
        oid = unquote(request.match_info["member"]).lower()
        if oid not in self.members:
            return self._record(request, None, 404, {"error": {"code": "MemberNotFound"}})
        return self._record(request, None, 200, {"id": self.members[oid], "aadObjectId": oid, "name": oid[:8]})

    def _check(self, request: web.Request, body: Any, size: int) -> web.Response | None:
        """What Teams refuses in a message: too big, or a card it cannot render."""
        if size > MESSAGE_MAX:
            return self._record(request, body, 413, {"error": {"code": "MessageSizeTooBig"}})
        if not isinstance(body, dict) or body.get("type") != "message":
            return self._record(request, body, 400, {"error": {"code": "BadArgument"}})
        for a in body.get("attachments") or []:
            if a.get("contentType") != ADAPTIVE or not _renders(a.get("content")):
                return self._record(request, body, 400, {"error": {"code": "BadArgument", "message": "card"}})
        if not body.get("attachments") and not body.get("text"):
            return self._record(request, body, 400, {"error": {"code": "BadArgument", "message": "empty"}})
        return None

    def _record(
        self, request: web.Request, body: Any, status: int, reply: dict[str, Any], headers: dict[str, str] | None = None
    ) -> web.Response:
        self.calls.append(Call(request.method, request.path, body, status))
        return web.json_response(reply, status=status, headers=headers)


def _actions(element: Any) -> Iterator[dict[str, Any]]:
    """Every action of a card, in show-cards and the refresh too."""
    if isinstance(element, dict):
        if str(element.get("type", "")).startswith("Action."):
            yield element
        for value in element.values():
            yield from _actions(value)
    elif isinstance(element, list):
        for value in element:
            yield from _actions(value)


def _renders(card: Any) -> bool:
    if not isinstance(card, dict) or card.get("type") != "AdaptiveCard" or card.get("version") != "1.5":
        return False
    refresh = card.get("refresh")
    if refresh is not None and len(refresh.get("userIds") or []) > USER_IDS_MAX:
        return False
    return all(a.get("verb") for a in _actions(card) if a.get("type") == "Action.Execute")


def invoke(
    *,
    verb: str,
    data: dict[str, Any],
    service_url: str,
    user: str,
    mri: str = "29:1user",
    name: str = "Alice",
    tenant: str = TENANT,
    conversation: str = CONVERSATION,
    card_id: str = "",
    activity_id: str | None = None,
) -> dict[str, Any]:
    """The `adaptiveCard/action` invoke Teams sends when `user` presses `verb` on a card."""
    return {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "id": activity_id or f"f:{secrets.token_hex(8)}",
        "channelId": "msteams",
        "serviceUrl": service_url,
        "timestamp": "2030-01-01T12:00:00.000Z",
        "from": {"id": mri, "name": name, "aadObjectId": user},
        "recipient": {"id": f"28:{APP_ID}", "name": "HITL"},
        "conversation": {
            "id": f"{conversation};messageid={card_id or '1'}",
            "conversationType": "channel",
            "tenantId": tenant,
            "isGroup": True,
        },
        "channelData": {"tenant": {"id": tenant}, "channel": {"id": conversation}},
        "replyToId": card_id,
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}, "trigger": "manual"},
    }
