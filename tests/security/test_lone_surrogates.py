"""An unpaired UTF-16 surrogate escape in a correctly signed webhook body is a 400 that changes
nothing, on every channel that reads JSON.

`json.loads` reads the JSON text `"\\ud800"` (half a pair, alone) into a Python string that no
UTF-8 encoder takes: the body parsed, passed its signature check, and then failed as a 500 where
a field of it was hashed, logged or written to the store. Only the platform could sign such a body,
but a 500 is still wrong (and it may leave half a press behind). Each webhook now parses its
body with gateway.core.jsontext, which refuses it there, before anything is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk.socket_mode.request import SocketModeRequest

from adapters.slack.socket import SocketMode
from gateway.core import jsontext
from gateway.core.models import Status
from tests.discord.support import ALICE as DISCORD_ALICE
from tests.discord.support import CARDS, DiscordEnv, discord, discord_settings, fake_discord
from tests.fakes.slack_api import block_actions
from tests.fakes.teams_api import invoke
from tests.helpers import table_counts
from tests.slack.conftest import SlackEnv, fake_slack, slack, slack_settings
from tests.teams.conftest import ALICE as TEAMS_ALICE
from tests.teams.conftest import MRIS, TeamsEnv, fake_teams, teams, teams_settings
from tests.telegram.conftest import ALICE as TG_ALICE
from tests.telegram.conftest import TG, tg, tg_api, tg_settings

__all__ = [  # the fixtures
    "discord",
    "discord_settings",
    "fake_discord",
    "fake_slack",
    "fake_teams",
    "slack",
    "slack_settings",
    "teams",
    "teams_settings",
    "tg",
    "tg_api",
    "tg_settings",
]


@pytest.fixture
def db_url(store_url: str) -> str:
    """On both backends: the refusal comes before either is written to."""
    return store_url


LONE = "\ud800"  # json.dumps writes it as the escape "\ud800", as a sender's encoder would
Mutate = Callable[[dict[str, Any]], None]


def _append(*path: str) -> Mutate:
    """Append a lone surrogate to the string at `path` (a list index as a digit string)."""

    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[path[-1]] = str(node[path[-1]]) + LONE

    return mutate


def _key(doc: dict[str, Any]) -> None:
    doc[f"extra{LONE}"] = 1


async def _waiting(rt: Any, approval_id: str) -> None:
    approval = await rt.store.get_approval(approval_id)
    assert approval is not None and approval.status is Status.WAITING and approval.votes == ()


def test_the_helper_refuses_a_lone_surrogate_and_keeps_a_pair() -> None:
    assert jsontext.loads(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    with pytest.raises(jsontext.LoneSurrogate, match="unpaired UTF-16 surrogate"):
        jsontext.loads(b'{"a": "\\udc00"}')
    with pytest.raises(ValueError, match="the update holds"):  # a ValueError: `except ValueError` refuses it
        jsontext.loads('{"\\ud800": 1}', "the update")
    with pytest.raises(jsontext.LoneSurrogate):
        jsontext.loads('{"a": "x\\ud800"}'.encode("utf-16"))  # any encoding json.loads detects


TELEGRAM = {
    "callback_query.data": _append("callback_query", "data"),
    "from.first_name": _append("callback_query", "from", "first_name"),
    "a key": _key,
}


@pytest.mark.parametrize("field", list(TELEGRAM))
async def test_a_lone_surrogate_in_a_telegram_update_is_a_400(tg: TG, field: str) -> None:
    approval_id, message_id = await tg.posted()
    before = await table_counts(tg.rt)
    update = tg.press(TG_ALICE, tg.data(message_id, "Approve"), message_id)
    TELEGRAM[field](update)
    status = await tg.send(update)  # the webhook secret is right: only Telegram could have sent it
    assert status == 400
    assert await table_counts(tg.rt) == before
    await _waiting(tg.rt, approval_id)
    # the update was not marked seen: Telegram's redelivery of a fixed one would still count
    assert await tg.rt.store.remember_inbound(f"telegram:update:{update['update_id']}", tg.clock.now())


SLACK = {
    "team.id": _append("team", "id"),
    "user.username": _append("user", "username"),
    "actions[0].value": _append("actions", "0", "value"),
    "a key": _key,
}


@pytest.mark.parametrize("field", list(SLACK))
async def test_a_lone_surrogate_in_a_slack_interaction_is_a_400(slack: SlackEnv, field: str) -> None:
    approval_id = await slack.suspend()
    await slack.posted(approval_id)
    before = await table_counts(slack.rt)
    ref = slack.ref(approval_id)
    payload = block_actions("UALICE", f"hitl:approve:{ref}", ref, response_url=slack.fake.response_url("UALICE"))
    SLACK[field](payload)
    resp = await slack.send(payload)  # signed with the app's signing secret
    assert resp.status == 400, await resp.text()
    assert "surrogate" in (await resp.json())["error"]["message"]
    assert await table_counts(slack.rt) == before
    await _waiting(slack.rt, approval_id)


async def test_a_lone_surrogate_in_a_slack_modals_metadata_is_a_400(slack: SlackEnv) -> None:
    """The modal's private_metadata is JSON inside the payload's JSON: parsed the same way."""
    approval_id = await slack.suspend()
    await slack.posted(approval_id)
    before = await table_counts(slack.rt)
    meta = json.dumps({"ref": slack.ref(approval_id)})[:-1] + ', "x": "\\ud800"}'
    payload = {
        "type": "view_submission",
        "team": {"id": "T0HOME", "domain": "home"},
        "user": {"id": "UALICE", "username": "ualice", "team_id": "T0HOME"},
        "view": {"callback_id": "hitl:reason", "private_metadata": meta, "state": {"values": {}}},
        "trigger_id": "trig-surrogate",
    }
    resp = await slack.send(payload)
    assert resp.status == 400, await resp.text()
    assert "private_metadata holds an unpaired" in (await resp.json())["error"]["message"]
    assert await table_counts(slack.rt) == before


async def test_a_lone_surrogate_in_a_socket_mode_interaction_is_acked_and_changes_nothing(slack: SlackEnv) -> None:
    """Socket Mode's client parsed the envelope itself: the same check, on what it parsed."""
    approval_id = await slack.suspend()
    await slack.posted(approval_id)
    before = await table_counts(slack.rt)
    ref = slack.ref(approval_id)
    payload = block_actions("UALICE", f"hitl:approve:{ref}", ref, response_url=slack.fake.response_url("UALICE"))
    payload["team"]["id"] += LONE
    socket = SocketMode(slack.channel._ctx, slack.channel.webhook, "xapp-1-test", slack.fake.base_url)
    req = SocketModeRequest(type="interactive", envelope_id="env-surrogate", payload=payload)
    ack = await socket.answer(req)
    assert ack is not None and ack.envelope_id == "env-surrogate" and ack.payload is None
    assert await table_counts(slack.rt) == before
    await _waiting(slack.rt, approval_id)


TEAMS = {
    "from.name": _append("from", "name"),
    "channelData.tenant.id": _append("channelData", "tenant", "id"),
    "conversation.id": _append("conversation", "id"),
    "a key": _key,
}


@pytest.mark.parametrize("field", list(TEAMS))
async def test_a_lone_surrogate_in_a_teams_activity_is_a_400(teams: TeamsEnv, field: str) -> None:
    approval_id = await teams.suspend()
    card_id = await teams.posted(approval_id)
    before = await table_counts(teams.rt)
    activity = invoke(
        verb="approve",
        data=await teams.data(approval_id),
        service_url=teams.fake.service_url,
        user=TEAMS_ALICE,
        mri=MRIS[TEAMS_ALICE],
        card_id=card_id,
    )
    TEAMS[field](activity)
    status, body = await teams.send(activity)  # a valid Bot Framework token
    assert status == 400, body
    assert "surrogate" in body["error"]["message"]
    assert await table_counts(teams.rt) == before
    await _waiting(teams.rt, approval_id)


DISCORD = {
    "member.user.global_name": _append("member", "user", "global_name"),
    "data.custom_id": _append("data", "custom_id"),
    "guild_id": _append("guild_id"),
    "a key": _key,
}


@pytest.mark.parametrize("field", list(DISCORD))
async def test_a_lone_surrogate_in_a_discord_interaction_is_a_400(discord: DiscordEnv, field: str) -> None:
    approval_id = await discord.suspend()
    mid = await discord.posted(approval_id)
    before = await table_counts(discord.rt)
    custom_id = discord.button(mid, "Approve")
    payload = discord.fake.interaction(3, DISCORD_ALICE, custom_id=custom_id, channel=CARDS, message=mid)
    DISCORD[field](payload)
    body, headers = discord.fake.signed(payload)  # signed with the application's key
    resp = await discord.client.post("/webhooks/discord", data=body, headers=headers)
    assert resp.status == 400, await resp.text()
    assert "surrogate" in (await resp.json())["error"]["message"]
    assert await table_counts(discord.rt) == before
    await _waiting(discord.rt, approval_id)
