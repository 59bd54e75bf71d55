"""Teams card delivery through the outbox, against the fake Bot Connector: every call carries a
token from the token endpoint (renewed after a 401), 429 waits `Retry-After`, a conversation the
bot is not in fails for good and visibly, and a reminder is a reply in the card's thread."""

from __future__ import annotations

import pytest

from gateway.core.models import DeliveryStatus, OutboxKind
from tests.conftest import OPERATOR
from tests.fakes.teams_api import CONVERSATION
from tests.teams.conftest import TeamsEnv

TEAMS = f"teams:{CONVERSATION}"


async def test_a_revoked_token_is_renewed_and_the_update_goes_through(teams: TeamsEnv) -> None:
    aid = await teams.suspend()
    card_id = await teams.posted(aid)
    assert teams.fake.token_requests == 1
    teams.fake.tokens.clear()  # the connector no longer takes the cached token
    resp = await teams.client.post(f"/v1/approvals/{aid}/decision", json={"outcome": "reject"}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    await teams.rt.outbox.drain()  # 401: transient, the token dropped
    teams.clock.advance(120)
    await teams.rt.outbox.drain()
    assert teams.fake.token_requests == 2
    puts = teams.fake.calls_to("PUT", f"/activities/{card_id}")
    assert [c.status for c in puts] == [401, 200]
    assert "**Rejected**" in str(teams.card(card_id))


async def test_429_waits_retry_after(teams: TeamsEnv) -> None:
    teams.fake.fail_next = [429]
    aid = await teams.suspend()
    await teams.rt.outbox.drain()
    (row,) = [r for r in await teams.rt.store.list_outbox(aid) if r.channel == TEAMS and r.kind is OutboxKind.POST]
    assert row.status is DeliveryStatus.PENDING and row.last_error == "teams POST activities: HTTP 429"
    assert (row.next_attempt_at - teams.clock.now()).total_seconds() == pytest.approx(7)
    teams.clock.advance(7)
    await teams.posted(aid)


@pytest.mark.parametrize("status", [403, 404])
async def test_a_conversation_the_bot_cannot_post_in_fails_visibly(teams: TeamsEnv, status: int) -> None:
    teams.fake.fail_next = [status]
    aid = await teams.suspend()
    await teams.rt.outbox.drain()
    card = await teams.rt.store.get_card(aid, TEAMS)
    assert card is not None and card.status is DeliveryStatus.FAILED
    assert card.error == f"teams POST activities: HTTP {status}"


async def test_a_reminder_is_a_reply_under_the_card(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="remind")
    card_id = await teams.posted(aid)
    now = teams.clock.advance(minutes=50)  # 10 minutes before the deadline
    assert await teams.rt.service.apply_due(aid, now) == "reminded"
    await teams.rt.outbox.drain()
    (reply,) = teams.fake.calls_to("POST", f"/activities/{card_id}", ok_only=True)
    assert reply.body["replyToId"] == card_id and "still needs a decision" in reply.body["text"]
