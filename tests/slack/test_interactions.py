"""POST /webhooks/slack/interactions over real HTTP, with the real AsyncWebClient on the fake."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from gateway.core.models import Outcome, Status
from tests.fakes.slack_api import block_actions, sign, signed, view_submission
from tests.helpers import table_counts
from tests.slack.conftest import CARDS, PATH, SlackEnv


def _no_buttons(blocks: list[dict[str, Any]]) -> bool:
    return all(b["type"] != "actions" for b in blocks)


async def test_approve_commits_acks_and_syncs_the_card(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    ts = await slack.posted(aid)
    resp = await slack.press("UALICE", "approve", aid)
    assert resp.status == 200
    approval = await slack.rt.store.get_approval(aid)  # committed before the ack
    assert approval is not None and approval.status is Status.APPROVED
    assert approval.decision is not None
    assert (approval.decision.decided_by, approval.decision.channel) == ("slack:UALICE", f"slack:{CARDS}")
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert (update["channel"], update["ts"]) == (CARDS, ts)
    assert _no_buttons(update["blocks"])
    assert "*Approved* by <@UALICE>" in json.dumps(update["blocks"])
    await slack.channel.settle()
    assert slack.fake.responses == []  # the card says it all


@pytest.mark.parametrize("case", ["tampered", "stale", "missing", "malformed", "wrong-secret", "no-signature"])
async def test_bad_signatures_get_401_and_change_nothing(slack: SlackEnv, case: str) -> None:
    aid = await slack.suspend()
    await slack.posted(aid)
    before, calls = await table_counts(slack.rt), len(slack.fake.calls)
    ref = slack.ref(aid)
    payload = block_actions("UALICE", f"hitl:approve:{ref}", ref, response_url=slack.fake.response_url("x"))
    now = slack.clock.now().timestamp()
    body, headers = signed(payload, now)
    if case == "tampered":
        body = body.replace(b"UALICE", b"UBOBBY")
    elif case == "stale":
        body, headers = signed(payload, now - 301)
    elif case == "missing":
        del headers["X-Slack-Request-Timestamp"]
    elif case == "malformed":
        headers["X-Slack-Request-Timestamp"] = "soon"
        headers["X-Slack-Signature"] = sign("test-signing-secret-0123456789", "soon", body)
    elif case == "wrong-secret":
        body, headers = signed(payload, now, secret="not-the-secret")
    else:
        del headers["X-Slack-Signature"]
    resp = await slack.client.post(PATH, data=body, headers=headers)
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "invalid_signature"
    await slack.channel.settle()
    await slack.rt.outbox.drain()
    assert await table_counts(slack.rt) == before
    assert len(slack.fake.calls) == calls and slack.fake.responses == []


async def test_a_stranger_is_told_not_authorised_and_nothing_changes(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    await slack.posted(aid)
    before = await table_counts(slack.rt)
    resp = await slack.press("UMALLORY", "approve", aid)
    assert resp.status == 200
    await slack.channel.settle()
    (reply,) = slack.fake.replies("UMALLORY")
    assert reply["response_type"] == "ephemeral" and "not authorised" in reply["text"]
    after = await table_counts(slack.rt)
    assert after["approvals"] == before["approvals"] and after["outbox"] == before["outbox"]
    assert (await slack.event_kinds(aid))[-1] == "denied"  # on the record, nothing else
    await slack.rt.outbox.drain()
    assert slack.fake.calls_to("chat.update") == []


async def test_reject_with_reason_through_the_modal(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    ts = await slack.posted(aid)
    resp = await slack.press("UBOB", "reason", aid)
    assert resp.status == 200
    assert (await slack.rt.service.get(aid)).status is Status.WAITING  # the button alone decides nothing
    await slack.channel.settle()
    (opened,) = slack.fake.calls_to("views.open")
    assert str(opened["trigger_id"]).startswith("trig-")  # the press's own
    view = opened["view"]
    assert view["blocks"][1]["element"]["multiline"] is True
    # Slack sends back the private_metadata we put in the modal.
    resp = await slack.send(view_submission("UBOB", view["private_metadata"], "Wrong amount, should be $24"))
    assert resp.status == 200 and await resp.text() == ""  # closes the modal
    approval = await slack.rt.service.get(aid)
    assert approval.status is Status.REJECTED and approval.decision is not None
    assert (approval.decision.decided_by, approval.decision.comment) == ("slack:UBOB", "Wrong amount, should be $24")
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert update["ts"] == ts and _no_buttons(update["blocks"])
    text = json.dumps(update["blocks"])
    assert "*Rejected* by <@UBOB>" in text and "> Wrong amount, should be $24" in text


async def test_reason_modal_refuses_empty_reason_and_strangers(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    meta = json.dumps({"ref": slack.ref(aid), "channel": CARDS})
    resp = await slack.send(view_submission("UBOB", meta, "   "))
    assert (await resp.json())["response_action"] == "errors"
    resp = await slack.send(view_submission("UMALLORY", meta, "I say no"))
    body = await resp.json()
    assert body["response_action"] == "errors" and "not authorised" in body["errors"]["reason"]
    assert (await slack.rt.service.get(aid)).status is Status.WAITING
    resp = await slack.press("UMALLORY", "reason", aid)  # a stranger gets no modal
    await slack.channel.settle()
    assert slack.fake.calls_to("views.open") == []
    assert "not authorised" in slack.fake.replies("UMALLORY")[0]["text"]


async def test_double_press_from_two_approvers_gives_exactly_one_decision(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    await slack.posted(aid)
    alice, bob = await asyncio.gather(slack.press("UALICE", "approve", aid), slack.press("UBOB", "approve", aid))
    assert alice.status == bob.status == 200
    approval = await slack.rt.service.get(aid)
    assert approval.status is Status.APPROVED and approval.decision is not None
    winner = approval.decision.decided_by.removeprefix("slack:")
    loser = "UBOB" if winner == "UALICE" else "UALICE"
    kinds = await slack.event_kinds(aid)
    assert kinds.count("approved") == 1 and "rejected" not in kinds
    await slack.channel.settle()
    assert slack.fake.replies(winner) == []
    (reply,) = slack.fake.replies(loser)
    assert reply["text"] == f"Already approved by <@{winner}>; nothing changed."
    assert reply["response_type"] == "ephemeral"
    jobs = await slack.rt.store.list_jobs()
    assert len([j for j in jobs if j.approval_id == aid]) <= 1


async def test_quorum_progress_is_shown_on_the_card(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="two")
    await slack.posted(aid)
    await slack.press("UALICE", "approve", aid)
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert "1 of 2 approvals" in json.dumps(update["blocks"]) and not _no_buttons(update["blocks"])
    await slack.channel.settle()
    assert "1 of 2 approvals" in slack.fake.replies("UALICE")[0]["text"]
    await slack.press("UBOB", "approve", aid)
    assert (await slack.rt.service.get(aid)).status is Status.APPROVED
    await slack.rt.outbox.drain()
    assert _no_buttons(slack.fake.calls_to("chat.update")[-1]["blocks"])


async def test_the_approvals_own_approvers_narrow_the_allowlist_never_widen_it(slack: SlackEnv) -> None:
    # The agent that suspends names its approvers: it may narrow the operator's allowlist
    # (UALICE, UBOB) but cannot add someone outside it (UCAROL).
    aid = await slack.suspend(approvers=["slack:UBOB", "slack:UCAROL"])
    await slack.press("UALICE", "approve", aid)  # allowlisted, but not named
    assert (await slack.rt.service.get(aid)).status is Status.WAITING
    await slack.press("UCAROL", "approve", aid)  # named, but not allowlisted
    assert (await slack.rt.service.get(aid)).status is Status.WAITING
    await slack.press("UBOB", "approve", aid)
    assert (await slack.rt.service.get(aid)).status is Status.APPROVED


async def test_forged_button_reference_is_refused(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    before = await table_counts(slack.rt)
    forged = aid + "." + "0" * 32
    resp = await slack.send(block_actions("UALICE", f"hitl:approve:{forged}", forged))
    assert resp.status == 400
    assert await table_counts(slack.rt) == before


async def test_web_decision_syncs_the_slack_card(slack: SlackEnv) -> None:
    """One approval on Slack and the web inbox: deciding on the web updates the Slack card."""
    aid = await slack.suspend()
    ts = await slack.posted(aid)
    await slack.rt.service.decide(aid, Outcome.APPROVE, "web:alice", comment="ok", channel="web")  # the inbox's call
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert update["ts"] == ts and _no_buttons(update["blocks"])
    assert "*Approved* by alice (web)" in json.dumps(update["blocks"])
    view = await slack.api(aid)
    assert {c["channel"]: c["status"] for c in view["cards"]} == {f"slack:{CARDS}": "done", "web": "done"}
    assert view["status"] == "approved"
    await slack.press("UBOB", "reject", aid)  # a late Slack press changes nothing
    await slack.channel.settle()
    assert slack.fake.replies("UBOB")[0]["text"] == "Already approved by alice (web); nothing changed."
    assert (await slack.rt.service.get(aid)).status is Status.APPROVED


async def test_slow_slack_after_the_ack_does_not_delay_the_ack(slack: SlackEnv) -> None:
    """views.open hangs: the press is still acked at once (the modal opens after the ack)."""
    aid = await slack.suspend()
    release = slack.fake.hold("views.open")
    start = time.perf_counter()
    resp = await slack.press("UBOB", "reason", aid)
    assert resp.status == 200 and time.perf_counter() - start < 1.0
    await slack.fake.wait_arrived("views.open")
    release.set()
    await slack.channel.settle()
    assert len(slack.fake.calls_to("views.open", ok_only=True)) == 1


async def test_a_failed_views_open_tells_the_presser(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    slack.fake.fail("views.open", error="expired_trigger_id")
    await slack.press("UBOB", "reason", aid)
    await slack.channel.settle()
    assert "press the button again" in slack.fake.replies("UBOB")[0]["text"]
    assert (await slack.rt.service.get(aid)).status is Status.WAITING


async def test_a_press_from_an_id_that_is_no_member_id_is_refused_not_a_400(slack: SlackEnv) -> None:
    """Identities are parsed per kind: a bot id (B…) is no Slack member id; nobody decides as it."""
    approval_id = await slack.suspend()
    await slack.posted(approval_id)
    resp = await slack.press("B0BOT", "approve", approval_id)
    assert resp.status == 200
    await slack.channel.settle()
    assert "not authorised" in slack.fake.replies("B0BOT")[0]["text"]
    assert (await slack.api(approval_id))["status"] == "waiting_approval"
    assert "denied" not in await slack.event_kinds(approval_id)  # no record of a non-identity
