"""Discord interactions that must be refused, with nothing changed: a bad or missing signature,
a stale or replayed request, a press from another server or a DM, a stranger's press, and a
forged button. Signed with a test Ed25519 key, against the real app on the fake Discord API.

The interactions endpoint is the application's, shared by every server the bot is in, and a
user id says nothing about the server; so a press names its guild and the guild must be in
`discord.guild_ids`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from adapters.discord.verify import sign
from gateway.core.models import Status
from tests.discord.support import ALICE, BOB, CARDS, MALLORY, PATH, DiscordEnv, discord, discord_settings, fake_discord
from tests.fakes.discord_api import OTHER_GUILD
from tests.helpers import table_counts

__all__ = ["discord", "discord_settings", "fake_discord"]  # the fixtures


async def _unchanged(discord: DiscordEnv, aid: str, mid: str) -> None:
    """Undecided, no vote, the card untouched and no call to Discord after the post."""
    await discord.channel.settle()
    await discord.rt.outbox.drain()
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING and approval.votes == ()
    assert discord.fake.edits == []
    assert discord.fake.calls_to("PATCH", "/") == [] and len(discord.fake.calls_to("POST", "/channels/")) == 1
    assert discord.message(mid)["components"] != []


@pytest.mark.parametrize(
    "case", ["tampered", "wrong-key", "no-signature", "no-timestamp", "not-hex", "short", "stale", "future"]
)
async def test_a_bad_signature_gets_401_and_changes_nothing(discord: DiscordEnv, case: str) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    before = await table_counts(discord.rt)
    payload = discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "Approve"), channel=CARDS, message=mid)
    now = discord.clock.now().timestamp()
    body, headers = discord.fake.signed(payload)
    if case == "tampered":
        body = body.replace(ALICE.encode(), BOB.encode())
    elif case == "wrong-key":
        body, headers = discord.fake.signed(payload, key=Ed25519PrivateKey.generate())
    elif case == "no-signature":
        del headers["X-Signature-Ed25519"]
    elif case == "no-timestamp":
        del headers["X-Signature-Timestamp"]
    elif case == "not-hex":
        headers["X-Signature-Ed25519"] = "zz" * 64
    elif case == "short":
        headers["X-Signature-Ed25519"] = headers["X-Signature-Ed25519"][:64]
    elif case == "stale":
        body, headers = discord.fake.signed(payload, at=now - 301)
    else:
        body, headers = discord.fake.signed(payload, at=now + 301)
    resp = await discord.client.post(PATH, data=body, headers=headers)
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "invalid_signature"
    await _unchanged(discord, aid, mid)
    assert await table_counts(discord.rt) == before


async def test_a_ping_with_a_bad_signature_gets_401(discord: DiscordEnv) -> None:
    """Discord saves the endpoint only if it refuses a bad signature."""
    payload = discord.fake.interaction(1, "")
    body, headers = discord.fake.signed(payload)
    headers["X-Signature-Ed25519"] = sign(Ed25519PrivateKey.generate(), headers["X-Signature-Timestamp"], body)
    assert (await discord.client.post(PATH, data=body, headers=headers)).status == 401
    good = await discord.send(discord.fake.interaction(1, ""))
    assert good.body == {"type": 1}


async def test_a_replayed_interaction_is_refused(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="two")
    mid = await discord.posted(aid)
    payload = discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "Approve"), channel=CARDS, message=mid)
    body, headers = discord.fake.signed(payload)
    assert (await discord.client.post(PATH, data=body, headers=headers)).status == 200  # Alice's vote
    await discord.channel.settle()
    before, calls = await table_counts(discord.rt), len(discord.fake.calls)
    again = await discord.client.post(PATH, data=body, headers=headers)  # the same request, within the window
    assert again.status == 401
    await discord.channel.settle()
    assert await table_counts(discord.rt) == before and len(discord.fake.calls) == calls
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and len(approval.votes) == 1


@pytest.mark.parametrize("where", ["another-guild", "dm"])
@pytest.mark.parametrize("label", ["Approve", "Reject", "Reject with reason…"])
async def test_a_press_from_outside_the_guilds_is_refused(discord: DiscordEnv, where: str, label: str) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    guild = OTHER_GUILD if where == "another-guild" else None
    done = await discord.press(ALICE, discord.button(mid, label), mid, guild=guild)  # an approver's id
    assert done.status == 200 and done.body is not None
    assert done.body["type"] == 4 and done.body["data"]["flags"] == 64  # ephemeral: no modal, no update
    assert "not authorised" in done.body["data"]["content"]
    await _unchanged(discord, aid, mid)
    events = [e for e in await discord.rt.store.list_events(aid) if e.kind == "denied"]
    assert len(events) == 1 and "guild_ids" in json.dumps(events[0].data)


async def test_a_modal_submitted_from_another_guild_is_refused(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    custom_id = f"hitl:reason:{discord.ref(aid)}"
    payload = discord.fake.interaction(
        5, ALICE, custom_id=custom_id, channel=CARDS, message=mid, guild=OTHER_GUILD, values={"reason": "x"}
    )
    done = await discord.send(payload)
    assert done.body is not None and done.body["type"] == 4
    await _unchanged(discord, aid, mid)


@pytest.mark.parametrize("label", ["Approve", "Reject"])
async def test_a_non_approver_press_is_refused_and_changes_nothing(discord: DiscordEnv, label: str) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    await discord.press(MALLORY, discord.button(mid, label), mid)
    assert any("not authorised" in r for r in discord.fake.replies(MALLORY))
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING and approval.votes == ()
    assert discord.fake.edits == [] and discord.message(mid)["components"] != []


@pytest.mark.parametrize("forgery", ["other-mac", "no-mac", "unknown-verb"])
async def test_a_forged_button_is_refused_before_any_lookup(discord: DiscordEnv, forgery: str) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    before = await table_counts(discord.rt)
    custom_id: dict[str, Any] = {
        "other-mac": f"hitl:approve:{aid}." + "0" * 32,
        "no-mac": f"hitl:approve:{aid}",
        "unknown-verb": f"hitl:delete:{discord.ref(aid)}",
    }
    done = await discord.press(ALICE, custom_id[forgery], mid)
    assert done.status == 400
    await _unchanged(discord, aid, mid)
    assert await table_counts(discord.rt) == before
