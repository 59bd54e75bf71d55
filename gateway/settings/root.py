"""`Settings`: every component's section in one frozen object, built by `gateway.settings.load`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.core.calendar import Calendar
from gateway.core.identity import WEB, Identities
from gateway.core.models import Policy
from gateway.core.policy_bounds import AgentBounds
from gateway.core.rules import RuleSet
from gateway.settings.audit import AuditSettings, RedactionSettings, RetentionSettings
from gateway.settings.channels import ChannelConfig
from gateway.settings.events import EventsSettings
from gateway.settings.mcp import McpGateSettings, McpSettings
from gateway.settings.scheduler import SchedulerSettings
from gateway.settings.security import SecuritySettings
from gateway.settings.server import ServerSettings, StoreSettings
from gateway.settings.telemetry import TelemetrySettings
from gateway.settings.web import WebSettings
from gateway.settings.webpush import WebPushSettings
from gateway.settings.workers import WorkerSettings


@dataclass(frozen=True, slots=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    security: SecuritySettings = field(default_factory=SecuritySettings)
    policies: Mapping[str, Policy] = field(default_factory=lambda: {"default": Policy()})
    workers: Mapping[str, WorkerSettings] = field(default_factory=dict)
    web: WebSettings = field(default_factory=WebSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    redaction: RedactionSettings = field(default_factory=RedactionSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    # Every installed channel kind (besides the web) with its section, whether it is on or not.
    channels: Mapping[str, ChannelConfig] = field(default_factory=dict)
    # `[people.NAME]`: one person's identities across kinds, canonical.
    people: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    identities: Identities = field(default_factory=Identities)
    mcp: McpSettings = field(default_factory=McpSettings)
    mcp_gate: McpGateSettings = field(default_factory=McpGateSettings)
    # What each named policy lets the agent choose (agent_may_set, max_timeout, min_timeout).
    policy_bounds: Mapping[str, AgentBounds] = field(default_factory=dict)
    # `[rules]` and `[[rule]]`, compiled (gateway.core.rules): evaluated at suspend.
    rules: RuleSet = field(default_factory=RuleSet)
    webpush: WebPushSettings = field(default_factory=WebPushSettings)  # Web Push to the web's approvers
    # `[calendars.NAME]`: business hours that a policy's `calendar` names (gateway.core.calendar).
    calendars: Mapping[str, Calendar] = field(default_factory=dict)
    events: EventsSettings = field(default_factory=EventsSettings)  # signed outbound events
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)  # where spans go (OTLP)

    def channel(self, kind: str) -> Any:
        """The `[<kind>]` section of an installed channel (KeyError for an unknown kind)."""
        return self.channels[kind].section

    def enabled_channels(self) -> frozenset[str]:
        return frozenset({WEB, *(kind for kind, c in self.channels.items() if c.enabled)})


__all__ = ["Settings"]
