"""POST /webhooks/discord over real HTTP, signed like Discord, with the channel on the fake API."""

from __future__ import annotations

import json

from gateway.core.models import Status
from tests.discord.support import ALICE, BOB, CARDS, MALLORY, DiscordEnv


def _text(message: dict[str, object]) -> str:
    return json.dumps(message, ensure_ascii=False)


async def test_a_ping_gets_a_pong(discord: DiscordEnv) -> None:
    done = await discord.send(discord.fake.interaction(1, ""))
    assert (done.status, done.body) == (200, {"type": 1})
    assert discord.fake.failures == []


async def test_the_card_is_posted_with_buttons_within_discords_limits(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    card = discord.message(mid)
    assert card["embeds"][0]["title"] == "Charge ACME $42"
    assert {"name": "amount", "value": "4200", "inline": True} in card["embeds"][0]["fields"]
    labels = [b["label"] for row in card["components"] for b in row["components"]]
    assert labels == ["Approve", "Reject", "Reject with reason…"]  # not editable: no Edit
    assert card["allowed_mentions"] == {"parse": []}
    assert all(len(b["custom_id"]) <= 100 for row in card["components"] for b in row["components"])


async def test_approve_defers_within_the_window_then_edits_the_card(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    done = await discord.press(ALICE, discord.button(mid, "Approve"), mid)
    assert (done.status, done.body) == (200, {"type": 6})
    assert discord.fake.failures == []
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    assert approval.decision is not None
    assert (approval.decision.decided_by, approval.decision.channel) == (f"discord:{ALICE}", f"discord:{CARDS}")
    (original,) = discord.fake.calls_to("PATCH", "/messages/@original")
    assert original.status == 200
    card = discord.message(mid)
    assert card["components"] == []  # buttons removed
    assert f"**Approved** by <@{ALICE}>" in _text(card)
    assert discord.fake.replies(ALICE) == []  # the card says it all
    await discord.rt.outbox.drain()  # the outbox's sync draws the same
    assert discord.message(mid)["components"] == []


async def test_reject_then_a_late_press_is_told_who_decided(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    reject = discord.button(mid, "Reject")
    await discord.press(ALICE, reject, mid)
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.REJECTED
    assert f"**Rejected** by <@{ALICE}>" in _text(discord.message(mid))
    await discord.press(BOB, reject, mid)
    (reply,) = discord.fake.replies(BOB)
    assert reply.startswith("Already rejected by")
    assert discord.fake.failures == []


async def test_a_stranger_is_told_not_authorised_and_the_card_keeps_its_buttons(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    done = await discord.press(MALLORY, discord.button(mid, "Approve"), mid)
    assert (done.status, done.body) == (200, {"type": 6})
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING and approval.votes == ()
    assert discord.message(mid)["components"] != []
    (reply,) = discord.fake.replies(MALLORY)
    assert "not authorised" in reply
    assert discord.fake.edits == []
