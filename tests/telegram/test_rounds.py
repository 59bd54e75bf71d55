"""Telegram: an Approve is bound to the round its card was drawn for. After an approver changed
the args, a press on a card drawn before (or on a card posted before round tags existed) is
refused, records no vote, and the card is redrawn; its new Approve counts. A Reject is a veto on
any round."""

from __future__ import annotations

import json
import re

import pytest

from adapters.telegram import callback
from gateway.core.events import EventKind
from gateway.core.models import Outcome, Status
from tests.telegram.conftest import ALICE, BOB, CHAT, TG
from tests.telegram.test_edits import EDITABLE, _link
from tests.web.conftest import csrf_of

pytestmark = pytest.mark.subprocess  # every test here starts a process

STALE = "The arguments changed: look at the updated card"


async def _edit(tg: TG, mid: int, amount: str) -> None:
    """Alice edits through her private link (not delivered: the cards are not synced yet)."""
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Edit"), mid, username="alice")) == 200
    path = _link(tg)
    csrf = csrf_of(await (await tg.client.get(path)).text())
    resp = await tg.client.post(path, data={"csrf": csrf, "arg.amount": amount})
    assert resp.status == 200 and "the approvers vote again" in await resp.text()


async def test_an_approve_drawn_before_an_edit_is_refused_and_the_redrawn_card_approves(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="pair", **EDITABLE)
    before = tg.data(mid, "Approve")
    await _edit(tg, mid, "3900")
    assert await tg.send(tg.press(BOB, before, mid, username="bob")) == 200  # before the card is synced
    assert tg.answers()[-1] == STALE
    await tg.rt.outbox.drain()
    assert tg.data(mid, "Approve") != before and "amount 4200 → 3900" in tg.api.message(CHAT, mid)["text"]
    # a press still on the old card (a client that missed the edit): refused again, and redrawn
    assert await tg.send(tg.press(BOB, before, mid, username="bob")) == 200
    assert tg.api.calls_to("answerCallbackQuery")[-1].params.get("show_alert") in (True, "true", "True")
    assert tg.answers()[-1] == STALE
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.WAITING and [v.approver for v in approval.votes] == [f"telegram:{ALICE}"]
    events = await tg.rt.store.list_events(approval_id)
    assert not [e for e in events if e.actor == f"telegram:{BOB}" and e.kind in (EventKind.VOTE, EventKind.APPROVED)]
    resync = [d for d in await tg.rt.store.list_outbox(approval_id) if d.data.get("stale")]
    assert [(d.channel, d.kind.value) for d in resync] == [(f"telegram:{CHAT}", "sync")]
    await tg.rt.outbox.drain()
    after = tg.data(mid, "Approve")
    assert await tg.send(tg.press(BOB, after, mid, username="bob")) == 200
    done = await tg.rt.service.get(approval_id)
    assert done.status is Status.APPROVED and done.decision is not None
    assert done.decision.args is not None and done.decision.args["amount"] == 3900
    assert await tg.send(tg.press(BOB, before, mid, username="bob")) == 200
    assert tg.answers()[-1].startswith("Already approved")  # decided: no stale answer


async def test_a_reject_from_a_card_drawn_before_an_edit_still_rejects(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="pair", **EDITABLE)
    reject = tg.data(mid, "Reject")
    await _edit(tg, mid, "3900")
    assert await tg.send(tg.press(BOB, reject, mid, username="bob")) == 200
    assert (await tg.rt.service.get(approval_id)).status is Status.REJECTED  # a veto on any round


async def test_a_card_posted_before_round_tags_counts_for_the_original_args_only(tg: TG) -> None:
    """An Approve without a tag (`a|<id>|<mac>`, as cards were drawn before) stands for the
    original args: it approves while nobody changed them, and is refused after an edit."""
    first, mid = await tg.posted(policy="pair", **EDITABLE)
    old = callback.build(tg.rt.signer, first, Outcome.APPROVE)
    assert re.fullmatch(r"a\|[^|]+\|[0-9a-f]{16}", old)
    assert await tg.send(tg.press(BOB, old, mid, username="bob")) == 200
    assert (await tg.rt.service.get(first)).approvals_count == 1
    second, mid2 = await tg.posted(policy="pair", step="pay-2", **EDITABLE)
    await _edit(tg, mid2, "3900")
    old = callback.build(tg.rt.signer, second, Outcome.APPROVE)
    assert await tg.send(tg.press(BOB, old, mid2, username="bob")) == 200
    assert tg.answers()[-1] == STALE
    assert (await tg.rt.service.get(second)).approvals_count == 1  # Alice's vote on her change only


async def test_an_edit_form_opened_before_another_edit_is_refused_and_drawn_anew(tg: TG) -> None:
    """Not taken as a new proposal: its untouched fields are the old values, and sending them
    would silently undo the other approver's change."""
    approval_id, mid = await tg.posted(policy="pair", **EDITABLE)
    assert await tg.send(tg.press(BOB, tg.data(mid, "Edit"), mid, username="bob")) == 200
    sent = [c.params for c in tg.api.calls_to("sendMessage") if int(c.params["chat_id"]) == BOB]
    markup = sent[-1]["reply_markup"]
    url = (markup if isinstance(markup, dict) else json.loads(markup))["inline_keyboard"][0][0]["url"]
    bob_path = url[url.index("/edit/") :]
    bob_page = await (await tg.client.get(bob_path)).text()
    await _edit(tg, mid, "3900")  # Alice, meanwhile
    seen = re.search(r'name="round" value="([0-9a-f]+)"', bob_page)
    assert seen is not None
    form = {"csrf": csrf_of(bob_page), "round": seen.group(1), "arg.amount": "4100"}
    resp = await tg.client.post(bob_path, data=form)
    html = await resp.text()
    assert resp.status == 409 and STALE in html and 'name="arg.amount" value="3900"' in html
    approval = await tg.rt.service.get(approval_id)
    assert approval.proposal is not None and approval.proposal.args["amount"] == 3900
    assert [v.approver for v in approval.votes] == [f"telegram:{ALICE}"]
    fresh = re.search(r'action="(/edit/[^"]+)"', html)
    again = re.search(r'name="round" value="([0-9a-f]+)"', html)
    assert fresh is not None and again is not None and fresh.group(1) != bob_path
    form = {"csrf": csrf_of(html), "round": again.group(1), "arg.amount": "3900"}
    resp = await tg.client.post(fresh.group(1), data=form)
    assert resp.status == 200 and "Approved." in await resp.text()
