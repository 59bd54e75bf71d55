"""The settings as plain data with the secrets masked (`hitl-gateway check-config`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from gateway.core.durations import format_duration
from gateway.settings.channels import attribute
from gateway.settings.load import SECTIONS
from gateway.settings.root import Settings
from gateway.settings.workers import KEYS as WORKER_KEYS

SECRET_KEYS = frozenset(
    {
        "secret_keys",
        "api_keys",
        "operator_keys",
        "agents",
        "operators",
        "passwords",
        "secret",
        "upstream_headers",
        "signing_key",
        "private_key",
    }
)


def _mask(key: str, value: Any, secrets: frozenset[str] = SECRET_KEYS) -> Any:
    if key not in secrets:
        return value
    if isinstance(value, list | tuple):
        return [f"***({len(v)} chars)" for v in value]
    if isinstance(value, Mapping):
        return {k: "***" for k in value}
    return f"***({len(value)} chars)" if value else ""


def _plain(value: Any) -> Any:
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "masked"):  # a sub-table with its own secrets ([web.oidc])
        return value.masked()
    return value


def effective_config(settings: Settings) -> dict[str, Any]:
    """The settings as plain data with secrets masked (for `check-config`)."""
    out: dict[str, Any] = {}
    for section, keys in SECTIONS.items():
        obj = getattr(settings, section)
        out[section] = {k: _mask(k, _plain(getattr(obj, k))) for k in keys}
    out["events"]["webhooks"] = [w.shown() for w in settings.events.webhooks]
    out["security"]["agent_policies"] = {n: list(p) for n, p in settings.security.agent_policies.items()}
    for kind, channel in settings.channels.items():
        secrets = channel.spec.secrets
        section = channel.section
        out[kind] = {k: _mask(k, _plain(getattr(section, attribute(k))), secrets) for k in channel.spec.schema}
    out["people"] = {n: list(ids) for n, ids in settings.people.items()}
    out["groups"] = {n: sorted(members) for n, members in settings.identities.groups.items()}
    out["policies"] = {
        n: p.to_json() | (settings.policy_bounds[n].to_json() if n in settings.policy_bounds else {})
        for n, p in settings.policies.items()
    }
    out["calendars"] = {n: c.to_json() for n, c in settings.calendars.items()}
    out["workers"] = {
        n: {k: _mask(k, _plain(getattr(w, k))) for k in WORKER_KEYS if getattr(w, k)}
        for n, w in settings.workers.items()
    }
    return out


__all__ = ["SECRET_KEYS", "effective_config"]
