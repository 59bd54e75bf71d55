"""A card Slack refuses as too big degrades to a compact one instead of failing for good.

The fake refuses what Slack refuses (tests/fakes/slack_limits.py): a card with ten long
arguments is over the ~12,000-character block-text limit (`msg_blocks_too_long`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.slack import render
from adapters.slack.parse import make_ref
from gateway.core.models import DeliveryStatus
from gateway.testing import make_approval
from tests.fakes import slack_limits
from tests.slack.conftest import CARDS, SlackEnv

SLACK = f"slack:{CARDS}"
BIG_ARGS = {f"line_{i}": "x" * 1990 for i in range(10)}


def _kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events if e.channel == SLACK]


async def test_a_card_over_the_block_text_limit_is_posted_compact(slack: SlackEnv) -> None:
    aid = await slack.suspend(args=BIG_ARGS, summary="s" * 2500)
    await slack.rt.outbox.drain()
    full, compact = slack.fake.calls_to("chat.postMessage")
    assert slack_limits.message_error(full) == "msg_blocks_too_long"  # the fake refused it
    assert slack_limits.message_error(compact) is None
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.DONE
    text = json.dumps(compact["blocks"])
    assert f"/approvals/{aid}" in text and "the first 3 of 10 arguments" in text
    assert "line_0" in text and "line_2" in text and "line_3" not in text
    assert any(b["type"] == "actions" for b in compact["blocks"])  # still decidable in Slack
    events = await slack.rt.store.list_events(aid)
    assert _kinds(events) == ["post_attempt", "card_degraded", "card_posted"]  # both attempts recorded
    (degraded,) = [e for e in events if e.kind == "card_degraded"]
    assert "msg_blocks_too_long" in degraded.data["error"]


async def test_the_sync_of_a_big_card_degrades_too(slack: SlackEnv) -> None:
    aid = await slack.suspend(args=BIG_ARGS)
    await slack.posted(aid)
    resp = await slack.press("UALICE", "approve", aid)
    assert resp.status == 200
    await slack.rt.outbox.drain()
    full, compact = slack.fake.calls_to("chat.update")
    assert slack_limits.message_error(full) == "msg_blocks_too_long"
    assert "*Approved* by <@UALICE>" in json.dumps(compact["blocks"])
    assert _kinds(await slack.rt.store.list_events(aid))[-2:] == ["card_degraded", "card_synced"]


@pytest.mark.parametrize("error", ["msg_blocks_too_long", "msg_too_long", "invalid_blocks"])
async def test_each_too_big_error_gets_one_compact_retry(slack: SlackEnv, error: str) -> None:
    slack.fake.fail("chat.postMessage", error=error)
    aid = await slack.suspend()
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage")) == 2
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.DONE


async def test_a_refused_compact_card_fails_with_both_attempts_on_record(slack: SlackEnv) -> None:
    slack.fake.fail("chat.postMessage", error="invalid_blocks", times=2)
    aid = await slack.suspend()
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage")) == 2  # once compact, never a third time
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.FAILED
    assert _kinds(await slack.rt.store.list_events(aid)) == ["post_attempt", "card_degraded", "delivery_failed"]


async def test_other_errors_do_not_degrade(slack: SlackEnv) -> None:
    slack.fake.fail("chat.postMessage", error="channel_not_found")
    aid = await slack.suspend()
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage")) == 1
    assert "card_degraded" not in _kinds(await slack.rt.store.list_events(aid))


# ---------------------------------------------------------------- the fake's limits themselves


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"text": "x" * 40_001}, "msg_too_long"),
        ({"text": "t", "blocks": [_section("a")] * 51}, "invalid_blocks"),
        (
            {"text": "t", "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}]},
            "invalid_blocks",
        ),
        ({"text": "t", "blocks": [_section("s" * 3001)]}, "invalid_blocks"),
        (
            {"text": "t", "blocks": [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}]},
            "invalid_blocks",
        ),
        ({"text": "t", "blocks": [_section("s" * 3000)] * 5}, "msg_blocks_too_long"),
        ({"text": "t", "blocks": [_section("s" * 3000)] * 4}, None),
    ],
)
def test_the_fake_refuses_what_slack_refuses(body: dict[str, Any], error: str | None) -> None:
    assert slack_limits.message_error(body) == error


def test_every_compact_card_is_within_the_limits(slack: SlackEnv) -> None:
    policy = slack.rt.settings.policies["remind"]
    long = "<&>" * 5000
    approval = make_approval(policy, slack.clock.now(), title=long, summary=long, args={long: long, "b": [long] * 9})
    ref = make_ref(slack.rt.signer, approval.id)
    body = {"text": render.card_text(approval), "blocks": render.compact_blocks(approval, ref, "https://gw.example/a")}
    assert slack_limits.message_error(body) is None
