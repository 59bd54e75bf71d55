"""Web Push end to end, against a local push service that checks the VAPID JWT and decrypts
each payload with the subscribing browser's keys (tests/fakes/push_service.py): subscribing from
the inbox, a card pushed to the approvers who may decide it, its links deciding once as the
person it was pushed to, and a subscription the push service says is gone deleted."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import DeliveryStatus, Outcome, Status
from gateway.service.delegations import Delegate
from gateway.settings.webpush import generate_keys
from gateway.telemetry.logs import SecretFilter
from gateway.testing import FakeClock
from tests.web.conftest import csrf_of
from tests.webpush.support import PRIVATE, PUBLIC, Rig, action, build, follow, push_settings

SW = Path(__file__).parents[2] / "gateway" / "http" / "web" / "static" / "sw.js"


async def test_an_approver_subscribes_from_the_inbox_and_unsubscribes(rig: Rig) -> None:
    alice = await rig.client("alice")
    page = await (await alice.get("/")).text()
    assert f'data-key="{PUBLIC}"' in page and '<script src="/static/push.js" defer>' in page
    browser, resp = await rig.subscribe(alice)
    assert resp.status == 201
    (sub,) = await rig.rt.push.of("alice")
    assert (sub.endpoint, sub.p256dh, sub.auth) == (browser.endpoint, browser.p256dh, browser.auth)
    no_csrf = await alice.post("/push/subscribe", data=browser.form())
    assert no_csrf.status == 403
    bad = browser.form() | {"endpoint": "http://10.0.0.7/push/x"}  # plain http, off this machine
    csrf = csrf_of(await (await alice.get("/")).text())
    refused = await alice.post("/push/subscribe", data={"csrf": csrf, **bad})
    assert refused.status == 400 and "endpoint" in await refused.text()
    gone = await alice.post("/push/unsubscribe", data={"csrf": csrf, "endpoint": browser.endpoint})
    assert gone.status == 200 and (await gone.json()) == {"unsubscribed": True}
    assert await rig.rt.push.of("alice") == []


async def test_a_viewer_cannot_subscribe_and_sees_no_button(rig: Rig) -> None:
    victor = await rig.client("victor")
    assert "push-toggle" not in await (await victor.get("/")).text()
    _, resp = await rig.subscribe(victor)
    assert resp.status == 403
    assert await rig.rt.push.of("victor") == []


async def test_a_card_is_pushed_encrypted_and_its_approve_link_decides_once_as_that_person(rig: Rig) -> None:
    alice_phone, resp = await rig.subscribe(await rig.client("alice"))
    assert resp.status == 201
    bob_phone, _ = await rig.subscribe(await rig.client("bob"))
    approval = await rig.suspend(summary="Invoice 7", approvers=("web:alice",))
    await rig.rt.outbox.drain()
    assert rig.service.refused == []
    (push,) = alice_phone.received  # decrypted with the browser's private key and auth secret
    assert push["title"] == "Pay ACME 4200 EUR" and push["body"] == "Invoice 7"
    assert push["tag"] == f"hitl-{approval.id}" and push["url"].endswith(f"/approvals/{approval.id}")
    assert [a["action"] for a in push["actions"]] == ["approve", "reject"]
    assert bob_phone.received == []  # the approval names alice only: bob may not decide it
    headers = alice_phone.headers[0]
    assert headers["Content-Encoding"] == "aes128gcm" and headers["TTL"] == "3600" and "Topic" in headers
    assert headers["Authorization"].startswith("vapid t=") and f"k={PUBLIC}" in headers["Authorization"]

    phone = await rig.client()  # the notification opens a browser that is not signed in
    link = action(alice_phone, "approve")
    page = await phone.get(link)  # a GET (a prefetch, a preview) decides nothing
    assert page.status == 200 and "Approve this step?" in await page.text() and "alice" in await page.text()
    assert (await rig.rt.service.get(approval.id)).status is Status.WAITING
    status, _ = await follow(phone, link)
    assert status == 200
    decided = await rig.rt.service.get(approval.id)
    assert decided.status is Status.APPROVED and decided.decision and decided.decision.decided_by == "web:alice"


async def test_a_reject_link_asks_for_the_reason_the_policy_requires(rig: Rig) -> None:
    phone, _ = await rig.subscribe(await rig.client("alice"))
    approval = await rig.suspend(policy="strict")
    await rig.rt.outbox.drain()
    client = await rig.client()
    status, page = await follow(client, action(phone, "reject"))
    assert status == 400 and "reason" in page  # the link is not used up by the missing reason
    status, _ = await follow(client, action(phone, "reject"), reason="wrong supplier")
    assert status == 200
    decided = await rig.rt.service.get(approval.id)
    assert decided.decision and decided.decision.outcome is Outcome.REJECT
    assert decided.decision.comment == "wrong supplier"


async def test_a_subscription_the_push_service_says_is_gone_is_deleted(rig: Rig) -> None:
    phone, _ = await rig.subscribe(await rig.client("alice"))
    rig.service.gone.add(phone.endpoint.rsplit("/", 1)[1])
    approval = await rig.suspend()
    await rig.rt.outbox.drain()
    assert rig.service.refused == [(410, "unsubscribed")]
    assert await rig.rt.push.of("alice") == []
    (card,) = [d for d in await rig.rt.store.list_outbox(approval.id) if d.channel == "web"]
    assert card.status is DeliveryStatus.DONE


async def test_a_push_service_error_retries_the_card_through_the_outbox(rig: Rig) -> None:
    phone, _ = await rig.subscribe(await rig.client("alice"))
    rig.service.faults[phone.endpoint.rsplit("/", 1)[1]].append(503)
    approval = await rig.suspend()
    await rig.rt.outbox.run_once()
    (card,) = [d for d in await rig.rt.store.list_outbox(approval.id) if d.channel == "web"]
    assert card.status is DeliveryStatus.PENDING and card.attempts == 1 and phone.received == []
    rig.clock.advance(minutes=5)
    await rig.rt.outbox.drain()
    assert len(phone.received) == 1


async def test_the_vapid_jwt_is_what_the_push_service_accepts(
    aiohttp_client: Callable[..., Any],
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
) -> None:
    """A browser subscribed with another application server key refuses the gateway's pushes
    (403, as real push services do): the check that makes the fake's acceptance mean something."""
    rig = await build(aiohttp_client, aiohttp_server, push_settings(settings_factory), clock)
    other = rig.service.browser(generate_keys()[0])  # another application server key
    _, resp = await rig.subscribe(await rig.client("alice"), other)
    assert resp.status == 201, await resp.text()
    await rig.suspend()
    await rig.rt.outbox.drain()
    assert rig.service.refused == [(403, "k: not the key this subscription was made with")]


async def test_the_service_worker_is_served_from_the_root_scope(rig: Rig) -> None:
    resp = await (await rig.client()).get("/sw.js")
    assert resp.status == 200 and resp.content_type == "text/javascript"
    assert resp.headers["Service-Worker-Allowed"] == "/" and resp.headers["Cache-Control"] == "no-cache"
    assert "showNotification" in await resp.text()


_SW_HARNESS = """
const fs = require("fs"), vm = require("vm");
const listeners = {}, shown = [], opened = [];
const self = {
  location: { origin: "https://gw.example" },
  addEventListener: (name, fn) => { listeners[name] = fn; },
  registration: { showNotification: (title, options) => { shown.push({ title, options }); return Promise.resolve(); } },
  clients: { openWindow: (url) => { opened.push(url); return Promise.resolve(); } },
};
vm.runInNewContext(fs.readFileSync(process.argv[2], "utf8"), { self });
const waits = [];
const payload = JSON.parse(process.argv[3]);
listeners.push({ data: { json: () => payload }, waitUntil: (p) => waits.push(p) });
const note = shown[0];
for (const act of ["approve", "reject", "", "evil"]) {
  const notification = { data: note.options.data, close() {} };
  listeners.notificationclick({ action: act, notification, waitUntil: (p) => waits.push(p) });
}
Promise.all(waits).then(() => console.log(JSON.stringify({ shown, opened })));
"""


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_service_worker_shows_actions_and_opens_only_this_gateways_links(tmp_path: Path) -> None:
    harness = tmp_path / "harness.js"
    harness.write_text(_SW_HARNESS)
    payload = {
        "title": "Pay ACME",
        "body": "Invoice 7",
        "tag": "hitl-a1",
        "url": "https://gw.example/approvals/a1",
        "actions": [
            {"action": "approve", "title": "Approve", "url": "https://gw.example/push/links/A"},
            {"action": "reject", "title": "Reject", "url": "https://gw.example/push/links/R"},
            {"action": "evil", "title": "Evil", "url": "https://evil.example/x"},
        ],
    }
    out = subprocess.run(
        ["node", str(harness), str(SW), json.dumps(payload)], capture_output=True, text=True, timeout=30, check=True
    )
    result = json.loads(out.stdout)
    (note,) = result["shown"]
    assert note["title"] == "Pay ACME" and note["options"]["tag"] == "hitl-a1"
    assert [a["action"] for a in note["options"]["actions"]][:2] == ["approve", "reject"]
    # approve and reject open their links, a tap the approval; a link elsewhere is never opened
    assert result["opened"] == [
        "https://gw.example/push/links/A",
        "https://gw.example/push/links/R",
        "https://gw.example/approvals/a1",
    ]


async def test_a_long_summary_is_cut_to_fit_a_push(rig: Rig) -> None:
    """A push is at most 4096 bytes encrypted: the push service refuses more (413)."""
    phone, _ = await rig.subscribe(await rig.client("alice"))
    await rig.suspend("Ship 📦" * 40, summary="🚚 " * 2000)
    await rig.rt.outbox.drain()
    assert rig.service.refused == []
    (push,) = phone.received
    assert push["body"].startswith("🚚") and push["title"].startswith("Ship 📦")
    assert [a["action"] for a in push["actions"]] == ["approve", "reject"]


async def test_nothing_secret_is_logged(
    rig: Rig, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pushes that fail, retry and find their subscription gone log the push service's origin,
    never the private key, an endpoint's path (the subscription's secret) or a link."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="gateway.webpush")
    # an earlier test in this worker may have left the logger disabled or raised (a library's
    # logging config); what this test reads must not depend on the order the suite ran in
    monkeypatch.setattr(logging.getLogger("gateway.webpush"), "disabled", False)
    gone, _ = await rig.subscribe(await rig.client("alice"))
    flaky, _ = await rig.subscribe(await rig.client("alice"))
    rig.service.gone.add(gone.endpoint.rsplit("/", 1)[1])
    rig.service.faults[flaky.endpoint.rsplit("/", 1)[1]].append(503)
    await rig.suspend()
    await rig.rt.outbox.run_once()
    rig.clock.advance(minutes=5)
    await rig.rt.outbox.drain()
    assert len(flaky.received) == 1
    # the access log lines are the test servers' (the gateway's own go through SecretFilter, below)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name != "aiohttp.access")
    assert "gone (410)" in text and rig.service.origin in text
    secrets = [PRIVATE, gone.endpoint.rsplit("/", 1)[1], flaky.endpoint.rsplit("/", 1)[1], "/push/links/"]
    assert [s for s in secrets if s in text] == []
    link = action(flaky, "approve")  # as the gateway's access log would show a GET of it
    shown = SecretFilter([PRIVATE]).redact(f'"GET {link} HTTP/1.1" 200 private={PRIVATE}')
    assert link.rsplit("/", 1)[1] not in shown and PRIVATE not in shown


async def test_a_reminder_is_pushed_again_and_either_push_decides_once(rig: Rig) -> None:
    phone, _ = await rig.subscribe(await rig.client("alice"))
    approval = await rig.suspend(policy="nudge")
    await rig.rt.outbox.drain()
    rig.clock.advance(minutes=51)  # `remind = ["10m"]`: 10 minutes before the 1h deadline
    await rig.rt.scheduler.tick()
    await rig.rt.outbox.drain()
    assert len(phone.received) == 2 and phone.received[1]["tag"] == phone.received[0]["tag"]
    first = await rig.client()  # the first push's Reject, opened before the reminder's Approve is used
    csrf = csrf_of(await (await first.get(action(phone, "reject", 0))).text())
    assert (await follow(await rig.client(), action(phone, "approve", 1)))[0] == 200
    late = await first.post(action(phone, "reject", 0), data={"csrf": csrf})
    assert late.status == 409  # the same choice, already made
    assert (await rig.rt.service.get(approval.id)).status is Status.APPROVED


async def test_a_delegate_is_pushed_the_delegators_cards_and_decides_for_them(rig: Rig) -> None:
    bob_phone, _ = await rig.subscribe(await rig.client("bob"))
    until = rig.rt.clock.now() + timedelta(hours=8)
    await rig.rt.service.delegations.create(Delegate("web:alice", "web:bob", until, "operator:test", True))
    approval = await rig.suspend(summary="Invoice 8", approvers=("web:alice",))
    await rig.rt.outbox.drain()
    (push,) = bob_phone.received  # alice's card, for bob while he decides for her
    assert push["url"].endswith(f"/approvals/{approval.id}")
    status, _ = await follow(await rig.client(), action(bob_phone, "approve"))
    assert status == 200
    decided = await rig.rt.service.get(approval.id)
    assert decided.status is Status.APPROVED and decided.decision is not None
    assert (decided.decision.decided_by, decided.decision.on_behalf_of) == ("web:bob", "web:alice")
