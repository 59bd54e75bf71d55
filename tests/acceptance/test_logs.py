"""No secret or token ever reaches a log, even in access lines and errors."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import aiohttp
import pytest

from gateway.telemetry.logs import SecretFilter
from gateway.testing import TEST_API_KEY, TEST_SECRET
from tests.conftest import suspend_body
from tests.procs import AUTH, Gateway, call, free_port, write_config


def test_redactor_masks_tokens_and_bearer_credentials() -> None:
    r = SecretFilter(["super-secret-value"])
    record = logging.LogRecord(
        "x",
        logging.INFO,
        __file__,
        1,
        "GET /v1/resume/%s key=%s auth=%s",
        (
            "eyJhIjoieHl6IiwiZSI6MTIzfQ.MHptCZZdq30QDJVRB45LRS4aNCh4i-AsNMed6WHnckQ",
            "super-secret-value",
            "Bearer abc.def",
        ),
        None,
    )
    r.filter(record)
    text = record.getMessage()
    assert "eyJ" not in text and "super-secret-value" not in text and "abc.def" not in text
    assert text.count("[REDACTED]") == 3


@pytest.mark.subprocess
async def test_served_logs_carry_no_secret(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port)
    gw = Gateway(config, port, tmp_path / "gw.log").start()
    try:
        async with aiohttp.ClientSession() as http:
            _, body = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(), headers=AUTH)
            token = body["resume_token"]
            await call(http, "GET", f"{gw.url}/v1/resume/{token}")
            await call(http, "GET", f"{gw.url}/v1/resume/{token}tampered")
            await call(http, "POST", f"{gw.url}/v1/resume", json={"token": token, "outcome": "approve"})
            await call(http, "GET", f"{gw.url}/v1/approvals", headers={"Authorization": "Bearer wrong-key-12345678"})
    finally:
        assert gw.terminate() == 0
    log = gw.log.read_text()
    assert "/v1/resume/" in log  # the requests were logged...
    assert re.search(r'"GET /v1/approvals HTTP/1.1" 401 .* rid=[0-9a-f]{16}', log)  # ...with their request id...
    for secret in (token, token[:40], TEST_API_KEY, TEST_SECRET, "wrong-key-12345678"):
        assert secret not in log  # ...without their secrets


def test_a_newline_in_user_input_cannot_forge_a_log_line() -> None:
    """run_id, step, `by` and comments come from API callers: one event stays one line."""
    forged = "r1\n2030-01-01 12:00:00,000 INFO  gateway.service [-] approval x approved by telegram:111"
    record = logging.LogRecord("gateway.service", logging.INFO, __file__, 1, "suspended: run=%s", (forged,), None)
    SecretFilter().filter(record)
    text = record.getMessage()
    assert "\n" not in text and "\r" not in text
    assert "r1\\n2030-01-01" in text  # still readable, visibly escaped
