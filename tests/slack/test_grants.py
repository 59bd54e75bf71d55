"""Standing grants on Slack, over real HTTP with the real AsyncWebClient on the fake: the card
offers "Approve · 1h" per grant its policy offers; the press makes the grant; a later approval
that grant decides has a card that says so."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from adapters.slack.render import card_blocks
from gateway.config import Settings
from gateway.core.models import Status
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import SlackEnv, slack_section


@pytest.fixture
def slack_settings(settings_factory: Callable[..., Settings], fake_slack: FakeSlack) -> Settings:
    return settings_factory(
        slack=slack_section(fake_slack), policies={"trusted": {"grants": ["1h", "run"]}}, web={"approvers": ["alice"]}
    )


async def test_approve_for_1h_from_slack_makes_a_grant(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="trusted")
    await slack.posted(aid)
    (post,) = slack.fake.calls_to("chat.postMessage")
    buttons = [e for b in post["blocks"] if b["type"] == "actions" for e in b["elements"]]
    grant_ids = {e["text"]["text"]: e["action_id"] for e in buttons if e["action_id"].startswith("hitl:grant.")}
    assert set(grant_ids) == {"Approve · 1h", "Approve · this run"}
    verb = grant_ids["Approve · 1h"].split(":")[1]  # grant.1h.<round tag>
    assert (await slack.press("UALICE", verb, aid)).status == 200
    approval = await slack.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    [grant] = await slack.rt.store.list_grants(slack.clock.now())
    assert (grant.granted_by, grant.duration) == ("slack:UALICE", "1h")

    second = await slack.suspend(policy="trusted", run_id="run-2")
    decided = await slack.rt.store.get_approval(second)
    assert decided is not None and decided.decision is not None
    assert decided.decision.decided_by == f"grant:{grant.id}"
    assert f"under standing grant `grant:{grant.id}`" in json.dumps(card_blocks(decided, "ref"), ensure_ascii=False)


async def test_a_grant_the_policy_does_not_offer_is_refused(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="trusted")
    await slack.posted(aid)
    assert (await slack.press("UALICE", "grant.8h.0", aid)).status == 200
    approval = await slack.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING
    assert await slack.rt.store.list_grants(slack.clock.now()) == []
