"""Teams activities the gateway must not take for a press (and must not fail on).

The Bot Framework signs activities from every channel the bot is on with the same keys (they
are endorsed for Teams, Web Chat, Direct Line...), and its token covers nothing of the body but
`serviceUrl`. On Web Chat and Direct Line the *client* writes `from` (with `aadObjectId`) and
`channelData` (with `tenant.id`). So an activity that is not from Teams must never be read as a
Teams press: its presser and tenant are whatever someone typed."""

from __future__ import annotations

import pytest

from tests.fakes.teams_api import TENANT, invoke
from tests.helpers import table_counts
from tests.teams.conftest import (  # noqa: F401  (the fixtures)
    ALICE,
    TeamsEnv,
    fake_teams,
    teams,
    teams_settings,
)

WEBCHAT = "https://webchat.botframework.com/"


@pytest.mark.parametrize("channel", ["webchat", "directline"])
async def test_an_activity_from_another_bot_framework_channel_decides_nothing(
    teams: TeamsEnv,  # noqa: F811  (the fixture)
    channel: str,
) -> None:
    env = teams
    # Microsoft's keys are endorsed for every channel they sign for, Teams among them
    key = env.fake.issuer.rotate(endorsements=["msteams", "webchat", "directline", "emulator"])
    aid = await env.suspend()
    card_id = await env.posted(aid)
    before = await table_counts(env.rt)
    # A Web Chat user who read the card's data (a member of the conversation) names Alice
    activity = invoke(
        verb="approve", data=await env.data(aid), service_url=WEBCHAT, user=ALICE, mri="dl_mallory", card_id=card_id
    )
    activity["channelId"] = channel
    del activity["conversation"]["tenantId"]  # Direct Line sets its own conversation
    activity["channelData"] = {"tenant": {"id": TENANT}}  # the client's own channelData
    status, body = await env.send(activity, env.fake.issuer.token(WEBCHAT, key=key))
    assert status == 401 and body["error"]["code"] == "invalid_token"
    assert "msteams" in body["error"]["message"]
    await env.rt.outbox.drain()
    approval = await env.rt.store.get_approval(aid)
    assert approval is not None and approval.status.value == "waiting_approval"
    assert await table_counts(env.rt) == before
    assert env.fake.calls_to("PUT") == []


@pytest.mark.parametrize("verb", [["approve"], {"approve": True}])
async def test_an_action_verb_that_is_no_string_is_a_bad_request(teams: TeamsEnv, verb: object) -> None:  # noqa: F811
    """Not a 500 (a list or an object cannot be looked up among the verbs): the invoke's 400."""
    env = teams
    aid = await env.suspend()
    card_id = await env.posted(aid)
    before = await table_counts(env.rt)
    activity = invoke(
        verb="approve", data=await env.data(aid), service_url=env.fake.service_url, user=ALICE, card_id=card_id
    )
    activity["value"]["action"]["verb"] = verb
    status, body = await env.send(activity)
    assert status == 200 and body["statusCode"] == 400
    assert await table_counts(env.rt) == before
