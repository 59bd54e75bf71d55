"""A local fake of the Discord HTTP API, and of Discord sending interactions, on loopback.

Serves what the channel calls (`/api/v10/channels/{id}/messages`, their edits, and an
interaction's webhook: `PATCH /webhooks/{app}/{token}/messages/@original` and follow-ups),
checks the bot token, refuses what Discord refuses (`discord_limits.py`: 400, code 50035),
honours `enforce_nonce`, and injects 429 with `retry_after` or 5xx on demand.

It also plays Discord's side of an interaction: `deliver` signs it with a test Ed25519 key and
POSTs it to the gateway, times the answer against Discord's 3 s (a late or invalid answer is a
failure: `failures`), and only then accepts the interaction's webhook calls, for 15 minutes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientResponse, web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from adapters.discord.verify import sign
from tests.fakes.discord_limits import message_error, response_error
from tests.fakes.server import serve_local

BOT_TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GhIjKl.test-bot-token-0123456789abcdefghij"
APPLICATION_ID = "1098765432109876543"
GUILD_ID = "1200000000000000001"
OTHER_GUILD = "1200000000000000999"
SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))  # the application's, in tests
PUBLIC_KEY = SIGNING_KEY.public_key().public_bytes_raw().hex()
WINDOW = 3.0  # seconds Discord waits for an interaction's answer
TOKEN_LIFETIME = 15 * 60
Post = Callable[..., Awaitable[ClientResponse]]


@dataclass
class Call:
    verb: str
    path: str
    body: Any
    status: int


@dataclass
class Pending:
    """An interaction Discord sent: its card, and how (and whether) it was answered in time."""

    payload: dict[str, Any]
    sent_at: float
    answer: dict[str, Any] | None = None
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def acked(self) -> bool:
        return self.answer is not None and self.answer.get("type") in (4, 5, 6, 7)


@dataclass
class Delivered:
    status: int
    body: Any
    seconds: float


class FakeDiscord:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock  # signature timestamps and token lifetimes (tests use their FakeClock)
        self.window = WINDOW
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.edits: list[tuple[str, str, dict[str, Any]]] = []  # (channel, message, body), by bot or webhook
        self.followups: list[tuple[str, dict[str, Any]]] = []  # (user id, body)
        self.failures: list[str] = []  # interactions that failed, as the user would see them
        self.faults: dict[str, deque[tuple[int, float | None]]] = defaultdict(deque)
        self.pending: dict[str, Pending] = {}  # by interaction token
        self._nonces: dict[tuple[str, str], str] = {}
        self._ids = itertools.count(1_300_000_000_000_000_001)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ---------------------------------------------------------------- control
    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/api/v10/channels/{channel}/messages", self._post)
        app.router.add_patch("/api/v10/channels/{channel}/messages/{message}", self._patch)
        app.router.add_patch("/api/v10/webhooks/{app}/{token}/messages/@original", self._edit_original)
        app.router.add_post("/api/v10/webhooks/{app}/{token}", self._follow_up)
        self._runner, self.url = await serve_local(app)
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"{self.url}/api/v10"

    def fail(self, route: str, status: int = 429, *, retry_after: float | None = None, times: int = 1) -> None:
        """The next `times` calls of `route` ('post', 'patch') fail like this."""
        for _ in range(times):
            self.faults[route].append((status, retry_after))

    def calls_to(self, verb: str, part: str) -> list[Call]:
        return [c for c in self.calls if c.verb == verb and part in c.path]

    def cards(self, channel: str) -> list[tuple[str, dict[str, Any]]]:
        return [(m, body) for (c, m), body in self.messages.items() if c == channel]

    def replies(self, user: str) -> list[str]:
        return [str(body.get("content")) for u, body in self.followups if u == user]

    # ---------------------------------------------------------------- Discord's side of an interaction
    def interaction(
        self,
        kind: int,
        user: str,
        *,
        custom_id: str = "",
        channel: str = "",
        message: str = "",
        guild: str | None = GUILD_ID,
        values: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """An interaction payload as Discord sends it (type 1 PING, 3 a press, 5 a modal submit)."""
        iid = str(next(self._ids))
        payload: dict[str, Any] = {
            "id": iid,
            "application_id": APPLICATION_ID,
            "type": kind,
            "token": f"itoken-{iid}",
            "version": 1,
        }
        if kind == 1:
            return payload
        person = {"id": user, "username": f"user{user[-4:]}", "global_name": f"User {user[-4:]}"}
        if guild is not None:
            payload["guild_id"] = guild
            payload["member"] = {"user": person, "roles": []}
        else:
            payload["user"] = person
        payload["channel_id"] = channel
        if message:
            payload["message"] = {"id": message, "channel_id": channel}
        if kind == 3:
            payload["data"] = {"custom_id": custom_id, "component_type": 2}
        else:
            rows = [
                {"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]} for k, v in (values or {}).items()
            ]
            payload["data"] = {"custom_id": custom_id, "components": rows}
        return payload

    def signed(
        self, payload: dict[str, Any], *, at: float | None = None, key: Ed25519PrivateKey = SIGNING_KEY
    ) -> tuple[bytes, dict[str, str]]:
        body = json.dumps(payload, separators=(",", ":")).encode()
        ts = str(int(self.clock() if at is None else at))
        headers = {
            "Content-Type": "application/json",
            "X-Signature-Ed25519": sign(key, ts, body),
            "X-Signature-Timestamp": ts,
        }
        return body, headers

    async def deliver(self, post: Post, path: str, payload: dict[str, Any], **sign: Any) -> Delivered:
        """POST the signed interaction to the gateway as Discord would, and judge the answer."""
        body, headers = self.signed(payload, **sign)
        pending = Pending(payload, self.clock())
        token = str(payload.get("token", ""))
        self.pending[token] = pending
        started = time.monotonic()
        resp = await post(path, data=body, headers=headers)
        text = await resp.text()
        seconds = time.monotonic() - started
        try:
            answer = json.loads(text) if text else None
        except ValueError:
            answer = None
        if resp.status == 200:
            error = response_error(answer, int(payload.get("type", 0)))
            if seconds > self.window:
                self.failures.append(f"{payload['id']}: answered after {seconds:.2f} s")
            elif error:
                self.failures.append(f"{payload['id']}: {error}")
            else:
                pending.answer = answer
        else:
            self.failures.append(f"{payload['id']}: HTTP {resp.status}")
        pending.answered.set()
        return Delivered(resp.status, answer, seconds)

    # ---------------------------------------------------------------- the API
    def _record(self, request: web.Request, body: Any, response: web.Response) -> web.Response:
        self.calls.append(Call(request.method, request.path, body, response.status))
        return response

    @staticmethod
    def _error(status: int, message: str, code: int = 0) -> web.Response:
        return web.json_response({"message": message, "code": code}, status=status)

    def _invalid(self, error: str) -> web.Response:
        return web.json_response({"message": "Invalid Form Body", "code": 50035, "errors": {"_": error}}, status=400)

    async def _api(self, request: web.Request, route: str) -> tuple[Any, web.Response | None]:
        """The body, or the response that refuses the call (a bad token, an injected fault)."""
        body = await request.json() if request.can_read_body else None
        if route in ("post", "patch") and request.headers.get("Authorization") != f"Bot {BOT_TOKEN}":
            return body, self._record(request, body, self._error(401, "401: Unauthorized"))
        queue = self.faults.get(route)
        if queue:
            status, retry_after = queue.popleft()
            if status == 429:
                wait = 1.0 if retry_after is None else retry_after
                payload = {"message": "You are being rate limited.", "retry_after": wait, "global": False}
                resp = web.json_response(payload, status=429, headers={"Retry-After": str(int(wait) + 1)})
            else:
                resp = web.Response(status=status, text="upstream connect error")
            return body, self._record(request, body, resp)
        return body, None

    async def _post(self, request: web.Request) -> web.Response:
        body, refused = await self._api(request, "post")
        if refused is not None:
            return refused
        channel = request.match_info["channel"]
        if error := message_error(body):
            return self._record(request, body, self._invalid(error))
        nonce = body.get("nonce")
        if body.get("enforce_nonce") and nonce and (channel, str(nonce)) in self._nonces:
            message = self._nonces[(channel, str(nonce))]
            return self._record(request, body, web.json_response(self._message(channel, message)))
        message = str(next(self._ids))
        if nonce:
            self._nonces[(channel, str(nonce))] = message
        self.messages[(channel, message)] = dict(body)
        return self._record(request, body, web.json_response(self._message(channel, message)))

    def _message(self, channel: str, message: str) -> dict[str, Any]:
        return {"id": message, "channel_id": channel, **self.messages[(channel, message)]}

    async def _patch(self, request: web.Request) -> web.Response:
        body, refused = await self._api(request, "patch")
        if refused is not None:
            return refused
        channel, message = request.match_info["channel"], request.match_info["message"]
        return self._record(request, body, self._edit(channel, message, body))

    def _edit(self, channel: str, message: str, body: Any) -> web.Response:
        if (channel, message) not in self.messages:
            return self._error(404, "Unknown Message", 10008)
        if error := message_error(body, partial=True):
            return self._invalid(error)
        self.messages[(channel, message)] = {**self.messages[(channel, message)], **body}
        self.edits.append((channel, message, dict(body)))
        return web.json_response(self._message(channel, message))

    async def _interaction(self, request: web.Request) -> Pending | web.Response:
        """The interaction a webhook call names, once Discord has its answer (it is on the wire
        before the gateway's follow-ups start), if the answer came in time and the token lives."""
        pending = self.pending.get(request.match_info["token"])
        if request.match_info["app"] != APPLICATION_ID or pending is None:
            return self._error(404, "Unknown Webhook", 10015)
        await asyncio.wait_for(pending.answered.wait(), 5)
        if not pending.acked:
            return self._error(404, "Unknown Webhook", 10015)  # the interaction failed
        if self.clock() - pending.sent_at > TOKEN_LIFETIME:
            return self._error(401, "Invalid Webhook Token", 50027)
        return pending

    async def _edit_original(self, request: web.Request) -> web.Response:
        body, _ = await self._api(request, "original")
        found = await self._interaction(request)
        if isinstance(found, web.Response):
            return self._record(request, body, found)
        message = found.payload.get("message") or {}
        channel, mid = str(message.get("channel_id", "")), str(message.get("id", ""))
        return self._record(request, body, self._edit(channel, mid, body))

    async def _follow_up(self, request: web.Request) -> web.Response:
        body, _ = await self._api(request, "followup")
        found = await self._interaction(request)
        if isinstance(found, web.Response):
            return self._record(request, body, found)
        if error := message_error(body):
            return self._record(request, body, self._invalid(error))
        person = (found.payload.get("member") or {}).get("user") or found.payload.get("user") or {}
        self.followups.append((str(person.get("id")), dict(body)))
        return self._record(request, body, web.json_response({"id": str(next(self._ids)), **body}))
