"""`[telemetry]`: where the gateway's OpenTelemetry spans go (docs/traces.md)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, string


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """`otlp_endpoint`: an OTLP/HTTP collector (a base URL gets /v1/traces); empty: no exporter
    unless OTEL_EXPORTER_OTLP_ENDPOINT is set. `service_name`: the spans' service.name."""

    otlp_endpoint: str = ""
    service_name: str = "hitl-gateway"


KEYS: dict[str, Coerce] = {"otlp_endpoint": string, "service_name": string}


def check_telemetry(telemetry: TelemetrySettings) -> None:
    if telemetry.otlp_endpoint:
        parts = urlsplit(telemetry.otlp_endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError("telemetry.otlp_endpoint", "must be an http:// or https:// URL")
    if not telemetry.service_name.strip():
        raise ConfigError("telemetry.service_name", "must not be empty")


__all__ = ["KEYS", "TelemetrySettings", "check_telemetry"]
