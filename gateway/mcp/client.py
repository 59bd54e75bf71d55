"""The gateway's HTTP API as the MCP server and the gate use it (no MCP SDK here).

Both hold no state of their own: every approval, decision and journaled call lives in the
gateway. One connection pool serves the whole process; each call carries the key of the MCP
client it is made for (`HITL_API_KEY` under stdio, the client's own bearer key under streamable
HTTP), so every client is its own principal.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import aiohttp

from gateway.core.retry import backoff
from gateway.mcp.approvals import WAITING, caller_tag

Progress = Callable[[dict[str, Any], float], Awaitable[None]]  # (approval view, seconds waited)
Until = Callable[[dict[str, Any]], float]  # approval view -> when to stop waiting (time.monotonic)
Report = Callable[[float, float | None, str], Awaitable[None]]  # an MCP progress notification
# How often a waiting tool call asks the gateway again: soon at first, then less often (a
# decision shows within POLL_MAX), so that many long waits cost the gateway little.
POLL_INTERVAL = 0.25
POLL_MAX = 2.0


class GatewayCallError(Exception):
    """The gateway refused a call (`status`) or could not be reached (`status` None); the message
    says which, in words for the agent."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


MAX_TOKENS = 10_000


class Gateway:
    """The gateway's API for one MCP process: `as_caller(key)` gives a client for one caller."""

    def __init__(self, base_url: str, *, timeout: float = 30.0, poll_interval: float = POLL_INTERVAL) -> None:
        self.base_url = base_url.rstrip("/")
        self.poll_interval = poll_interval
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        # Resume tokens of the approvals this process asked for (bounded): an approval decided
        # with changes is read through its token, for the raw approved args (the API's are redacted).
        # Kept per caller (its key's tag, approval id): a token opens the raw args to whoever
        # holds it, and another caller who may read the approval (an operator) must not.
        self.tokens: dict[tuple[str, str], str] = {}

    def pool(self) -> aiohttp.ClientSession:
        if self._session is None:  # built lazily: it needs the running loop
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def as_caller(self, key: str | None) -> Caller:
        return Caller(self, key)

    async def key_is_valid(self, key: str) -> bool:
        """Whether the gateway takes `key` (it answers anything but 401 to a read with it).
        Raises GatewayCallError when the gateway cannot say (unreachable, 5xx)."""
        try:
            await self.as_caller(key).call("GET", "/v1/approvals?limit=1")
        except GatewayCallError as exc:
            if exc.status == 401:
                return False
            if exc.status is None or exc.status >= 500:
                raise
        return True


class Caller:
    """One MCP client's calls, each under its key; errors become `GatewayCallError`."""

    def __init__(self, gateway: Gateway, key: str | None) -> None:
        self.gateway = gateway
        self.tag = caller_tag(key)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def exchange(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, JSON body) of one call; a 4xx/5xx is `GatewayCallError` with the gateway's words."""
        url = self.gateway.base_url + path
        try:
            async with self.gateway.pool().request(method, url, json=body, headers=self._headers) as resp:
                data = await resp.json(content_type=None) if resp.content_length != 0 else None
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise GatewayCallError(f"the gateway at {self.gateway.base_url} is unreachable: {reason}") from None
        except ValueError:
            raise GatewayCallError(f"the gateway at {self.gateway.base_url} did not answer JSON") from None
        if status >= 300:
            err = data.get("error", {}) if isinstance(data, dict) else {}
            code, message = err.get("code", "http_error"), err.get("message", "")
            raise GatewayCallError(f"the gateway refused the request ({status} {code}): {message}", status)
        return status, data

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        return (await self.exchange(method, path, body))[1]

    async def suspend(self, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Create the approval (idempotent by key): (the body, whether it is new)."""
        status, data = await self.exchange("POST", "/v1/suspend", body)
        if isinstance(data, dict) and data.get("resume_token"):
            if len(self.gateway.tokens) >= MAX_TOKENS:
                self.gateway.tokens.pop(next(iter(self.gateway.tokens)))
            self.gateway.tokens[(self.tag, str(data["id"]))] = str(data["resume_token"])
        return data, status == 201

    async def approved(self, view: dict[str, Any]) -> dict[str, Any]:
        """`view`, with the raw approved args in its decision when an approver changed them and
        this process holds the approval's resume token (the rehydration document has them)."""
        decision = view.get("decision")
        token = self.gateway.tokens.get((self.tag, str(view.get("id"))))
        if not isinstance(decision, dict) or decision.get("args") is None or token is None:
            return view
        doc = await self.rehydrate(token)
        return {**view, "decision": doc.get("decision") or decision}

    async def approval(self, approval_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("GET", f"/v1/approvals/{quote(approval_id, safe='')}")
        return result

    async def routed(self, approval_id: str) -> dict[str, Any]:
        """What an operator's rule chose for the approval in its agent's place (its `suspended`
        event's `routed`: policy, channels, approvers), or {} when no rule routed it."""
        trail = await self.call("GET", f"/v1/approvals/{quote(approval_id, safe='')}/events")
        items = trail.get("items") if isinstance(trail, dict) else None
        first = next((e for e in items or [] if isinstance(e, dict) and e.get("kind") == "suspended"), {})
        routed = (first.get("data") or {}).get("routed")
        return routed if isinstance(routed, dict) else {}

    async def rehydrate(self, token: str) -> dict[str, Any]:
        """The rehydration document: status, decision and the raw (unredacted) args."""
        result: dict[str, Any] = await self.call("GET", f"/v1/resume/{quote(token, safe='')}")
        return result

    async def steps(self, run_id: str) -> dict[str, dict[str, Any]]:
        data = await self.call("GET", f"/v1/runs/{quote(run_id, safe='')}/steps")
        return {s["name"]: s for s in data["items"]}

    async def record_step(self, run_id: str, name: str, status: str, output: Any, error: str | None = None) -> Any:
        """Journal one step (the first `succeeded` record wins); returns the stored record.
        Retried on transient failures: losing this write would lose a forwarded call's result."""
        now = datetime.now(UTC).isoformat()
        body = {"status": status, "output": output, "started_at": now, "finished_at": now}
        if error:
            body["error"] = error[:2000]
        path = f"/v1/runs/{quote(run_id, safe='')}/steps/{quote(name, safe='')}"
        attempt = 1
        while True:
            try:
                return await self.call("PUT", path, body)
            except GatewayCallError as exc:
                transient = exc.status is None or exc.status == 429 or exc.status >= 500
                if not transient or attempt == 5:
                    raise
            await asyncio.sleep(backoff(attempt, base=0.2, cap=5.0))
            attempt += 1

    async def wait(self, view: dict[str, Any], until: Until, progress: Progress) -> dict[str, Any]:
        """Poll the approval until it is decided or `until(view)` (a time.monotonic() value) has
        passed. Never longer: a human's wait must not outlive the client's read timeout."""
        started, pause = time.monotonic(), self.gateway.poll_interval
        while view["status"] == WAITING:
            left = until(view) - time.monotonic()
            if left <= 0:
                break
            await progress(view, time.monotonic() - started)
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 1.5, POLL_MAX)
            view = await self.approval(view["id"])
        return view


def within(seconds: float) -> Until:
    """Stop waiting `seconds` from now, whatever the approval says."""
    stop = time.monotonic() + seconds
    return lambda view: stop


def progress(report: Report, total: float | None) -> Progress:
    """Progress notifications while a call waits; the approval's id rides in the message, so a
    client whose call then times out has already seen it."""

    async def tick(view: dict[str, Any], elapsed: float) -> None:
        await report(elapsed, total, f"approval {view['id']}: waiting for a human ({elapsed:.0f} s)")

    return tick


__all__ = ["Caller", "Gateway", "GatewayCallError", "progress", "within"]
