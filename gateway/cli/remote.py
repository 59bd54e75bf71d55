"""`hitl-gateway --url URL ...`: the operator commands over the HTTP API, with an operator key.

No database credentials: whoever holds an operator key operates a deployment (its PostgreSQL
replicas included) from anywhere that reaches it. The CLI only speaks HTTP to it; it imports
nothing of the server's HTTP layer."""

from __future__ import annotations

from types import TracebackType
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp

from gateway.cli.ops import Json


class ServerRefused(Exception):
    """The server answered with an error: its status, the API's error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message


class ServerUnreachable(Exception):
    """No answer from the server at all (refused, unknown host, timeout), or not the gateway's API."""


def check_url(url: str) -> str:
    """The base URL without a trailing slash; ValueError unless it is http(s)://host[:port][/path]."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--url must be an http:// or https:// address, not {url!r}")
    return url.rstrip("/")


class RemoteOps:
    """`gateway.cli.ops.Operations` over the /v1 API (docs/reference/http.md)."""

    def __init__(self, url: str, key: str, timeout: float = 30.0) -> None:
        self.url, self._key = check_url(url), key
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def __aenter__(self) -> RemoteOps:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._session.close()

    async def _call(self, method: str, path: str, body: Json | None = None, query: Json | None = None) -> Any:
        params = {k: str(v) for k, v in (query or {}).items() if v is not None}
        headers = {"Authorization": f"Bearer {self._key}"}
        try:
            async with self._session.request(
                method, self.url + path, json=body, params=params, headers=headers
            ) as resp:
                try:
                    data = await resp.json(content_type=None)
                except ValueError:
                    data = None
                status, reason = resp.status, resp.reason or ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ServerUnreachable(f"cannot reach {self.url}: {str(exc) or type(exc).__name__}") from None
        if status >= 300:
            err = data.get("error") if isinstance(data, dict) else None
            if not isinstance(err, dict):  # some other server, or a proxy's error page
                raise ServerRefused(status, f"http_{status}", f"{reason} from {self.url + path} (is it the gateway?)")
            raise ServerRefused(status, str(err.get("code", f"http_{status}")), str(err.get("message", reason)))
        if not isinstance(data, dict):
            raise ServerUnreachable(f"{self.url + path} did not answer JSON: is {self.url} the gateway?")
        return data

    async def approvals(self, status: str | None, run_id: str | None, limit: int) -> list[Json]:
        data = await self._call("GET", "/v1/approvals", query={"status": status, "run_id": run_id, "limit": limit})
        return list(data["items"])

    async def show(self, approval_id: str) -> Json:
        path = f"/v1/approvals/{quote(approval_id, safe='')}"
        view: Json = await self._call("GET", path)
        return {**view, "events": (await self._call("GET", path + "/events"))["items"]}

    async def decide(self, approval_id: str, outcome: str, by: str | None, comment: str | None) -> Json:
        body = {"outcome": outcome} | ({"by": by} if by else {}) | ({"comment": comment} if comment else {})
        view: Json = await self._call("POST", f"/v1/approvals/{quote(approval_id, safe='')}/decision", body)
        return view

    async def decide_many(self, ids: list[str], outcome: str, comment: str | None) -> list[Json]:
        items = [{"id": i, "outcome": outcome} | ({"comment": comment} if comment else {}) for i in ids]
        data = await self._call("POST", "/v1/approvals/decisions", {"items": items})
        return list(data["items"])

    async def cancel(self, approval_id: str, by: str | None, reason: str | None) -> Json:
        body = ({"by": by} if by else {}) | ({"reason": reason} if reason else {})
        view: Json = await self._call("POST", f"/v1/approvals/{quote(approval_id, safe='')}/cancel", body)
        return view

    async def jobs(self, status: str | None, limit: int) -> list[Json]:
        data = await self._call("GET", "/v1/jobs", query={"status": status, "limit": limit})
        return list(data["items"])

    async def retry(self, approval_id: str, by: str | None) -> Json:
        job: Json = await self._call(
            "POST", f"/v1/approvals/{quote(approval_id, safe='')}/retry", {"by": by} if by else {}
        )
        return job

    async def delegations(self, of: str | None, everything: bool) -> list[Json]:
        data = await self._call("GET", "/v1/delegations", query={"of": of, "all": "true" if everything else None})
        return list(data["items"])

    async def delegation(self, delegation_id: str) -> Json:
        view: Json = await self._call("GET", f"/v1/delegations/{quote(delegation_id, safe='')}")
        return view

    async def delegate(self, body: Json) -> Json:
        view: Json = await self._call("POST", "/v1/delegations", body)
        return view

    async def revoke_delegation(self, delegation_id: str) -> Json:
        view: Json = await self._call("DELETE", f"/v1/delegations/{quote(delegation_id, safe='')}")
        return view

    async def resend_events(self, approval_id: str, body: Json) -> Json:
        answer: Json = await self._call("POST", f"/v1/approvals/{quote(approval_id, safe='')}/events/resend", body)
        return answer
