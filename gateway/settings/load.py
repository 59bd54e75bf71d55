"""Build `Settings`: defaults < the file < the environment < the command line, then check.

The caller gives the environment and the channel specs (`gateway.config` gives `os.environ` and
the installed plugins), so that this package imports nothing above `gateway.core`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gateway.settings.audit as audit
import gateway.settings.calendars as calendars
import gateway.settings.events as events
import gateway.settings.mcp as mcp
import gateway.settings.policies as policies
import gateway.settings.rules as rules
import gateway.settings.scheduler as scheduler
import gateway.settings.security as security
import gateway.settings.server as server
import gateway.settings.telemetry as telemetry
import gateway.settings.web as web
import gateway.settings.webpush as webpush
import gateway.settings.workers as workers
from gateway.core.errors import ConfigError
from gateway.settings.channels import ChannelSchema, load_channels
from gateway.settings.coerce import Coerce, coerce_all
from gateway.settings.oidc import declared_groups
from gateway.settings.people import GROUP_KEYS, check_group_names, identity_kinds, load_people
from gateway.settings.root import Settings
from gateway.settings.sources import Groups, config_path, env_overrides, read_toml

# Every plain section and its keys, each owned by its component's module.
SECTIONS: dict[str, dict[str, Coerce]] = {
    "server": server.SERVER_KEYS,
    "store": server.STORE_KEYS,
    "security": security.KEYS,
    "web": web.KEYS,
    "scheduler": scheduler.KEYS,
    "redaction": audit.REDACTION_KEYS,
    "audit": audit.AUDIT_KEYS,
    "retention": audit.RETENTION_KEYS,
    "mcp": mcp.MCP_KEYS,
    "mcp_gate": mcp.MCP_GATE_KEYS,
    "rules": rules.KEYS,
    "webpush": webpush.KEYS,
    "events": events.KEYS,
    "telemetry": telemetry.KEYS,
}
# the named tables: [policies.NAME], [workers.NAME], [people.NAME], [calendars.NAME], [groups.NAME]
GROUPS = ("policies", "workers", "people", "calendars", "groups")
LISTS = ("rule",)  # the arrays of tables: [[rule]]


def sections(specs: Mapping[str, ChannelSchema]) -> dict[str, Mapping[str, Coerce]]:
    """Every plain section and its keys: the core's, then each given channel's."""
    return {**SECTIONS, **{kind: spec.schema for kind, spec in specs.items()}}


def load_settings(
    path: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    *,
    specs: Mapping[str, ChannelSchema],
    defaults: Mapping[str, Any] | None = None,
    tables: Mapping[str, Mapping[str, Any]] | None = None,
    validate: bool = True,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Build Settings from defaults < file < env < overrides (command-line options). Raises
    ConfigError naming the bad key. `specs`: the channel kinds to know.

    `validate=False` skips the gateway's own checks (secret keys, store URL, channels): for the
    agent-side commands (`mcp`, `mcp-gate`), which only read `[server]`, `[mcp]` and `[mcp_gate]`
    and run where the gateway's secrets are not."""
    known = sections(specs)
    kinds = identity_kinds(specs)
    raw = read_toml(config_path(path, env))
    for section in raw:
        if section not in known and section not in GROUPS and section not in LISTS:
            raise ConfigError(section, "unknown section")
    for section, values in (defaults or {}).items():
        given = raw.get(section, {})
        if isinstance(values, list):  # an array of tables given in code (`[[rule]]`): the file's wins
            raw.setdefault(section, values)
        elif isinstance(given, dict):
            raw[section] = {**values, **given}
    for group, named in (tables or {}).items():  # named policies/workers given in code
        raw.setdefault(group, {}).update(named)
    groups: Groups = (
        ("policies", policies.NAMES),
        ("workers", tuple(workers.KEYS)),
        ("people", tuple(kinds)),
        ("calendars", calendars.NAMES),
        ("groups", tuple(GROUP_KEYS)),
    )
    raw = env_overrides(raw, env, known, groups)
    for section, values in (overrides or {}).items():
        given = raw.get(section, {})
        if isinstance(given, dict):  # else the section's own error below names it
            raw[section] = {**given, **values}
    plain = {name: coerce_all(name, raw.get(name, {}), keys) for name, keys in SECTIONS.items()}
    listen = plain["server"]
    listen.setdefault("public_url", server.own_url(listen.get("host", "127.0.0.1"), listen.get("port", 8080)))
    oidc_settings = plain["web"].get("oidc")
    identities = load_people(raw, kinds, declared_groups(oidc_settings), claimable=oidc_settings is not None)
    hours = calendars.load_calendars(raw)
    named, bounds = policies.load_policies(raw, hours)
    settings = Settings(
        server=server.ServerSettings(**plain["server"]),
        store=server.StoreSettings(**plain["store"]),
        security=security.SecuritySettings(**plain["security"], agent_policies=security.agent_policies(raw)),
        policies=named,
        policy_bounds=bounds,
        calendars=hours,
        workers=workers.load_workers(raw),
        web=web.WebSettings(**plain["web"]),
        scheduler=scheduler.SchedulerSettings(**plain["scheduler"]),
        redaction=audit.RedactionSettings(**plain["redaction"]),
        audit=audit.AuditSettings(**plain["audit"]),
        retention=audit.RetentionSettings(**plain["retention"]),
        mcp=mcp.McpSettings(**plain["mcp"]),
        mcp_gate=mcp.McpGateSettings(**plain["mcp_gate"]),
        channels=load_channels(raw, specs, check=validate),
        people=identities.people,
        identities=identities,
        webpush=webpush.WebPushSettings(**plain["webpush"]),
        events=events.load_events(plain["events"]),
        telemetry=telemetry.TelemetrySettings(**plain["telemetry"]),
        rules=rules.load_rules(plain["rules"], raw.get("rule", []), compile=validate),
    )
    if validate:
        check(settings)
    return settings


def check(settings: Settings) -> None:
    """The checks across values, each component's own, in the order a reader fixes them."""
    server.check_server(settings.server)
    server.check_store(settings.store)
    scheduler.check_scheduler(settings.scheduler, settings.store.lease)
    security.check_security(settings.security, settings.policies)
    policies.check_escalations(settings.policies, settings.enabled_channels())
    audit.check_redaction(settings.redaction)
    web.check_web(settings.web)
    webpush.check_webpush(settings.webpush)
    events.check_events(settings.events, settings.store.lease)
    telemetry.check_telemetry(settings.telemetry)
    audit.check_audit(settings.audit, settings.retention)
    rules.check_rules(settings.rules, settings.policies, settings.enabled_channels())
    check_group_names(settings)


__all__ = ["GROUPS", "LISTS", "SECTIONS", "check", "load_settings", "sections"]
