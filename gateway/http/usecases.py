"""The typed application keys handlers read: the use cases, never the runtime or the store.

`gateway.http.app` sets them from the runtime; a handler reads `request.config_dict[KEY]` (the
web inbox is a sub-application: its handlers see these through the parent app).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from gateway.core.clock import Clock
from gateway.core.tokens import TokenSigner
from gateway.service import Inbound, Service
from gateway.service.audit import AuditService
from gateway.service.delegations import Delegations
from gateway.service.deliveries import Deliveries
from gateway.service.events import Webhooks
from gateway.service.grants import Grants
from gateway.service.jobs import Jobs
from gateway.service.journal import RunJournal
from gateway.service.push import PushSubscriptions
from gateway.service.queries import Reads
from gateway.service.ruleops import RuleOps
from gateway.service.websessions import WebSessions
from gateway.settings import Settings
from gateway.telemetry.metrics import Metrics

SETTINGS = web.AppKey("settings", Settings)
CLOCK = web.AppKey("clock", Clock)
SIGNER = web.AppKey("signer", TokenSigner)
SERVICE = web.AppKey("service", Service)
INBOUND = web.AppKey("inbound", Inbound)
AUDIT = web.AppKey("audit", AuditService)
READS = web.AppKey("reads", Reads)
WEB_SESSIONS = web.AppKey("web_sessions", WebSessions)
METRICS = web.AppKey("metrics", Metrics)
DELIVERIES = web.AppKey("deliveries", Deliveries)
JOBS = web.AppKey("jobs", Jobs)
JOURNAL = web.AppKey("journal", RunJournal)
GRANTS = web.AppKey("grants", Grants)
DELEGATIONS = web.AppKey("delegations", Delegations)
RULE_OPS = web.AppKey("rule_ops", RuleOps)
PUSH = web.AppKey("push", PushSubscriptions)
WEBHOOKS = web.AppKey("webhooks", Webhooks)
READY: web.AppKey[Callable[[], Awaitable[bool]]] = web.AppKey("ready")

__all__ = [
    "AUDIT",
    "CLOCK",
    "DELEGATIONS",
    "DELIVERIES",
    "GRANTS",
    "INBOUND",
    "JOBS",
    "JOURNAL",
    "METRICS",
    "PUSH",
    "READS",
    "READY",
    "RULE_OPS",
    "SERVICE",
    "SETTINGS",
    "SIGNER",
    "WEBHOOKS",
    "WEB_SESSIONS",
]
