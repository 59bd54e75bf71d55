"""The typed application keys handlers read: the use cases, never the runtime or the store.

`gateway.http.app` sets them from the runtime; a handler reads `request.config_dict[KEY]` (the
web inbox is a sub-application: its handlers see these through the parent app).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web

from gateway.core.clock import Clock
from gateway.core.tokens import TokenSigner
from gateway.service import Inbound, Service
from gateway.service.audit import AuditService
from gateway.service.queries import Reads
from gateway.service.websessions import WebSessions
from gateway.settings import Settings
from gateway.telemetry.metrics import Metrics


class ResendCard(Protocol):
    """Queue a card's post again (operators' repair: the API, the dashboard, the CLI)."""

    async def __call__(
        self, approval_id: str, channel: str, actor: str, *, on_behalf_of: str | None = None
    ) -> None: ...


SETTINGS = web.AppKey("settings", Settings)
CLOCK = web.AppKey("clock", Clock)
SIGNER = web.AppKey("signer", TokenSigner)
SERVICE = web.AppKey("service", Service)
INBOUND = web.AppKey("inbound", Inbound)
AUDIT = web.AppKey("audit", AuditService)
READS = web.AppKey("reads", Reads)
WEB_SESSIONS = web.AppKey("web_sessions", WebSessions)
METRICS = web.AppKey("metrics", Metrics)
RESEND_CARD: web.AppKey[ResendCard] = web.AppKey("resend_card")
READY: web.AppKey[Callable[[], Awaitable[bool]]] = web.AppKey("ready")

__all__ = [
    "AUDIT",
    "CLOCK",
    "INBOUND",
    "METRICS",
    "READS",
    "READY",
    "RESEND_CARD",
    "SERVICE",
    "SETTINGS",
    "SIGNER",
    "WEB_SESSIONS",
    "ResendCard",
]
