"""A signed Slack interaction captured on its way (a proxy's log, a debugging dump) and sent
again within Slack's five-minute signature window extends nothing more and decides nothing.
The same holds for a modal's submission (reject with a reason, edit and approve).

Slack does not send an interaction twice to the request URL, so the webhook recorded no
de-duplication mark: every channel but this one tied a '+1h' press to its delivery id, and a
replay of the very same signed request extended the deadline again, up to `max_extensions`,
and a press refused when it came (its presser could not decide then) decided when replayed once
they could. A press now commits its `trigger_id` (unique per interaction) as its mark."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from gateway.core.models import Status
from gateway.settings import Settings
from tests.fakes.slack_api import FakeSlack, block_actions, edit_submission, signed, view_submission
from tests.helpers import table_counts
from tests.slack.conftest import PATH, SlackEnv, fake_slack, slack, slack_section  # noqa: F401 (fixtures)


@pytest.fixture
def slack_settings(settings_factory: Callable[..., Settings], fake_slack: FakeSlack) -> Settings:  # noqa: F811
    return settings_factory(
        slack=slack_section(fake_slack),
        policies={"roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3}},
    )


async def test_a_replayed_signed_slack_extend_extends_once(slack: SlackEnv) -> None:  # noqa: F811
    aid = await slack.suspend(policy="roomy")
    await slack.posted(aid)
    ref = slack.ref(aid)
    press = block_actions("UBOB", f"hitl:extend.1h:{ref}", ref, response_url=slack.fake.response_url("bob"))
    body, headers = signed(press, slack.clock.now().timestamp())
    assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    assert (await slack.rt.service.get(aid)).extensions == 1
    counts = await table_counts(slack.rt)

    for _ in range(2):  # the same bytes, the same signature, inside the window
        assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    assert (await slack.rt.service.get(aid)).extensions == 1  # before: 3
    assert await table_counts(slack.rt) == counts


async def test_a_replayed_signed_slack_approve_decides_nothing_more(slack: SlackEnv) -> None:  # noqa: F811
    """A stranger's approve is refused; the same signed request replayed decides nothing either."""
    aid = await slack.suspend()
    await slack.posted(aid)
    ref = slack.ref(aid)
    press = block_actions("UMALLORY", f"hitl:approve:{ref}", ref, response_url=slack.fake.response_url("m"))
    body, headers = signed(press, slack.clock.now().timestamp())
    assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    counts = await table_counts(slack.rt)
    assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    assert (await slack.rt.service.get(aid)).status is Status.WAITING
    assert await table_counts(slack.rt) == counts  # before: a second `denied` on the record


@pytest.mark.parametrize("kind", ["reason", "edit"])
async def test_a_replayed_signed_slack_modal_submission_records_nothing_more(slack: SlackEnv, kind: str) -> None:  # noqa: F811
    """A stranger's reject-with-reason, or edit and approve, is refused on the record once; its
    replay adds nothing."""
    aid = await slack.suspend()
    await slack.posted(aid)
    meta = json.dumps({"ref": slack.ref(aid), "channel": "C0CARDS"})
    sent = (
        view_submission("UMALLORY", meta, "no")
        if kind == "reason"
        else edit_submission("UMALLORY", meta, {"amount": "1"})
    )
    body, headers = signed(sent, slack.clock.now().timestamp())
    assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    counts = await table_counts(slack.rt)
    assert (await slack.client.post(PATH, data=body, headers=headers)).status == 200
    assert (await slack.rt.service.get(aid)).status is Status.WAITING
    assert await table_counts(slack.rt) == counts  # before: a second `denied` on the record
