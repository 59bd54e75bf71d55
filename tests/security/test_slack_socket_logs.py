"""Slack's client library is kept at WARNING whatever the gateway's log level (`quiet_loggers`):
at DEBUG, its Socket Mode client writes every message it receives whole, and an interaction's
payload carries the `response_url` (a capability: for 30 minutes, whoever holds it can post in
the channel as the app and replace the card pressed) and the app's verification `token`. Neither
is shaped like anything the log filter masks, so they must not be written at all, even with the
gateway at DEBUG."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from adapters.slack.spec import SPEC
from gateway.config import Settings
from gateway.core.models import Status
from gateway.telemetry.logs import setup_logging
from gateway.testing import FakeClock
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_socket import APP_TOKEN
from tests.slack.conftest import fake_slack  # noqa: F401  (the fixture)
from tests.slack.test_socket_mode import socket_settings, start_gateway

VERIFICATION_TOKEN = "legacyVerificationToken0123"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name} {record.getMessage()}")


@pytest.fixture
def debug_logs() -> Iterator[Lines]:
    """The gateway's logging at DEBUG, as `hitl-gateway serve` sets it up with Slack enabled (its
    levels and its redaction; the lines collected here instead of written to stderr)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {name: logging.getLogger(name).level for name in SPEC.quiet_loggers}
    redactor = setup_logging("DEBUG", [APP_TOKEN], SPEC.secret_patterns, SPEC.quiet_loggers)
    root.handlers[:] = handlers
    lines = Lines()
    lines.addFilter(redactor)
    root.addHandler(lines)
    yield lines
    root.removeHandler(lines)
    root.setLevel(level)
    for name, was in quiet.items():
        logging.getLogger(name).setLevel(was)


async def test_socket_mode_payloads_are_not_logged_at_debug(
    debug_logs: Lines,
    aiohttp_client: Callable[..., object],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
    fake_slack: FakeSlack,  # noqa: F811  (the fixture)
) -> None:
    gw = await start_gateway(aiohttp_client, socket_settings(settings_factory, fake_slack), clock, fake_slack)
    await fake_slack.sockets.wait_connected()
    aid = await gw.suspend()
    press = gw.button("UALICE", "approve", aid) | {"token": VERIFICATION_TOKEN}
    await fake_slack.sockets.ack(await fake_slack.sockets.send(press))
    assert await gw.status(aid) is Status.APPROVED
    written = "\n".join(debug_logs.lines)
    assert "has been established" in written  # the connection's news, as docs/slack.md says
    assert press["response_url"] not in written
    assert VERIFICATION_TOKEN not in written
