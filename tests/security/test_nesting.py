"""Any nesting depth in any JSON body gets a 4xx, never a 500, from a real gateway.

Issue 13's finding: args nested 500 to 980 levels deep gave a 500 (a RecursionError in the
redactor, past the parser). The depth is now measured on the raw bytes before anything recurses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.core.depth import MAX_DEPTH
from tests.procs import Gateway
from tests.security.conftest import ALICE_KEY, BILLING_KEY, CHATS, SLACK_SECRET, TG_SECRET, make_launcher

pytestmark = pytest.mark.subprocess  # every test here starts a process

Body = tuple[str, str, bytes, dict[str, str]]  # method, path, body, headers


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with every JSON endpoint on, Telegram and Slack included (their APIs unreachable)."""
    started: list[Gateway] = []
    gw = make_launcher(tmp_path_factory.mktemp("nesting"), started)(extra=CHATS)
    yield gw
    for g in started:
        g.stop()


def nested(depth: int, array: bool) -> str:
    """A JSON value `depth` levels deep."""
    return "[" * depth + "]" * depth if array else '{"a":' * depth + "1" + "}" * depth


def _slack(payload: str) -> tuple[bytes, dict[str, str]]:
    body = urllib.parse.urlencode({"payload": payload}).encode()
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(SLACK_SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts}
    return body, headers | {"X-Slack-Signature": sig}


def _json(path: str, text: str, key: str | None = BILLING_KEY, method: str = "POST") -> Body:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    return method, path, text.encode(), headers


ROUTES: dict[str, Callable[[str], Body]] = {
    "suspend args": lambda v: _json(
        "/v1/suspend", f'{{"run_id": "r", "step": "s", "title": "t", "args": {{"x": {v}}}}}'
    ),
    "suspend state": lambda v: _json("/v1/suspend", f'{{"run_id": "r", "step": "s", "title": "t", "state": {v}}}'),
    "decision": lambda v: _json("/v1/approvals/nope/decision", f'{{"outcome": "approve", "x": {v}}}', ALICE_KEY),
    "cancel": lambda v: _json("/v1/approvals/nope/cancel", f'{{"reason": {v}}}', ALICE_KEY),
    "retry": lambda v: _json("/v1/approvals/nope/retry", f'{{"by": {v}}}', ALICE_KEY),
    "resend": lambda v: _json("/v1/approvals/nope/cards/resend", f'{{"channel": {v}}}', ALICE_KEY),
    "resume": lambda v: _json("/v1/resume", f'{{"token": "x", "outcome": {v}}}', None),
    "journal": lambda v: _json("/v1/runs/deep/steps/s", f'{{"output": {v}}}', method="PUT"),
    "telegram": lambda v: (
        "POST",
        "/webhooks/telegram",
        f'{{"update_id": 1, "message": {v}}}'.encode(),
        {"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": TG_SECRET},
    ),
    "slack": lambda v: ("POST", "/webhooks/slack/interactions", *_slack(f'{{"type": "block_actions", "x": {v}}}')),
}


def _send(gw: Gateway, request: Body) -> tuple[int, Any]:
    method, path, body, headers = request
    req = urllib.request.Request(gw.url + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _check(gw: Gateway, route: str, depth: int, array: bool) -> None:
    status, reply = _send(gw, ROUTES[route](nested(depth, array)))
    assert status < 500, (route, depth, status, reply)
    if depth + 1 > MAX_DEPTH:  # the body's own object is one more level
        assert status == 400, (route, depth, status, reply)
        assert reply["error"]["code"] in ("invalid_json", "bad_request", "validation_error"), reply


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, 500, 980, 10_000])
def test_the_depths_of_the_finding_and_beyond_are_a_400(chats: Gateway, route: str, depth: int) -> None:
    _check(chats, route, depth, array=depth % 2 == 0)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    route=st.sampled_from(sorted(ROUTES)),
    depth=st.integers(1, 10_000) | st.integers(MAX_DEPTH - 5, 1_100),
    array=st.booleans(),
)
def test_any_depth_in_any_json_body_is_never_a_5xx(chats: Gateway, route: str, depth: int, array: bool) -> None:
    _check(chats, route, depth, array)
