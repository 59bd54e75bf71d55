"""The webhook: authentication, presses, de-duplication, races and reject reasons."""

from __future__ import annotations

import asyncio
import json

from gateway.core.channels import OutgoingCard
from gateway.core.models import Outcome, Status
from gateway.service.approvals import DENIED_KEPT
from gateway.service.commands import Authority
from tests.helpers import table_counts
from tests.telegram.conftest import ALICE, BOB, CHAT, MALLORY, SECRET, TG


async def test_missing_or_forged_secret_is_401_and_changes_nothing(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    before = await table_counts(tg.rt)
    update = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    for headers in ({"X-Telegram-Bot-Api-Secret-Token": SECRET + "x"}, {"X-Telegram-Bot-Api-Secret-Token": ""}):
        assert await tg.send(update, headers) == 401
    resp = await tg.client.post("/webhooks/telegram", data=json.dumps(update))  # no header at all
    assert resp.status == 401
    assert await table_counts(tg.rt) == before
    assert tg.api.calls_to("answerCallbackQuery") == []
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING


async def test_malformed_body_is_400(tg: TG) -> None:
    resp = await tg.client.post(
        "/webhooks/telegram", data=b"{not json", headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
    )
    assert resp.status == 400


async def test_a_press_with_a_malformed_field_is_400_by_name_and_changes_nothing(tg: TG) -> None:
    """Read from the JSON, not through python-telegram-bot's objects: a field of the wrong type
    is refused before the update id is remembered, so nothing is recorded or answered."""
    approval_id, mid = await tg.posted()
    before = await table_counts(tg.rt)
    update = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    bad = json.loads(json.dumps(update))
    bad["callback_query"]["from"]["id"] = str(ALICE)
    resp = await tg.client.post(
        "/webhooks/telegram", data=json.dumps(bad), headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["message"] == "not a Telegram update: id: expected an integer"
    assert await table_counts(tg.rt) == before
    assert tg.api.calls_to("answerCallbackQuery") == []
    assert await tg.send(update) == 200  # the same update id, well formed: still the first time
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED


async def test_approve_answers_decides_and_syncs_the_card(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid, username="alice")) == 200
    assert tg.answers() == ["Approved"]
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.APPROVED
    assert approval.decision is not None and approval.decision.decided_by == f"telegram:{ALICE}"
    assert approval.decision.channel == f"telegram:{CHAT}"
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    assert "Approved</b> by @alice" in card["text"]
    assert card.get("reply_markup") is None  # keyboard removed
    # the answer came before the edit
    methods = [c.method for c in tg.api.calls]
    assert methods.index("answerCallbackQuery") < methods.index("editMessageText")


async def test_stranger_press_changes_nothing_but_is_recorded(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    assert await tg.send(tg.press(MALLORY, tg.data(mid, "Approve"), mid)) == 200
    assert tg.answers() == ["Not authorised"]
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.WAITING and approval.votes == ()
    denied = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "denied"]
    assert [e.actor for e in denied] == [f"telegram:{MALLORY}"]
    assert await tg.rt.outbox.drain() == 0  # no card sync: nothing changed


async def test_a_stranger_pressing_in_a_loop_does_not_grow_the_record_without_bound(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    for _ in range(DENIED_KEPT + 4):
        assert await tg.send(tg.press(MALLORY, tg.data(mid, "Approve"), mid)) == 200
    assert tg.answers() == ["Not authorised"] * (DENIED_KEPT + 4)  # every press is still answered
    kinds = [e.kind for e in await tg.rt.store.list_events(approval_id)]
    assert kinds.count("denied") == DENIED_KEPT and "telegram_press" not in kinds
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING


async def test_forged_callback_data_is_refused(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    good = tg.data(mid, "Approve")
    verb, aid, seen, mac = good.split("|")
    forged = [
        f"r|{aid}|{mac}",
        f"r|{aid}|{seen}|{mac}",
        f"{verb}|{aid}|{seen}|{'0' * len(mac)}",
        f"a|zzzzzzzzzzzzzzzz|{seen}|{mac}",
        f"a|{aid}|{'0' * len(seen)}|{mac}",  # another round's tag: the MAC covers it
        f"a|{aid}|{mac}",  # the tag dropped (to pass for an older card)
        "approve",
        "a|b|c|d",
    ]
    for data in forged:
        assert await tg.send(tg.press(ALICE, data, mid)) == 200
    assert tg.answers() == ["This button is not valid"] * len(forged)
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING


async def test_redelivered_update_is_processed_once(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="pair")
    update = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    for _ in range(3):
        assert await tg.send(update) == 200
    # the same callback id under a new update id (Telegram can do that too)
    again = dict(update, update_id=update["update_id"] + 100)
    assert await tg.send(again) == 200
    assert len(tg.answers()) == 1
    approval = await tg.rt.service.get(approval_id)
    assert approval.approvals_count == 1 and approval.status is Status.WAITING


async def test_two_approvers_at_once_make_exactly_one_decision(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    approve, reject = tg.data(mid, "Approve"), tg.data(mid, "Reject")
    statuses = await asyncio.gather(tg.send(tg.press(ALICE, approve, mid)), tg.send(tg.press(BOB, reject, mid)))
    assert statuses == [200, 200]
    approval = await tg.rt.service.get(approval_id)
    assert approval.status in (Status.APPROVED, Status.REJECTED)
    decided = [e for e in await tg.rt.store.list_events(approval_id) if e.kind in ("approved", "rejected")]
    assert len(decided) == 1
    assert len(tg.answers()) == 2  # both presses answered
    job_or_sync = [o for o in await tg.rt.store.list_outbox(approval_id) if o.kind.value == "sync"]
    assert len(job_or_sync) == 1


async def test_quorum_progress_shows_on_the_card(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="pair")
    assert "1 of 2" not in tg.api.message(CHAT, mid)["text"]
    await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid))
    assert tg.answers() == ["Vote recorded: 1 of 2 approvals"]
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    assert "1 of 2 approvals" in card["text"] and card["reply_markup"] is not None
    await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid))
    assert tg.answers()[-1] == "You already approved; waiting for more approvals"
    await tg.send(tg.press(BOB, tg.data(mid, "Approve"), mid, username="bob"))
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED
    await tg.send(tg.press(ALICE, tg.data(mid, "Reject"), mid))
    assert tg.answers()[-1] == "Already approved by @bob"


async def test_reject_with_a_reason(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    await tg.send(tg.press(BOB, tg.data(mid, "Reject"), mid, username="bob"))
    approval = await tg.rt.service.get(approval_id)
    assert approval.status is Status.REJECTED  # recorded at once, the reason follows
    ask = tg.api.calls_to("sendMessage")[-1].params
    assert ask["reply_markup"]["force_reply"] is True
    assert f"tg://user?id={BOB}" in ask["text"] and "why reject" in ask["text"]
    prompt_id = max(m for (_, m) in tg.api.messages)
    # someone else's reply does not count
    await tg.send(tg.reply(ALICE, prompt_id, "not me"))
    tg.clock.advance(minutes=9)
    assert await tg.send(tg.reply(BOB, prompt_id, "Budget is <frozen> & over")) == 200
    decision = (await tg.rt.service.get(approval_id)).decision
    assert decision is not None and decision.outcome is Outcome.REJECT
    assert decision.comment == "Budget is <frozen> & over"
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    assert "Rejected</b> by @bob" in card["text"]
    assert "💬 Budget is &lt;frozen&gt; &amp; over" in card["text"]
    assert card.get("reply_markup") is None


async def test_a_late_reason_is_ignored(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    await tg.send(tg.press(BOB, tg.data(mid, "Reject"), mid))
    prompt_id = max(m for (_, m) in tg.api.messages)
    tg.clock.advance(minutes=10, seconds=1)
    await tg.send(tg.reply(BOB, prompt_id, "too late"))
    decision = (await tg.rt.service.get(approval_id)).decision
    assert decision is not None and decision.comment is None


async def test_a_non_utf8_secret_header_is_401_not_500(tg: TG) -> None:
    before = await table_counts(tg.rt)
    body = b"{}"
    request = (
        b"POST /webhooks/telegram HTTP/1.1\r\nHost: x\r\nX-Telegram-Bot-Api-Secret-Token: \xff\xfe\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n" + body
    )
    reader, writer = await asyncio.open_connection(tg.client.host, tg.client.port)
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    assert status == 401
    assert await table_counts(tg.rt) == before


async def test_a_press_on_a_duplicate_card_closes_it(tg: TG) -> None:
    """A second card (posted again on purpose: `telegram.resend_uncertain = true` or `cards resend`
    after an uncertain post) is unknown to the outbox. The first press on it, once the approval
    is decided, removes its buttons."""
    approval_id, mid = await tg.posted()
    approval = await tg.rt.service.get(approval_id)
    copy = OutgoingCard(f"telegram:{CHAT}", str(CHAT), approval, tg.clock.now())
    orphan_ref = await tg.rt.channels["telegram"].post_card(copy, [])
    orphan = int(orphan_ref.rsplit(":", 1)[1])
    assert orphan != mid and tg.buttons(orphan)
    data = tg.data(orphan, "Approve")
    await tg.rt.service.decide(approval_id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    await tg.rt.outbox.drain()
    assert tg.api.message(CHAT, mid).get("reply_markup") is None  # the recorded card is synced
    assert tg.buttons(orphan)  # the duplicate is not known to the outbox
    assert await tg.send(tg.press(BOB, data, orphan)) == 200
    assert tg.answers()[-1].startswith("Already approved")
    assert tg.api.message(CHAT, orphan).get("reply_markup") is None
    assert "Approved" in tg.api.message(CHAT, orphan)["text"]
    assert "orphan_card_synced" in [e.kind for e in await tg.rt.store.list_events(approval_id)]
    edits = len(tg.api.calls_to("editMessageText"))
    for user in (BOB, ALICE, MALLORY):  # later presses on the closed copy edit nothing
        assert await tg.send(tg.press(user, data, orphan)) == 200
    assert len(tg.api.calls_to("editMessageText")) == edits
    kinds = [e.kind for e in await tg.rt.store.list_events(approval_id)]
    assert kinds.count("orphan_card_synced") == 1


async def test_a_forged_callback_with_non_ascii_mac_is_refused_not_a_500(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    real = tg.data(mid, "Approve")
    forged = real[:-1] + "é"  # found by the property tests: str compare_digest raised TypeError
    assert await tg.send(tg.press(ALICE, forged, mid)) == 200
    assert tg.answers()[-1] == "This button is not valid"
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING
