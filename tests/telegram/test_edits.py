"""Telegram: the Edit button (a one-time link to the web form, sent privately to the presser),
the card showing the change, extend buttons and a reject that must say why."""

from __future__ import annotations

import json
import re

import pytest

from gateway.core.models import Status
from gateway.service import editlinks
from tests.telegram.conftest import ALICE, BOB, CHAT, MALLORY, TG
from tests.web.conftest import csrf_of

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}}}
EDITABLE = {"args_schema": SCHEMA, "editable": ["amount"]}


def _link(tg: TG) -> str:
    sent = [c.params for c in tg.api.calls_to("sendMessage") if int(c.params["chat_id"]) == ALICE]
    assert sent, "no private message to the presser"
    markup = sent[-1]["reply_markup"]
    markup = markup if isinstance(markup, dict) else json.loads(markup)
    url = markup["inline_keyboard"][0][0]["url"]
    found = re.search(r"(/edit/[^/?#]+)$", url)
    assert found, url
    return found.group(1)


@pytest.mark.subprocess
async def test_edit_sends_a_private_link_and_the_form_approves_with_the_change(tg: TG) -> None:
    approval_id, mid = await tg.posted(**EDITABLE)
    assert "✏️ Edit" in tg.buttons(mid)
    assert await tg.send(tg.press(MALLORY, tg.data(mid, "Edit"), mid)) == 200
    assert tg.answers()[-1] == "Not authorised"  # a stranger gets no link
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Edit"), mid, username="alice")) == 200
    assert tg.answers()[-1] == "I sent you a private link to the edit form"
    path = _link(tg)
    page = await tg.client.get(path)
    html = await page.text()
    assert page.status == 200 and 'name="arg.amount" value="4200"' in html and "@alice" in html
    csrf = csrf_of(html)
    resp = await tg.client.post(path, data={"csrf": csrf, "arg.amount": "9000"})
    html = await resp.text()
    assert resp.status == 400 and "args.amount: 9000 is greater than the maximum of 5000" in html
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING
    fresh = re.search(r'action="(/edit/[^"]+)"', html)
    assert fresh is not None and fresh.group(1) != path  # the refused submit used its link: a new one
    assert (await tg.client.post(path, data={"csrf": csrf, "arg.amount": "3900"})).status == 410
    resp = await tg.client.post(fresh.group(1), data={"csrf": csrf, "arg.amount": "3900"})
    assert resp.status == 200 and "Approved." in await resp.text()
    approval = await tg.rt.service.get(approval_id)
    assert approval.decision is not None and approval.decision.decided_by == f"telegram:{ALICE}"
    assert approval.decision.args is not None and approval.decision.args["amount"] == 3900
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)["text"]
    assert "approved with changes by @alice: amount 4200 → 3900" in card


async def test_extend_buttons_move_the_deadline_within_the_policy(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="stretch")
    assert {"⏳ +1h", "⏳ +1d"} <= set(tg.buttons(mid))
    extend = tg.data(mid, "+1h")
    assert await tg.send(tg.press(BOB, extend, mid)) == 200
    assert tg.answers()[-1].startswith("Extended: the new deadline is 2030-01-01 14:00")
    approval = await tg.rt.service.get(approval_id)
    assert approval.extensions == 1 and approval.wake_at == approval.deadline
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    assert "2030-01-01 14:00 UTC" in card["text"] and "(extended 1×)" in card["text"]
    assert not any("+1h" in b for b in tg.buttons(mid))  # max_extensions reached: no more buttons
    assert await tg.send(tg.press(BOB, extend, mid)) == 200  # an old button
    assert "policy 'stretch' allows at most 1 extension" in tg.answers()[-1]


async def test_a_reject_that_must_say_why_asks_first_and_the_reply_rejects(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="strict")
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Reject"), mid)) == 200
    assert tg.answers()[-1] == "Reply to my question with your reason to reject"
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING  # not before the reason
    prompt = tg.api.calls_to("sendMessage")[-1]
    prompt_id = max(m for (chat, m) in tg.api.messages if chat == CHAT)
    assert "why reject" in prompt.params["text"]
    assert await tg.send(tg.reply(ALICE, prompt_id, "wrong customer")) == 200
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.REJECTED and approval.decision is not None
    assert approval.decision.comment == "wrong customer"


@pytest.mark.subprocess
async def test_an_edit_after_a_vote_asks_the_approvers_again(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="pair", **EDITABLE)
    assert await tg.send(tg.press(BOB, tg.data(mid, "Approve"), mid, username="bob")) == 200
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Edit"), mid, username="alice")) == 200
    path = _link(tg)
    csrf = csrf_of(await (await tg.client.get(path)).text())
    resp = await tg.client.post(path, data={"csrf": csrf, "arg.amount": "3900"})
    assert resp.status == 200 and "the approvers vote again" in await resp.text()
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.WAITING and [v.approver for v in approval.votes] == [f"telegram:{ALICE}"]
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)["text"]
    assert "changes proposed by @alice: amount 4200 → 3900 (votes restart on the changed args)" in card
    assert "1 of 2 approvals" in card
    asked = [c.params["text"] for c in tg.api.calls_to("sendMessage") if int(c.params["chat_id"]) == CHAT]
    assert "please vote again" in asked[-1] and "amount 4200 → 3900" in asked[-1]
    assert await tg.send(tg.press(BOB, tg.data(mid, "Approve"), mid, username="bob")) == 200
    done = await tg.rt.service.get(approval_id)
    assert done.status is Status.APPROVED and done.decision is not None and done.decision.args is not None
    await tg.rt.outbox.drain()
    assert "approved by @bob with changes by @alice: amount 4200 → 3900" in tg.api.message(CHAT, mid)["text"]


@pytest.mark.subprocess
async def test_an_edit_link_decides_only_as_someone_who_may_decide(tg: TG) -> None:
    """Who may decide is checked again when a link is used: a (validly signed) link for someone
    off the allowlist is a 403, a tampered one a 401, and nothing changes."""
    approval_id, mid = await tg.posted(**EDITABLE)
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Edit"), mid, username="alice")) == 200
    path = _link(tg)
    csrf = csrf_of(await (await tg.client.get(path)).text())
    stranger = editlinks.token(tg.rt.signer, approval_id, f"telegram:{MALLORY}", "mallory", tg.clock.now())
    resp = await tg.client.post(f"/edit/{stranger}", data={"csrf": csrf, "arg.amount": "3900"})
    assert resp.status == 403 and "Not authorised" in await resp.text()
    forged = path[:-3] + ("aaa" if not path.endswith("aaa") else "bbb")
    assert (await tg.client.get(forged)).status == 401
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING
