"""Signed outbound events: a forged or altered event fails verification with the specification's
own library; a secret or URL that would weaken the signing stops the start, naming the key; the
secret never leaves the process; a receiver cannot redirect the signed events elsewhere."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.core.errors import ConfigError
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.settings import effective_config
from gateway.testing import FakeClock, make_settings
from tests.events.support import SECRET, Receiver, receiving


@pytest.fixture
def clock() -> FakeClock:
    """Near the wall clock: the receiver checks `webhook-timestamp` against its own."""
    return FakeClock(datetime.now(UTC) + timedelta(seconds=20))


def _settings(tmp_path: Path, **hook: Any) -> Any:
    webhook = {"url": "http://127.0.0.1:9/hook", "secret": SECRET} | hook
    return make_settings(f"sqlite:///{tmp_path / 'g.db'}", {"events": {"webhooks": [webhook]}})


@pytest.fixture
async def sent(tmp_path: Path, clock: FakeClock) -> AsyncIterator[tuple[Receiver, Runtime]]:
    async with receiving(Receiver()) as receiver:
        rt = Runtime(_settings(tmp_path, url=receiver.url), clock=clock, owner="test")
        await rt.start(background=False)
        try:
            await rt.service.suspend(SuspendRequest("run-1", "charge", "Charge", args={"amount": 1}))
            await rt.outbox.drain()
            yield receiver, rt
        finally:
            await rt.stop()


async def test_one_changed_byte_fails_verification(sent: tuple[Receiver, Runtime]) -> None:
    receiver, _ = sent
    (got,) = receiver.received
    hook = Webhook(SECRET)
    assert hook.verify(got.body, got.headers)["type"] == "dev.hitl-gateway.approval.requested"
    for i in range(len(got.body)):  # every single byte of the body
        body = bytearray(got.body)
        body[i] ^= 0x01
        with pytest.raises(WebhookVerificationError):
            hook.verify(bytes(body), got.headers)
    for name in ("webhook-id", "webhook-timestamp"):  # and the signed headers
        value = got.headers[name]
        changed = value[:-1] + ("1" if value[-1] != "1" else "2")
        with pytest.raises(WebhookVerificationError):
            hook.verify(got.body, got.headers | {name: changed})
    other = "whsec_" + base64.b64encode(b"another-secret-of-32-bytes-long!").decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)


async def test_the_secret_stays_in_the_process(sent: tuple[Receiver, Runtime], tmp_path: Path) -> None:
    receiver, rt = sent
    (got,) = receiver.received
    raw_secret = base64.b64decode(SECRET.removeprefix("whsec_"))
    assert SECRET.encode() not in got.body and raw_secret not in got.body
    assert all(SECRET not in v for v in got.headers.values())
    assert SECRET.removeprefix("whsec_").encode() not in (tmp_path / "g.db").read_bytes()  # not stored
    shown = effective_config(rt.settings)["events"]["webhooks"]
    assert shown[0]["secret"] == "***" and SECRET not in repr(effective_config(rt.settings))


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        (base64.b64encode(b"0123456789abcdef0123456789abcdef").decode(), "expected whsec_<base64>"),
        ("whsec_not*base64!", "not base64"),
        ("whsec_" + base64.b64encode(b"short").decode(), "24 to 64 random bytes"),
        ("whsec_", "24 to 64 random bytes"),
        ("", "required"),
    ],
)
def test_a_weak_or_malformed_secret_stops_the_start(tmp_path: Path, secret: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        _settings(tmp_path, secret=secret)
    assert err.value.key.startswith("events.webhooks[0].secret") and problem in err.value.problem
    assert len(secret) < 8 or secret not in str(err.value)  # the error names the key, never echoes a secret


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/hook", "file:///etc/passwd", "javascript:alert(1)", "127.0.0.1:8080/hook", "http://"]
)
def test_the_url_must_be_http_or_https(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as err:
        _settings(tmp_path, url=url)
    assert err.value.key == "events.webhooks[0].url"


def test_unknown_kinds_and_duplicate_names_stop_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown kind 'approval\.everything'"):
        _settings(tmp_path, kinds=["approval.decided", "approval.everything"])
    hooks = [{"url": "https://a.example/h", "secret": SECRET, "name": "x"}] * 2
    with pytest.raises(ConfigError, match="given twice"):
        make_settings(f"sqlite:///{tmp_path / 'g.db'}", {"events": {"webhooks": hooks}})


async def test_a_redirect_is_not_followed(tmp_path: Path, clock: FakeClock, aiohttp_server: Any) -> None:
    """A receiver that answers 307 cannot make the gateway send the signed event elsewhere."""
    elsewhere: list[bytes] = []

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/stolen")

    async def stolen(request: web.Request) -> web.Response:
        elsewhere.append(await request.read())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", redirect)
    app.router.add_post("/stolen", stolen)
    server = await aiohttp_server(app)
    rt = Runtime(_settings(tmp_path, url=str(server.make_url("/hook"))), clock=clock, owner="test")
    await rt.start(background=False)
    try:
        approval, _ = await rt.service.suspend(SuspendRequest("run-1", "charge", "Charge"))
        await rt.outbox.drain()
        (row,) = [r for r in await rt.store.list_outbox(approval.id) if r.kind.value == "event"]
        assert elsewhere == [] and row.status.value == "pending" and row.last_error == "HTTP 307 Temporary Redirect"
    finally:
        await rt.stop()


OLD = "whsec_" + base64.b64encode(b"an-old-secret-of-32-bytes-long!!").decode()


def test_previous_secrets_are_masked_and_redacted_like_the_secret(tmp_path: Path) -> None:
    from gateway.cli.main import log_secrets
    from gateway.telemetry.logs import SecretFilter

    settings = _settings(tmp_path, previous_secrets=[OLD])
    (shown,) = effective_config(settings)["events"]["webhooks"]
    assert shown["secret"] == "***" and shown["previous_secrets"] == ["***"]
    assert OLD not in repr(effective_config(settings)) and OLD not in repr(settings)
    redactor = SecretFilter(log_secrets(settings))
    line = redactor.redact(f"receiver said: bad secret {OLD}, expected {SECRET}")
    assert OLD not in line and SECRET not in line and line.count("[REDACTED]") == 2
    # a webhook without a rotation shows no previous_secrets at all
    assert "previous_secrets" not in effective_config(_settings(tmp_path))["events"]["webhooks"][0]
