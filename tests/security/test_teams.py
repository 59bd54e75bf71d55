"""Teams presses that must be refused, and change nothing: a token from another issuer, for
another audience, expired, badly signed, signed by a key the metadata does not publish, with
another serviceUrl than its activity, or none at all; a press from another tenant or by someone
who is not an approver; and a replayed activity. Each attack is a real Approve by an approver
that the gateway would accept without it (the last test shows it does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jwt
import pytest

from tests.fakes.teams_api import APP_ID, OTHER_TENANT, SigningKey, invoke
from tests.helpers import table_counts
from tests.teams.conftest import (  # noqa: F401  (the fixtures)
    ALICE,
    MALLORY,
    MRIS,
    TeamsEnv,
    fake_teams,
    teams,
    teams_settings,
)


@pytest.fixture
def env(teams: TeamsEnv) -> TeamsEnv:  # noqa: F811  (the gateway of tests/teams, on the fake Bot Framework)
    return teams


TokenFor = Callable[[TeamsEnv, dict[str, Any]], str]


async def _approve(env: TeamsEnv, aid: str, card_id: str, user: str = ALICE, **over: Any) -> dict[str, Any]:
    return invoke(
        verb="approve",
        data=await env.data(aid),
        service_url=env.fake.service_url,
        user=user,
        mri=MRIS.get(user, "29:1x"),
        card_id=card_id,
        **over,
    )


async def _waiting(env: TeamsEnv) -> tuple[str, str, dict[str, Any], int]:
    aid = await env.suspend()
    card_id = await env.posted(aid)
    return aid, card_id, await table_counts(env.rt), len(env.fake.calls)


async def _unchanged(env: TeamsEnv, before: dict[str, Any], calls: int) -> None:
    await env.rt.outbox.drain()
    assert await table_counts(env.rt) == before
    assert env.fake.calls_to("PUT") == [] and len(env.fake.calls_to("POST", "/activities")) == 1


def _other_key(env: TeamsEnv, activity: dict[str, Any]) -> str:
    """Signed by a key of the same kid that the issuer does not hold."""
    return env.fake.issuer.token(activity["serviceUrl"], key=SigningKey("key-1"))


TOKENS: dict[str, TokenFor] = {
    "another issuer": lambda env, a: env.fake.issuer.token(a["serviceUrl"], issuer="https://sts.windows.net/evil/"),
    "another audience": lambda env, a: env.fake.issuer.token(a["serviceUrl"], audience="another-bot-app-id"),
    "expired": lambda env, a: env.fake.issuer.token(a["serviceUrl"], lifetime=-301),
    "not valid yet": lambda env, a: env.fake.issuer.token(a["serviceUrl"], nbf=int(env.clock.now().timestamp()) + 900),
    "bad signature": _other_key,
    "unpublished key": lambda env, a: env.fake.issuer.token(a["serviceUrl"], key=SigningKey("key-evil")),
    "serviceUrl mismatch": lambda env, a: env.fake.issuer.token("https://smba.evil.example/teams/"),
    "no serviceUrl": lambda env, a: env.fake.issuer.token(a["serviceUrl"], serviceUrl=None),
    "HS256 with the public key": lambda env, a: jwt.encode(
        {"iss": env.fake.issuer.issuer, "aud": APP_ID, "exp": 4_000_000_000, "serviceUrl": a["serviceUrl"]},
        "x" * 32,
        algorithm="HS256",
        headers={"kid": "key-1"},
    ),
    "alg none": lambda env, a: jwt.encode(
        {"iss": env.fake.issuer.issuer, "aud": APP_ID, "exp": 4_000_000_000, "serviceUrl": a["serviceUrl"]},
        None,
        algorithm="none",
    ),
}


@pytest.mark.parametrize("attack", sorted(TOKENS))
async def test_a_bad_token_gets_401_and_changes_nothing(env: TeamsEnv, attack: str) -> None:
    aid, card_id, before, calls = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    status, body = await env.send(activity, TOKENS[attack](env, activity))
    assert status == 401 and body["error"]["code"] == "invalid_token"
    await _unchanged(env, before, calls)


async def test_an_activity_and_a_token_without_a_service_url_are_refused(env: TeamsEnv) -> None:
    aid, card_id, before, calls = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    del activity["serviceUrl"]
    status, _ = await env.send(activity, env.fake.issuer.token("", serviceUrl=None))
    assert status == 401
    await _unchanged(env, before, calls)


@pytest.mark.parametrize("header", ["", "Bearer", "Basic abc", "Bearer not-a-jwt"])
async def test_no_usable_token_gets_401(env: TeamsEnv, header: str) -> None:
    aid, card_id, before, calls = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    headers = {"Authorization": header} if header else {}
    resp = await env.client.post("/webhooks/teams", json=activity, headers=headers)
    assert resp.status == 401
    await _unchanged(env, before, calls)


async def test_an_unknown_kid_asks_the_metadata_again_but_not_per_request(env: TeamsEnv) -> None:
    aid, card_id, before, calls = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    for _ in range(5):
        status, _ = await env.send(activity, env.fake.issuer.token(activity["serviceUrl"], kid="forged"))
        assert status == 401
    assert env.fake.issuer.jwks_fetches == 1  # fetched once, then not again within five minutes
    await _unchanged(env, before, calls)
    # Microsoft rolls a new key in: it is fetched on its first use (once the cache may refresh)
    env.clock.advance(minutes=6)
    new = env.fake.issuer.rotate()
    status, answer = await env.send(activity, env.fake.issuer.token(activity["serviceUrl"], key=new))
    assert status == 200 and "**Approved**" in str(answer)
    assert env.fake.issuer.jwks_fetches == 2


async def test_a_key_not_endorsed_for_teams_is_refused(env: TeamsEnv) -> None:
    """The Bot Framework publishes keys per channel: one endorsed only for Web Chat cannot sign for Teams."""
    aid, card_id, before, calls = await _waiting(env)
    webchat = env.fake.issuer.rotate(endorsements=["webchat"])
    activity = await _approve(env, aid, card_id)
    status, _ = await env.send(activity, env.fake.issuer.token(activity["serviceUrl"], key=webchat))
    assert status == 401
    await _unchanged(env, before, calls)


async def test_a_press_from_another_tenant_is_denied_and_decides_nothing(env: TeamsEnv) -> None:
    aid, card_id, _, _ = await _waiting(env)
    for _ in range(8):
        activity = await _approve(env, aid, card_id, tenant=OTHER_TENANT)
        status, answer = await env.send(activity)
        assert status == 200 and "not authorised" in answer["value"]
    approval = await env.rt.store.get_approval(aid)
    assert approval is not None and approval.status.value == "waiting_approval"
    denied = [e for e in await env.rt.store.list_events(aid) if e.kind == "denied"]
    assert len(denied) == 5 and OTHER_TENANT in str(denied[0].data)  # on the record, bounded
    await env.rt.outbox.drain()
    assert env.fake.calls_to("PUT") == []


async def test_disagreeing_tenants_in_one_activity_are_refused(env: TeamsEnv) -> None:
    aid, card_id, _, _ = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    activity["channelData"]["tenant"]["id"] = OTHER_TENANT  # conversation.tenantId is ours
    status, answer = await env.send(activity)
    assert status == 200 and "not authorised" in answer["value"]
    assert (await env.rt.store.get_approval(aid)).status.value == "waiting_approval"  # type: ignore[union-attr]


async def test_a_non_approver_is_denied(env: TeamsEnv) -> None:
    aid, card_id, _, _ = await _waiting(env)
    status, answer = await env.send(await _approve(env, aid, card_id, user=MALLORY))
    assert status == 200 and "not authorised" in answer["value"]
    assert (await env.rt.store.get_approval(aid)).status.value == "waiting_approval"  # type: ignore[union-attr]
    assert "denied" in await env.event_kinds(aid)


async def test_a_replayed_activity_changes_nothing(env: TeamsEnv) -> None:
    aid = await env.suspend(policy="two")
    card_id = await env.posted(aid)
    activity = invoke(
        verb="reject",
        data=await env.data(aid, reason="first"),
        service_url=env.fake.service_url,
        user=ALICE,
        card_id=card_id,
    )
    first = await env.send(activity)
    assert first[0] == 200 and "**Rejected**" in str(first[1])
    await env.rt.outbox.drain()
    before, puts = await table_counts(env.rt), len(env.fake.calls_to("PUT"))
    status, answer = await env.send(activity)  # the same activity id, a fresh valid token
    assert status == 200 and "already received" in answer["value"]
    await env.rt.outbox.drain()
    assert await table_counts(env.rt) == before and len(env.fake.calls_to("PUT")) == puts


async def test_a_forged_reference_is_refused_before_any_lookup(env: TeamsEnv) -> None:
    aid, card_id, before, calls = await _waiting(env)
    activity = await _approve(env, aid, card_id)
    activity["value"]["action"]["data"]["ref"] = aid + "." + "0" * 32
    status, answer = await env.send(activity)
    assert status == 200 and answer["statusCode"] == 400
    await _unchanged(env, before, calls)


async def test_the_same_press_with_a_good_token_decides(env: TeamsEnv) -> None:
    """The control: every attack above is this press, which works."""
    aid, card_id, _, _ = await _waiting(env)
    status, answer = await env.send(await _approve(env, aid, card_id))
    assert status == 200 and answer["statusCode"] == 200
    assert (await env.rt.store.get_approval(aid)).status.value == "approved"  # type: ignore[union-attr]
