"""Discord card delivery through the outbox: 429 waits exactly `retry_after`, 5xx is retried, a
post sent again after an unknown outcome is the same message (the enforced nonce), every outcome
edits the card, reminders reply to it, and a card stays within Discord's limits."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from adapters.discord import webhook
from gateway.core.models import DeliveryStatus, OutboxKind, Status
from gateway.plugin import Press, PressOutcome
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.discord.support import ALICE, BOB, CARDS, ONCALL, DiscordEnv

DISCORD = f"discord:{CARDS}"


async def _post_row(discord: DiscordEnv, aid: str) -> tuple[DeliveryStatus, int, float, str | None]:
    (row,) = [r for r in await discord.rt.store.list_outbox(aid) if r.channel == DISCORD and r.kind is OutboxKind.POST]
    return row.status, row.attempts, (row.next_attempt_at - discord.clock.now()).total_seconds(), row.last_error


async def test_429_waits_exactly_retry_after_then_posts_once(discord: DiscordEnv) -> None:
    discord.fake.fail("post", 429, retry_after=7.5)
    aid = await discord.suspend()
    await discord.rt.outbox.run_once()
    status, attempts, delay, error = await _post_row(discord, aid)
    assert (status, attempts, delay) == (DeliveryStatus.PENDING, 1, 7.5)
    assert error is not None and "HTTP 429" in error
    discord.clock.advance(7.4)
    assert await discord.rt.outbox.run_once() == 0
    discord.clock.advance(0.1)
    await discord.rt.outbox.drain()
    assert [c.status for c in discord.fake.calls_to("POST", "/channels/")] == [429, 200]
    assert len(discord.fake.cards(CARDS)) == 1


async def test_a_5xx_is_retried_and_a_bad_token_is_terminal(discord: DiscordEnv, fake_discord: Any) -> None:
    discord.fake.fail("post", 502)
    aid = await discord.suspend()
    await discord.rt.outbox.run_once()
    status, attempts, _, _ = await _post_row(discord, aid)
    assert (status, attempts) == (DeliveryStatus.PENDING, 1)
    discord.clock.advance(60)
    await discord.rt.outbox.drain()
    assert (await _post_row(discord, aid))[0] is DeliveryStatus.DONE
    discord.fake.fail("post", 403)
    other = await discord.suspend(run_id="run-2")
    await discord.rt.outbox.drain()
    status, _, _, error = await _post_row(discord, other)
    assert status is DeliveryStatus.FAILED and error is not None and "HTTP 403" in error


async def test_a_post_sent_again_is_the_same_message(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None
    body = {**discord.channel.card(approval), "nonce": aid, "enforce_nonce": True}
    first = await discord.channel.call("POST", f"/channels/{CARDS}/messages", body)  # a post whose answer was lost
    mid = await discord.posted(aid)
    assert mid == first["id"] and len(discord.fake.cards(CARDS)) == 1


@pytest.mark.parametrize("source", ["token", "cancel", "timeout", "operator"])
async def test_every_decision_source_edits_the_card(discord: DiscordEnv, source: str) -> None:
    resp = await discord.client.post(
        "/v1/suspend", json=suspend_body(channels=[DISCORD, "web"], policy="remind"), headers=AUTH
    )
    aid, token = (await resp.json())["id"], (await resp.json())["resume_token"]
    mid = await discord.posted(aid)
    if source == "token":
        resp = await discord.client.post("/v1/resume", json={"token": token, "outcome": "reject", "comment": "no"})
        expected = "**Rejected** by token"
    elif source == "cancel":
        resp = await discord.client.post(f"/v1/approvals/{aid}/cancel", json={"by": "web:ops"}, headers=OPERATOR)
        expected = "**Cancelled** by test (operator)"
    elif source == "operator":
        resp = await discord.client.post(f"/v1/approvals/{aid}/decision", json={"outcome": "approve"}, headers=OPERATOR)
        expected = "**Approved** by test (operator)"
    else:
        discord.clock.advance(timedelta(hours=1).total_seconds())
        assert await discord.rt.service.apply_due(aid, discord.clock.now()) == "timed_out"
        expected = "**Timed out**: rejected by policy"
    if source != "timeout":
        assert resp.status == 200, await resp.text()
    await discord.rt.outbox.drain()
    (edit,) = discord.fake.calls_to("PATCH", f"/channels/{CARDS}/messages/{mid}")
    assert edit.status == 200 and edit.body["components"] == []
    outcome = next(f["value"] for f in edit.body["embeds"][0]["fields"] if f["name"] == "Outcome")
    assert expected in outcome, outcome


async def test_a_reminder_replies_to_the_card(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="remind")
    mid = await discord.posted(aid)
    discord.clock.advance(timedelta(minutes=50).total_seconds())  # 10 minutes before the deadline
    assert await discord.rt.service.apply_due(aid, discord.clock.now()) == "reminded"
    await discord.rt.outbox.drain()
    posts = discord.fake.calls_to("POST", f"/channels/{CARDS}/messages")
    assert len(posts) == 2
    reminder = posts[1].body
    assert reminder["message_reference"]["message_id"] == mid and "Reminder" in reminder["content"]


async def test_a_quorum_vote_keeps_the_buttons_and_counts(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="two")
    mid = await discord.posted(aid)
    await discord.press(ALICE, discord.button(mid, "Approve"), mid)
    assert "1 of 2 approvals" in discord.message(mid)["embeds"][0]["footer"]["text"]
    assert discord.message(mid)["components"] != []
    assert discord.fake.replies(ALICE) == ["Your approval is recorded: 1 of 2 approvals."]
    await discord.press(BOB, discord.button(mid, "Approve"), mid)
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    assert discord.message(mid)["components"] == []


async def test_a_huge_request_still_fits_discords_limits(discord: DiscordEnv) -> None:
    args = {f"field_{i}_" + "k" * 300: "v" * 3000 for i in range(40)}
    aid = await discord.suspend(title="T" * 300, summary="*" * 4000, args=args)
    mid = await discord.posted(aid)  # the fake refuses anything over a limit (400, 50035)
    fields = discord.message(mid)["embeds"][0]["fields"]
    assert len(fields) <= 25 and any(f["value"].endswith("more") for f in fields)
    await discord.press(ALICE, discord.button(mid, "Approve"), mid)
    assert discord.message(mid)["components"] == [] and discord.fake.failures == []


async def test_a_slow_commit_is_answered_deferred_in_time_and_the_card_follows(
    discord: DiscordEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    inbound = discord.channel._ctx.inbound
    release, real = asyncio.Event(), inbound.press

    async def slow(p: Press) -> PressOutcome:
        await release.wait()  # the store is slow today
        return await real(p)

    monkeypatch.setattr(inbound, "press", slow)
    monkeypatch.setattr(webhook, "ACK_BUDGET", 0.05)
    payload = discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "Approve"), channel=CARDS, message=mid)
    done = await asyncio.wait_for(discord.fake.deliver(discord.client.post, "/webhooks/discord", payload), 5)
    assert (done.status, done.body) == (200, {"type": 6}) and discord.fake.failures == []
    assert discord.message(mid)["components"] != []  # not decided yet
    release.set()
    await discord.channel.settle()
    assert discord.message(mid)["components"] == []
    assert "**Approved**" in json.dumps(discord.message(mid), ensure_ascii=False)


async def test_the_fake_fails_an_interaction_answered_late(discord: DiscordEnv) -> None:
    discord.fake.window = 0.0  # every answer takes some time: all are late
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    await discord.press(ALICE, discord.button(mid, "Approve"), mid)
    assert len(discord.fake.failures) == 1 and "answered after" in discord.fake.failures[0]
    assert discord.fake.calls_to("PATCH", "@original")[0].status == 404  # no webhook for a failed interaction


async def test_a_press_on_one_card_edits_the_card_in_the_other_channel(discord: DiscordEnv) -> None:
    aid = await discord.suspend(channels=[DISCORD, f"discord:{ONCALL}", "web"])
    mid = await discord.posted(aid)
    ((other, card),) = discord.fake.cards(ONCALL)
    assert card["components"] != []
    await discord.press(ALICE, discord.button(mid, "Approve"), mid)
    await discord.rt.outbox.drain()
    synced = discord.fake.messages[(ONCALL, other)]
    assert synced["components"] == [] and f"**Approved** by <@{ALICE}>" in json.dumps(synced, ensure_ascii=False)
