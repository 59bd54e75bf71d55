"""At most one card per approval and chat: a post whose outcome is unknown is never sent again.

The Bot API has no idempotency key and no message lookup. A sendMessage that was cut short
(read timeout, the outbox's half-lease cut, kill -9) may or may not have posted the card; the
gateway records it as `uncertain` instead of posting again, and a press on the card adopts it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError, TimedOut

from adapters.telegram.errors import unsent as telegram_unsent
from adapters.telegram.request import AiohttpRequest
from gateway.config import Settings
from gateway.core.channels import Attempt
from gateway.core.events import EventKind
from gateway.core.models import DeliveryStatus, Event, Outcome, Status
from gateway.delivery.outbox import OutboxRunner, earlier_attempts
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.helpers import table_counts
from tests.procs import free_port
from tests.telegram.conftest import ALICE, CHAT, TG, TOKEN
from tests.web.conftest import WEB, csrf_of, sign_in

ADDRESS = f"telegram:{CHAT}"


def _event(event_kind: str, channel: str = ADDRESS, **data: object) -> Event:
    return Event(1, "a", event_kind, datetime(2030, 1, 1, tzinfo=UTC), None, channel, dict(data))


def test_an_attempt_is_resolved_only_by_a_known_outcome() -> None:
    """The outbox's reading of the attempt markers (it owns them since the channels became
    plugins): an attempt is `unsent` only once a later retry or failure of the post says so."""
    attempt = _event(EventKind.POST_ATTEMPT)
    at = attempt.at
    unknown, known = [Attempt(at)], [Attempt(at, unsent=True)]
    assert earlier_attempts([], ADDRESS) == []
    assert earlier_attempts([attempt], ADDRESS) == unknown
    assert earlier_attempts([attempt], "telegram:1") == []  # another chat
    assert earlier_attempts([attempt, _event("card_posted")], ADDRESS) == []
    unsent = _event("delivery_retry", kind="post", unsent=True)
    assert earlier_attempts([attempt, unsent], ADDRESS) == known
    maybe = _event("delivery_retry", kind="post", unsent=False, uncertain=True)
    assert earlier_attempts([attempt, maybe], ADDRESS) == unknown
    classified = _event("delivery_failed", kind="post", unsent=False)  # the channel answered: not sent
    assert earlier_attempts([attempt, classified], ADDRESS) == known
    cut = _event("delivery_retry", error="timed out")  # the outbox cut the call short
    assert earlier_attempts([attempt, cut], ADDRESS) == unknown
    sync = _event("delivery_retry", kind="sync", unsent=True)
    assert earlier_attempts([attempt, sync], ADDRESS) == unknown
    assert earlier_attempts([attempt, _event("post_resend")], ADDRESS) == []
    assert earlier_attempts([attempt, unsent, _event(EventKind.POST_ATTEMPT)], ADDRESS) == [*known, *unknown]


def _wrapped(exc: NetworkError, cause: Exception) -> NetworkError:
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("exc", "unsent"),
    [
        (RetryAfter(3), True),
        (BadRequest("chat not found"), True),
        (Forbidden("bot was kicked"), True),
        (NetworkError("Bad Gateway"), True),  # an HTTP 502 answer: Telegram says it failed
        (_wrapped(NetworkError("x"), httpx.ConnectError("refused")), True),
        (_wrapped(TimedOut(), httpx.ConnectTimeout("connect")), True),
        (_wrapped(TimedOut("Pool timeout"), httpx.PoolTimeout("pool")), True),
        (_wrapped(TimedOut(), httpx.ReadTimeout("read")), False),  # may have posted
        (_wrapped(TimedOut(), httpx.WriteTimeout("write")), False),
        (_wrapped(NetworkError("x"), httpx.RemoteProtocolError("dropped")), False),
        (_wrapped(NetworkError("x"), httpx.ReadError("reset")), False),
        (_wrapped(NetworkError("Unknown error"), RuntimeError("boom")), False),
        (TimedOut(), False),
    ],
)
def test_which_errors_prove_telegram_did_not_act(exc: NetworkError, unsent: bool) -> None:
    assert telegram_unsent(exc) is unsent


async def _cut_post(tg: TG) -> str:
    """Suspend and let the post hang until the outbox cuts it at half its lease; then let the
    fake answer, so the card exists in the chat but the gateway never heard about it."""
    release = tg.api.hold_answer("sendMessage")
    approval_id = await tg.suspend()
    cutter = OutboxRunner(tg.rt.deliveries, tg.rt.channels, tg.clock, "cutter", lease=timedelta(seconds=0.6))
    await cutter.run_once()  # cut after 0.3 s: recorded as a retry, outcome unknown
    release.set()
    del tg.api.answer_holds["sendMessage"]
    assert len(tg.api.messages) == 1  # Telegram did post it
    tg.clock.advance(60)
    await tg.rt.outbox.drain()
    return approval_id


async def test_a_post_cut_short_is_not_sent_again_and_is_visible_in_the_api(tg: TG) -> None:
    approval_id = await _cut_post(tg)
    tg.clock.advance(3600)
    await tg.rt.outbox.drain()
    assert len(tg.api.calls_to("sendMessage")) == 1 and len(tg.api.messages) == 1  # never twice
    view = await (await tg.client.get(f"/v1/approvals/{approval_id}", headers=AUTH)).json()
    assert view["cards"][0]["status"] == "uncertain" and view["cards"][0]["ref"] is None
    assert "may already be in the chat" in view["cards"][0]["error"]
    assert [d["status"] for d in view["deliveries"]] == ["uncertain"]
    kinds = [e.kind for e in await tg.rt.store.list_events(approval_id)]
    assert kinds.count("post_attempt") == 1 and kinds.count("delivery_uncertain") == 1


async def test_a_press_on_an_uncertain_card_adopts_it_and_decides(tg: TG) -> None:
    approval_id = await _cut_post(tg)
    ((_, mid),) = tg.api.messages
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid)) == 200
    assert tg.answers()[-1] == "Approved"
    card = await tg.rt.store.get_card(approval_id, ADDRESS)
    assert card is not None and card.status is DeliveryStatus.DONE and card.ref == f"{CHAT}:{mid}"
    await tg.rt.outbox.drain()
    assert tg.api.message(CHAT, mid).get("reply_markup") is None  # synced like any card
    assert "Approved" in tg.api.message(CHAT, mid)["text"]
    kinds = [e.kind for e in await tg.rt.store.list_events(approval_id)]
    assert kinds.count("card_adopted") == 1 and "card_synced" in kinds
    assert len(tg.api.calls_to("sendMessage")) == 1


async def test_an_uncertain_card_decided_elsewhere_is_synced_at_its_first_press(tg: TG) -> None:
    approval_id = await _cut_post(tg)
    ((_, mid),) = tg.api.messages
    await tg.rt.service.decide(approval_id, Outcome.REJECT, "operator:ops", authority=Authority.OPERATOR)
    await tg.rt.outbox.drain()
    assert tg.buttons(mid)  # unknown to the outbox: nothing to edit yet
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid)) == 200
    assert tg.answers()[-1].startswith("Already rejected")
    await tg.rt.outbox.drain()
    assert tg.api.message(CHAT, mid).get("reply_markup") is None
    assert (await tg.rt.service.get(approval_id)).status is Status.REJECTED


async def test_a_second_press_adopts_nothing_more(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid)) == 200
    assert "card_adopted" not in [e.kind for e in await tg.rt.store.list_events(approval_id)]


async def test_resend_uncertain_true_posts_again(tg: TG) -> None:
    object.__setattr__(tg.rt.settings.channel("telegram"), "resend_uncertain", True)
    approval_id = await _cut_post(tg)
    assert len(tg.api.calls_to("sendMessage")) == 2  # the documented duplicate
    card = await tg.rt.store.get_card(approval_id, ADDRESS)
    assert card is not None and card.status is DeliveryStatus.DONE


async def _error_of(request: AiohttpRequest, url: str) -> TelegramError:
    await request.initialize()
    try:
        with pytest.raises(TelegramError) as caught:
            await request.post(url)
    finally:
        await request.shutdown()
    return caught.value


async def test_the_aiohttp_transport_tells_unsent_from_unknown(tg_api: FakeTelegramAPI) -> None:
    """Real sockets: a refused connection is unsent (safe to retry); an answer that does not
    come in time is unknown (Telegram may have acted: for a post, retrying could post it twice)."""
    dead = f"http://127.0.0.1:{free_port()}/bot{TOKEN}/getMe"  # a port nobody listens on
    refused = await _error_of(AiohttpRequest(1, 5.0), dead)
    assert isinstance(refused, NetworkError) and telegram_unsent(refused)

    release = tg_api.hold_answer("getMe")
    try:
        slow = await _error_of(AiohttpRequest(1, 0.2), f"{tg_api.base_url}{TOKEN}/getMe")
    finally:
        release.set()
    assert isinstance(slow, TimedOut) and not telegram_unsent(slow)

    answered = await _error_of(AiohttpRequest(1, 5.0), f"{tg_api.base_url}{TOKEN}/noSuchMethod")
    assert telegram_unsent(answered)  # an HTTP answer (404): Telegram says it did nothing


async def test_an_operator_reposts_an_uncertain_card_through_the_api(tg: TG) -> None:
    approval_id = await _cut_post(tg)
    url = f"/v1/approvals/{approval_id}/cards/resend"
    before = await table_counts(tg.rt)
    for body, status, needle in (
        ({}, 400, "channel"),
        ({"channel": "telegram:1"}, 400, "not a channel of this approval"),
        ({"channel": ADDRESS, "extra": 1}, 400, "extra"),
    ):
        resp = await tg.client.post(url, json=body, headers=OPERATOR)
        assert resp.status == status and needle in (await resp.json())["error"]["message"], body
    missing = await tg.client.post("/v1/approvals/nope/cards/resend", json={"channel": ADDRESS}, headers=OPERATOR)
    assert missing.status == 404
    assert await table_counts(tg.rt) == before  # bad input changes nothing

    resp = await tg.client.post(url, json={"channel": ADDRESS, "by": "web:carol"}, headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["status"] == "pending"
    await tg.rt.outbox.drain()
    assert len(tg.api.calls_to("sendMessage")) == 2  # the operator's choice: a second card
    card = await tg.rt.store.get_card(approval_id, ADDRESS)
    assert card is not None and card.status is DeliveryStatus.DONE
    resend = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "post_resend"]
    assert [(e.actor, e.channel, e.data) for e in resend] == [("operator:test", ADDRESS, {"on_behalf_of": "web:carol"})]
    again = await tg.client.post(url, json={"channel": ADDRESS}, headers=OPERATOR)
    assert again.status == 409 and "nothing to resend" in (await again.json())["error"]["message"]


@pytest.fixture
async def tg_web(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    tg_settings: Settings,
    tg_api: FakeTelegramAPI,
    clock: FakeClock,
) -> TG:
    """The Telegram fixture with the web inbox signed in as alice (an approver)."""
    telegram = {
        k: getattr(tg_settings.channel("telegram"), k)
        for k in ("bot_token", "webhook_secret", "base_url", "approvers", "chats")
    }
    lists = {k: list(telegram[k]) for k in ("approvers", "chats")}
    settings = settings_factory(telegram=telegram | lists, web=WEB)
    rt = Runtime(settings, clock=clock, owner="test")
    tg = TG(rt, await aiohttp_client(create_app(settings, runtime=rt, background=False)), tg_api, clock)
    assert (await sign_in(tg.client)).status == 303
    return tg


async def test_an_operator_reposts_an_uncertain_card_from_the_web_page(tg_web: TG) -> None:
    tg = tg_web
    approval_id = await _cut_post(tg)
    board = " ".join((await (await tg.client.get("/dashboard")).text()).split())
    assert "Cards that need a look" in board and f"<code>{approval_id}</code></a></td><td>{ADDRESS}" in board
    assert f'action="/approvals/{approval_id}/cards/resend"' in board
    html = await (await tg.client.get(f"/approvals/{approval_id}")).text()
    assert "uncertain" in html and f'action="/approvals/{approval_id}/cards/resend"' in html
    form = {"csrf": csrf_of(html), "channel": ADDRESS}
    resp = await tg.client.post(f"/approvals/{approval_id}/cards/resend", data=form, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == f"/approvals/{approval_id}"
    await tg.rt.outbox.drain()
    assert len(tg.api.calls_to("sendMessage")) == 2
    html = await (await tg.client.get(f"/approvals/{approval_id}")).text()
    assert "cards/resend" not in html  # posted: nothing to re-post
    assert "Every card is delivered." in await (await tg.client.get("/dashboard")).text()
    again = await tg.client.post(f"/approvals/{approval_id}/cards/resend", data=form)
    assert again.status == 409
    forged = await tg.client.post(f"/approvals/{approval_id}/cards/resend", data={"channel": ADDRESS})
    assert forged.status == 403  # no CSRF token


def test_a_timeout_left_unset_by_ptb_takes_ours() -> None:
    """PTB marks an unset timeout with its public `BaseRequest.DEFAULT_NONE` (no private
    `telegram._utils` import needed to recognise it)."""
    from telegram.request import BaseRequest

    from adapters.telegram.request import _seconds

    assert _seconds(BaseRequest.DEFAULT_NONE, 5.0) == 5.0
    assert _seconds(None, 5.0) is None  # PTB's "no timeout"
    assert _seconds(2, 5.0) == 2.0
