"""The Bot Connector REST API: a token from the token endpoint (client credentials, cached until
shortly before it expires), then JSON calls with `Authorization: Bearer`.

Failures become `DeliveryError`: 429 waits `Retry-After`, 5xx and network errors are retried,
401 drops the cached token and is retried with a new one, and anything else (403 the bot is
not in the conversation, 404 conversation not found, 400, 413 card too big) is terminal.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import aiohttp

from gateway.plugin import DeliveryError

log = logging.getLogger("adapters.teams")
SCOPE = "https://api.botframework.com/.default"
TIMEOUT_SECONDS = 10
EARLY = timedelta(minutes=5)  # a token is renewed this long before it expires


class ConnectorError(DeliveryError):
    """A Bot Connector call that failed; `status` is its HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int, *, transient: bool, retry_after: float | None = None) -> None:
        super().__init__(message, transient=transient, retry_after=retry_after, unsent=status != 0)
        self.status = status

    @property
    def too_big(self) -> bool:
        return self.status == 413


def classify(what: str, status: int, retry_after: str | None) -> ConnectorError:
    message = f"teams {what}: HTTP {status}"
    if status == 429:
        return ConnectorError(message, status, transient=True, retry_after=_seconds(retry_after))
    if status >= 500 or status == 401:  # 401: the token is dropped, and a new one asked for next time
        return ConnectorError(message, status, transient=True)
    return ConnectorError(message, status, transient=False)


def _seconds(header: str | None) -> float | None:
    try:
        value = float((header or "").strip())
    except ValueError:
        return None
    return value if 0 <= value < 86400 else None


class Connector:
    def __init__(
        self,
        *,
        app_id: str,
        app_password: str,
        token_url: str,
        service_url: str,
        session: Callable[[], aiohttp.ClientSession],
        now: Callable[[], datetime],
    ) -> None:
        self._app_id, self._password, self._token_url = app_id, app_password, token_url
        self.service_url = service_url if service_url.endswith("/") else service_url + "/"
        self._session, self._now = session, now
        self._token: tuple[str, datetime] | None = None
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        cached = self._token
        if cached is not None and self._now() < cached[1]:
            return cached[0]
        async with self._lock:
            if self._token is None or self._now() >= self._token[1]:
                self._token = await self._fetch_token()
            return self._token[0]

    async def _fetch_token(self) -> tuple[str, datetime]:
        form = {
            "grant_type": "client_credentials",
            "client_id": self._app_id,
            "client_secret": self._password,
            "scope": SCOPE,
        }
        try:
            async with self._session().post(
                self._token_url, data=form, timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
            ) as resp:
                if resp.status != 200:
                    raise classify("token", resp.status, resp.headers.get("Retry-After"))
                data = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ConnectorError(f"teams token: {type(exc).__name__}", 0, transient=True) from None
        token, expires = data.get("access_token"), data.get("expires_in")
        if not isinstance(token, str) or not token or not isinstance(expires, int | float):
            raise ConnectorError("teams token: no access_token in the answer", 200, transient=False)
        return token, self._now() + timedelta(seconds=float(expires)) - EARLY

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One call to `{service_url}v3/{path}`; its JSON answer ({} when empty)."""
        headers = {"Authorization": f"Bearer {await self.token()}"}
        url = self.service_url + "v3/" + path
        try:
            async with self._session().request(
                method, url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
            ) as resp:
                if resp.status == 401:
                    self._token = None
                if resp.status >= 300:
                    raise classify(f"{method} {path.split('/')[-1][:40]}", resp.status, resp.headers.get("Retry-After"))
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError) as exc:
            # the request may have reached Teams: a post in this state is `uncertain`
            raise DeliveryError(f"teams {method}: {type(exc).__name__}", transient=True, uncertain=True) from None
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    async def post(self, conversation: str, activity: dict[str, Any]) -> str:
        data = await self.call("POST", f"conversations/{quote(conversation, safe='')}/activities", activity)
        activity_id = data.get("id")
        if not isinstance(activity_id, str) or not activity_id:
            raise ConnectorError("teams post: the answer names no activity id", 200, transient=False)
        return activity_id

    async def update(self, conversation: str, activity_id: str, activity: dict[str, Any]) -> None:
        path = f"conversations/{quote(conversation, safe='')}/activities/{quote(activity_id, safe='')}"
        await self.call("PUT", path, {**activity, "id": activity_id})

    async def reply(self, conversation: str, activity_id: str, activity: dict[str, Any]) -> None:
        """A reply in the card's thread."""
        path = f"conversations/{quote(conversation, safe='')}/activities/{quote(activity_id, safe='')}"
        await self.call("POST", path, {**activity, "replyToId": activity_id})

    async def member(self, conversation: str, object_id: str) -> str | None:
        """The Teams user id ('29:…') of a member given by Entra object id, or None when Teams
        says they are not one; a transient failure is raised (DeliveryError)."""
        try:
            data = await self.call("GET", f"conversations/{quote(conversation, safe='')}/members/{quote(object_id)}")
        except DeliveryError as exc:
            if exc.transient:
                raise
            log.info("teams: member %s not found in the conversation (%s)", object_id, exc)
            return None
        found = data.get("id")
        return found if isinstance(found, str) and found else None


__all__ = ["Connector", "ConnectorError", "classify"]
