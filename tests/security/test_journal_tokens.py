"""A resume token opens its run's journal without the gateway reading its approval: its signed
payload names the run (`r`) and the run's namespace (`n`, the approval's agent's). The attacks on
that: a token used on another run, on another agent's run of the same id, a payload tampered with
(another run, another namespace) under the original signature, a token signed with another key,
an expired one. Tokens issued before `n` existed still work, by reading their approval."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from itsdangerous import URLSafeSerializer

from gateway.config import Settings
from gateway.core.models import Approval
from gateway.core.tokens import RESUME
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.testing import FakeClock

BILLING_KEY = "journal-billing-key-0123456789abcdef"
MAIL_KEY = "journal-mail-key-0123456789abcdef"
BILLING = {"Authorization": f"Bearer {BILLING_KEY}"}
MAIL = {"Authorization": f"Bearer {MAIL_KEY}"}
STEP = {
    "status": "succeeded",
    "output": {"charged": True},
    "started_at": "2030-01-01T00:00:00Z",
    "finished_at": "2030-01-01T00:00:01Z",
}


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def http(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> AsyncIterator[TestClient[Any, Any]]:
    settings = settings_factory(security={"agents": {"billing": BILLING_KEY, "mail": MAIL_KEY}})
    rt = Runtime(settings, clock=clock, owner="test")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


def _rt(http: TestClient[Any, Any]) -> Runtime:
    rt: Runtime = http.app[RUNTIME]
    return rt


async def _suspend(http: TestClient[Any, Any], headers: dict[str, str], run_id: str) -> dict[str, Any]:
    body = {"run_id": run_id, "step": "pay", "title": "Pay", "args": {"amount": 1}}
    resp = await http.post("/v1/suspend", json=body, headers=headers)
    assert resp.status == 201, await resp.text()
    reply: dict[str, Any] = await resp.json()
    return reply


async def _approval(http: TestClient[Any, Any], approval_id: str) -> Approval:
    approval = await _rt(http).store.get_approval(approval_id)
    assert approval is not None
    return approval


async def _get(http: TestClient[Any, Any], run_id: str, headers: dict[str, str]) -> tuple[int, Any]:
    resp = await http.get(f"/v1/runs/{run_id}/steps", headers=headers)
    return resp.status, await resp.json()


async def _put(http: TestClient[Any, Any], run_id: str, name: str, headers: dict[str, str]) -> int:
    return (await http.put(f"/v1/runs/{run_id}/steps/{name}", json=STEP, headers=headers)).status


def _token(value: str) -> dict[str, str]:
    return {"X-HITL-Resume-Token": value}


def _payload(token: str) -> dict[str, Any]:
    data: dict[str, Any] = URLSafeSerializer("any").load_payload(token.rsplit(".", 1)[0].encode())
    return data


def _tampered(token: str, **change: Any) -> str:
    """The token's payload with `change`, under the token's own signature."""
    forged = URLSafeSerializer("any", salt=RESUME).dumps({**_payload(token), **change})
    return forged.rsplit(".", 1)[0] + "." + token.rsplit(".", 1)[1]


async def test_a_token_opens_its_run_without_reading_the_approval(
    http: TestClient[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = await _suspend(http, BILLING, "ro-1")
    rt = _rt(http)
    worker_token = rt.service.resumes.worker_token(await _approval(http, reply["id"]))
    reads: list[str] = []
    read = rt.store.get_approval

    async def counted(approval_id: str) -> Approval | None:
        reads.append(approval_id)
        return await read(approval_id)

    monkeypatch.setattr(rt.store, "get_approval", counted)
    for token in (reply["resume_token"], worker_token):
        assert await _put(http, "ro-1", f"step-{len(reads)}", _token(token)) == 200
        status, body = await _get(http, "ro-1", _token(token))
        assert status == 200 and body["items"]
    assert reads == []  # signature, expiry and run: no approval read


async def test_a_token_never_opens_another_run(http: TestClient[Any, Any]) -> None:
    mine = await _suspend(http, BILLING, "ro-mine")
    await _suspend(http, BILLING, "ro-other")
    worker_token = _rt(http).service.resumes.worker_token(await _approval(http, mine["id"]))
    for token in (mine["resume_token"], worker_token):
        assert (await _get(http, "ro-other", _token(token)))[0] == 401
        assert await _put(http, "ro-other", "x", _token(token)) == 401
    status, body = await _get(http, "ro-other", BILLING)
    assert status == 200 and body["items"] == []  # nothing was written there


async def test_a_token_never_opens_another_agents_run_of_the_same_id(http: TestClient[Any, Any]) -> None:
    mine = await _suspend(http, BILLING, "ro-shared")
    await _suspend(http, MAIL, "ro-shared")
    assert await _put(http, "ro-shared", "theirs", MAIL) == 200
    token = _token(mine["resume_token"])
    status, body = await _get(http, "ro-shared", token)
    assert status == 200 and body["items"] == []  # billing's run of that id: mail's step is not there
    assert await _put(http, "ro-shared", "resumed", token) == 200
    for headers, names in ((BILLING, ["resumed"]), (MAIL, ["theirs"])):
        _, body = await _get(http, "ro-shared", headers)
        assert [s["name"] for s in body["items"]] == names
    resp = await http.get("/v1/runs/ro-shared/steps?agent=mail", headers=token)  # the token decides, not ?agent
    assert [s["name"] for s in (await resp.json())["items"]] == ["resumed"]


async def test_a_tampered_forged_or_expired_token_is_refused(http: TestClient[Any, Any], clock: FakeClock) -> None:
    mine = await _suspend(http, BILLING, "ro-t1")
    await _suspend(http, MAIL, "ro-t2")
    assert await _put(http, "ro-t2", "theirs", MAIL) == 200
    token = mine["resume_token"]
    assert _payload(token)["n"] == "agent:billing" and _payload(token)["r"] == "ro-t1"
    attacks = [
        _tampered(token, r="ro-t2"),  # another run
        _tampered(token, n="agent:mail"),  # another agent's run of the same id
        _tampered(token, r="ro-t2", n="agent:mail"),  # mail's run
        _tampered(token, e=_payload(token)["e"] + 10**6),  # a longer life
        URLSafeSerializer("not-the-gateways-key-0123456789", salt=RESUME).dumps(_payload(token) | {"r": "ro-t2"}),
    ]
    for forged in attacks:
        for run_id in ("ro-t1", "ro-t2"):
            assert (await _get(http, run_id, _token(forged)))[0] == 401, (forged, run_id)
            assert await _put(http, run_id, "x", _token(forged)) == 401, (forged, run_id)
    _, body = await _get(http, "ro-t2", MAIL)
    assert [s["name"] for s in body["items"]] == ["theirs"]
    clock.advance(seconds=_payload(token)["e"] - clock.now().timestamp() + 1)
    assert (await _get(http, "ro-t1", _token(token)))[0] == 410
    assert await _put(http, "ro-t1", "late", _token(token)) == 410


async def test_a_token_from_before_the_namespace_falls_back_to_its_approval(http: TestClient[Any, Any]) -> None:
    """A token without `n` (issued by an older gateway) is checked against its approval, as
    before: it opens its approval's run in its approval's namespace, and only while the
    approval matches it."""
    mine = await _suspend(http, BILLING, "ro-old")
    await _suspend(http, MAIL, "ro-old")
    assert await _put(http, "ro-old", "theirs", MAIL) == 200
    rt = _rt(http)
    approval = await _approval(http, mine["id"])
    old = {"a": approval.id, "r": approval.run_id, "h": approval.args_hash[:16]}
    expires = rt.clock.now() + timedelta(days=1)
    legacy = rt.service.signer.sign(RESUME, old, expires)
    assert await _put(http, "ro-old", "resumed", _token(legacy)) == 200
    _, body = await _get(http, "ro-old", BILLING)
    assert [s["name"] for s in body["items"]] == ["resumed"]  # billing's run, read from the approval
    assert (await _get(http, "ro-other", _token(legacy)))[0] == 401
    for stale in ({**old, "a": "no-such-approval"}, {**old, "h": "0" * 16}, {**old, "r": "ro-other"}):
        assert (await _get(http, stale["r"], _token(rt.service.signer.sign(RESUME, stale, expires))))[0] == 401
