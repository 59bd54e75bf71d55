"""Property tests (Hypothesis) for the parsers that take outside input.

Slack payloads, Telegram updates, callback_data and Slack signatures are in
test_adapter_properties.py (parse never raises anything but the adapter's own 4xx error;
build -> parse roundtrips; an edited callback_data or a forged reference never verifies).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import GatewayError, InvalidToken, TokenExpired
from gateway.core.keys import canonical_json, idempotency_key
from gateway.core.tokens import RESUME, TokenSigner
from gateway.http.app import create_app
from gateway.http.schemas import _SUSPEND_FIELDS, parse_suspend
from gateway.runtime import Runtime
from gateway.testing import TEST_API_KEY, FakeClock, make_settings

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
NOW = datetime(2030, 1, 1, tzinfo=UTC)
FAST = settings(max_examples=150, deadline=None)


# ---------------------------------------------------------------- durations
@FAST
@given(st.integers(min_value=0, max_value=10**8))
def test_duration_format_parse_roundtrip(seconds: int) -> None:
    assert parse_duration(format_duration(timedelta(seconds=seconds))) == timedelta(seconds=seconds)


@FAST
@given(st.one_of(st.text(max_size=20), JSON))
def test_duration_parser_only_raises_value_error(value: Any) -> None:
    try:
        result = parse_duration(value)
    except ValueError:
        return
    assert result >= timedelta(0)


# ---------------------------------------------------------------- tokens
PAYLOAD = st.fixed_dictionaries({"a": st.text(max_size=16), "r": st.text(max_size=16), "h": st.text(max_size=16)})


@FAST
@given(PAYLOAD)
def test_token_roundtrip(payload: dict[str, str]) -> None:
    signer = TokenSigner(["k1" * 16])
    token = signer.sign(RESUME, payload, NOW + timedelta(hours=1))
    data = signer.verify(RESUME, token, NOW)
    assert {k: data[k] for k in payload} == payload
    with pytest.raises(TokenExpired):
        signer.verify(RESUME, token, NOW + timedelta(hours=1))
    with pytest.raises(InvalidToken):
        TokenSigner(["other" * 8]).verify(RESUME, token, NOW)
    with pytest.raises(InvalidToken):
        signer.verify("another.purpose", token, NOW)


@FAST
@given(PAYLOAD, st.data())
def test_a_tampered_token_never_verifies_to_other_content(payload: dict[str, str], data: st.DataObject) -> None:
    signer = TokenSigner(["k1" * 16])
    token = signer.sign(RESUME, payload, NOW + timedelta(hours=1))
    pos = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    char = data.draw(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."))
    assume(token[pos] != char)
    forged = token[:pos] + char + token[pos + 1 :]
    try:
        got = signer.verify(RESUME, forged, NOW)
    except InvalidToken:
        return
    # Only possible when the change hits base64 padding bits: then the bytes are the same.
    assert got == signer.verify(RESUME, token, NOW)


# ---------------------------------------------------------------- canonical JSON and keys
@FAST
@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6))
def test_canonical_json_is_order_free_and_lossless(value: dict[str, Any]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert canonical_json(value) == canonical_json(reordered)
    assert json.loads(canonical_json(value)) == value
    # The exact bytes are part of the idempotency-key contract: they must never drift.
    assert canonical_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    assert idempotency_key("run", "step", value) == idempotency_key("run", "step", reordered)


@FAST
@given(st.text(max_size=10), st.text(max_size=10), JSON, JSON)
def test_idempotency_keys_differ_when_inputs_differ(run: str, step: str, a: Any, b: Any) -> None:
    assume(canonical_json(a) != canonical_json(b))
    assert idempotency_key(run, step, a) != idempotency_key(run, step, b)
    assert len(idempotency_key(run, step, a)) == 64


# ---------------------------------------------------------------- suspend body validation
@FAST
@given(st.dictionaries(st.sampled_from(["run_id", "step", "title", "args", "channels", "policy", "x"]), JSON))
def test_parse_suspend_raises_only_gateway_errors(body: dict[str, Any]) -> None:
    try:
        parse_suspend(body)
    except GatewayError as err:
        assert 400 <= err.status < 500


class _Server:
    """The real app on a loop in a thread, so that sync Hypothesis tests can call it."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        cfg = make_settings(f"sqlite:///{tmp / 'g.db'}", {"workers": {"agent": {"command": ["true"]}}})
        app = create_app(cfg, runtime=Runtime(cfg, clock=FakeClock(), owner="t"), background=False)
        self.client: TestClient[Any, Any] = self.run(self._client(app))

    async def _client(self, app: Any) -> TestClient[Any, Any]:
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        return client

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def post(self, path: str, body: bytes) -> tuple[int, Any]:
        async def go() -> tuple[int, Any]:
            headers = {"Authorization": f"Bearer {TEST_API_KEY}", "Content-Type": "application/json"}
            resp = await self.client.post(path, data=body, headers=headers)
            text = await resp.text()
            return resp.status, (json.loads(text) if text else None)

        result: tuple[int, Any] = self.run(go())
        return result

    def close(self) -> None:
        self.run(self.client.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    srv = _Server(tmp_path_factory.mktemp("props"))
    yield srv
    srv.close()


BODIES = st.one_of(
    JSON.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(sorted(_SUSPEND_FIELDS | {"outcome", "by", "token"})),
        JSON | st.dictionaries(st.sampled_from(["timeout", "on_timeout", "quorum", "escalate_to", "remind"]), JSON),
    ).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/v1/suspend", "/v1/resume", "/v1/approvals/nope/decision"]), body=BODIES)
def test_random_bodies_get_a_4xx_with_the_error_body_never_a_5xx(server: _Server, path: str, body: bytes) -> None:
    status, data = server.post(path, body)
    assert status < 500, (status, data)
    if status >= 400:
        assert set(data) == {"error"} and isinstance(data["error"]["code"], str)
        assert isinstance(data["error"]["message"], str) and data["error"]["message"]
