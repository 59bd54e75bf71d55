"""GatewayClient: the gateway's HTTP API for agents (suspend, get, decide, rehydrate, journal)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypedDict, Unpack
from urllib.parse import quote

import aiohttp

from hitl_sdk import traces

__all__ = ["GatewayClient", "GatewayHTTPError", "SuspendOptions"]


class SuspendOptions(TypedDict, total=False):
    """The optional fields of a suspend, as `POST /v1/suspend` names them (the gateway's
    tests/unit/test_api_contract.py holds them to its schema). `extra`: further fields passed as
    they are."""

    summary: str
    state: Any
    channels: Sequence[str]
    approvers: Sequence[str]
    policy: str | dict[str, Any] | None
    worker: str | None
    args_schema: dict[str, Any] | None  # JSON Schema 2020-12 the args and every edit must validate
    editable: bool | Sequence[str]  # True, or the top-level args an approver may change
    code_version: str | None  # the agent code suspending (a worker's `accepts` globs must match it)
    requested_by: str | None  # who asked, as the cards show it
    deadline: str | None  # RFC 3339 with an offset, where the policy lets the agent set the timeout
    context: dict[str, Any] | None  # what the agent says about the call, for the gateway's rules (untrusted)
    # the W3C trace context the approval's spans and worker continue; default: the current
    # OpenTelemetry span's, when opentelemetry-api is installed
    traceparent: str | None
    tracestate: str | None
    extra: dict[str, Any] | None


class GatewayHTTPError(Exception):
    """A non-2xx reply. `transient` (429 or 5xx) errors are retried by `DurableRun.step`."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status, self.code, self.message = status, code, message

    @property
    def transient(self) -> bool:
        return self.status == 429 or self.status >= 500


class GatewayClient:
    """Async client. `api_key` authenticates agent calls; `resume_token` (inside a worker) opens
    the rehydration document and the journal of that run only."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        resume_token: str | None = None,
        session: aiohttp.ClientSession | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key, self.resume_token = api_key, resume_token
        self._session, self._owns = session, session is None
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def __aenter__(self) -> GatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None and self._owns:
            await self._session.close()
        self._session = None

    def _headers(self) -> dict[str, str]:
        headers = {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self.resume_token:
            headers["X-HITL-Resume-Token"] = self.resume_token
        return headers

    async def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        sent = self._headers() | (headers or {})
        async with self._session.request(method, self.base_url + path, json=body, headers=sent) as resp:
            data = await resp.json(content_type=None) if resp.content_length != 0 else None
            if resp.status >= 300:
                err = (data or {}).get("error", {}) if isinstance(data, dict) else {}
                raise GatewayHTTPError(
                    resp.status, err.get("code", "http_error"), err.get("message", resp.reason or "")
                )
            return data

    async def suspend(
        self,
        *,
        run_id: str,
        step: str,
        title: str,
        args: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Unpack[SuspendOptions],
    ) -> dict[str, Any]:
        """Create the approval (idempotent by key). Returns id, status, resume_token, deadline."""
        body: dict[str, Any] = {
            "run_id": run_id,
            "step": step,
            "title": title,
            "summary": options.get("summary", ""),
            "args": args or {},
            "state": options.get("state"),
            "channels": list(options.get("channels", ("web",))),
        }
        optional: dict[str, Any] = {
            "approvers": list(options.get("approvers", ())),
            "policy": options.get("policy"),
            "worker": options.get("worker"),
            # the agent code suspending, for the workers' `accepts` (DurableRun fills it too)
            "code_version": options.get("code_version") or os.environ.get("HITL_CODE_VERSION"),
            "idempotency_key": idempotency_key,
            "args_schema": options.get("args_schema"),
            "requested_by": options.get("requested_by"),
            "deadline": options.get("deadline"),
            "context": options.get("context"),
        }
        editable = options.get("editable")
        if editable:
            optional["editable"] = editable if isinstance(editable, bool) else list(editable)
        body.update({k: v for k, v in optional.items() if v})
        given = {k: options.get(k) for k in ("traceparent", "tracestate")}
        body.update({k: v for k, v in given.items() if v} if given["traceparent"] else {})
        body.update(options.get("extra") or {})
        # The current span's context goes as the standard headers, which a gateway too old to
        # know them ignores (a body field it would refuse).
        headers = {} if given["traceparent"] else traces.current_carrier()
        result: dict[str, Any] = await self.request("POST", "/v1/suspend", body, headers)
        return result

    async def get(self, approval_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", f"/v1/approvals/{quote(approval_id, safe='')}")
        return result

    async def decide(
        self,
        approval_id: str,
        outcome: str,
        by: str | None = None,
        comment: str | None = None,
        args: dict[str, Any] | None = None,
        args_hash: str | None = None,
    ) -> dict[str, Any]:
        """Decide as this client's operator key (an agent key gets 403 operator_required); `by`
        is kept as `on_behalf_of`, never as who decided. `args`: approve with changes (the
        edited args; the approval must allow them, `editable`). `args_hash`: the approval's
        `current_args_hash` as read: an approve on args another approver changed since is a 409
        `stale_round` (nothing recorded)."""
        body: dict[str, Any] = {"outcome": outcome, **({"by": by} if by else {})}
        body |= ({"comment": comment} if comment else {}) | ({"args": args} if args is not None else {})
        body |= {"args_hash": args_hash} if args_hash else {}
        result: dict[str, Any] = await self.request(
            "POST", f"/v1/approvals/{quote(approval_id, safe='')}/decision", body
        )
        return result

    async def rehydrate(self, token: str | None = None) -> dict[str, Any]:
        """The rehydration document (raw args and state) for a resume token."""
        result: dict[str, Any] = await self.request("GET", f"/v1/resume/{quote(token or self.resume_token or '')}")
        return result

    async def steps(self, run_id: str) -> list[dict[str, Any]]:
        data = await self.request("GET", f"/v1/runs/{quote(run_id, safe='')}/steps")
        return list(data["items"])

    async def record_step(self, run_id: str, name: str, record: dict[str, Any]) -> dict[str, Any]:
        path = f"/v1/runs/{quote(run_id, safe='')}/steps/{quote(name, safe='')}"
        result: dict[str, Any] = await self.request("PUT", path, record)
        return result
