"""`[telemetry]`: checked at load, like every section; the exporter's URL."""

from __future__ import annotations

import pytest

from gateway.core.errors import ConfigError
from gateway.settings.telemetry import TelemetrySettings, check_telemetry
from gateway.testing import make_settings


def test_the_section_loads_from_the_file_s_keys(tmp_path: object) -> None:
    settings = make_settings("sqlite:///:memory:", {"telemetry": {"otlp_endpoint": "http://collector:4318"}})
    assert settings.telemetry == TelemetrySettings("http://collector:4318", "hitl-gateway")
    assert make_settings("sqlite:///:memory:", {}).telemetry.otlp_endpoint == ""


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"otlp_endpoint": "collector:4318"}, "telemetry.otlp_endpoint"),
        ({"otlp_endpoint": "ftp://collector"}, "telemetry.otlp_endpoint"),
        ({"otlp_endpoint": "http://"}, "telemetry.otlp_endpoint"),
        ({"service_name": " "}, "telemetry.service_name"),
    ],
)
def test_a_bad_value_stops_the_start_naming_the_key(values: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_telemetry(TelemetrySettings(**values))
    assert key in str(err.value)


def test_a_base_url_gets_the_traces_path_and_a_full_one_is_kept() -> None:
    tracing = pytest.importorskip("gateway.telemetry.tracing")
    assert tracing.traces_url("http://c:4318") == "http://c:4318/v1/traces"
    assert tracing.traces_url("http://c:4318/") == "http://c:4318/v1/traces"
    assert tracing.traces_url("https://c/otlp/v1/traces") == "https://c/otlp/v1/traces"


def test_no_endpoint_and_no_variable_is_no_exporter() -> None:
    from gateway.telemetry.tracing import start_exporter

    assert start_exporter(TelemetrySettings(), {}) is None
    assert start_exporter(TelemetrySettings("http://c:4318"), {"OTEL_SDK_DISABLED": "true"}) is None
