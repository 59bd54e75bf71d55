"""The inbox's standing grants: "Approve and allow for 1h" makes one (granted_by web:alice), the
approval it then decides says so, the grants page lists it, and only its granter revokes it
there (CSRF like every form)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.web.conftest import HASH, WEB, csrf_of, sign_in


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    web = {**WEB, "passwords": {"alice": HASH, "bob": HASH, "victor": HASH}}
    return settings_factory(
        web=web, policies={"default": {"grants": ["1h", "run"]}, "two": {"grants": ["1h"], "quorum": 2}}
    )


async def _suspend(rt: Runtime, run_id: str, **kw: Any) -> Any:
    approval, _ = await rt.service.suspend(SuspendRequest(run_id, "charge", "Charge ACME", args={"amount": 5}, **kw))
    return approval


async def test_approve_and_allow_makes_a_grant_the_inbox_shows_and_its_granter_revokes(
    web: Any, web_rt: Runtime
) -> None:
    first = await _suspend(web_rt, "run-1")
    await sign_in(web)
    html = await (await web.get(f"/approvals/{first.id}")).text()
    assert "Approve and allow for 1h" in html and "Approve and allow for this run" in html
    resp = await web.post(
        f"/approvals/{first.id}/decision",
        data={"csrf": csrf_of(html), "outcome": "approve:1h"},
        allow_redirects=False,
    )
    assert resp.status == 303
    [grant] = await web_rt.store.list_grants(web_rt.clock.now())
    assert (grant.granted_by, grant.approval_id, grant.duration) == ("web:alice", first.id, "1h")
    assert f"standing grant <code>{grant.id}</code>" in await (await web.get(f"/approvals/{first.id}")).text()

    second = await _suspend(web_rt, "run-2")
    assert second.decision is not None and second.decision.decided_by == f"grant:{grant.id}"
    page = await (await web.get(f"/approvals/{second.id}")).text()
    assert f"grant:{grant.id}" in page and "standing grant (1h) by web:alice" in page and "(grant)" in page

    listing = await (await web.get("/grants")).text()
    assert grant.id in listing and f'action="/grants/{grant.id}/revoke"' in listing
    no_csrf = await web.post(f"/grants/{grant.id}/revoke", data={}, allow_redirects=False)
    assert no_csrf.status == 403 and (await web_rt.store.get_grant(grant.id)).revoked_at is None  # type: ignore[union-attr]
    resp = await web.post(f"/grants/{grant.id}/revoke", data={"csrf": csrf_of(listing)}, allow_redirects=False)
    assert resp.status == 303
    revoked = await web_rt.store.get_grant(grant.id)
    assert revoked is not None and revoked.revoked_by == "web:alice"
    assert grant.id not in await (await web.get("/grants")).text()
    third = await _suspend(web_rt, "run-3")
    assert third.decision is None  # asks again


async def test_another_person_cannot_revoke_it(web: Any, web_rt: Runtime) -> None:
    first = await _suspend(web_rt, "run-1")
    await web_rt.service.decide(first.id, Outcome.APPROVE, "web:alice", grant="run")
    [grant] = await web_rt.store.list_grants(web_rt.clock.now())
    await sign_in(web, "bob")
    listing = await (await web.get("/grants")).text()
    assert grant.id in listing and f'action="/grants/{grant.id}/revoke"' not in listing
    resp = await web.post(f"/grants/{grant.id}/revoke", data={"csrf": csrf_of(listing)}, allow_redirects=False)
    assert resp.status == 403
    assert (await web_rt.store.get_grant(grant.id)).revoked_at is None  # type: ignore[union-attr]


async def test_no_grant_is_offered_where_two_must_approve(web: Any, web_rt: Runtime) -> None:
    a = await _suspend(web_rt, "run-1", policy="two", approvers=("web:alice", "web:bob"))
    await sign_in(web)
    html = await (await web.get(f"/approvals/{a.id}")).text()
    assert 'value="approve"' in html and "Approve and allow" not in html
