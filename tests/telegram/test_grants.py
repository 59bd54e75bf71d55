"""Standing grants on Telegram: the card offers "Approve · 1h" per grant the policy offers (a
signed callback_data within 64 bytes); a press makes the grant (granted_by the presser), and the
card of an approval a grant then decides says so. Real python-telegram-bot, fake Bot API."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adapters.telegram import callback
from adapters.telegram.render import render_card
from gateway.config import Settings
from gateway.core.models import Outcome
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.telegram.conftest import ALICE, CHAT, SECRET, TG, TOKEN


@pytest.fixture
def tg_settings(settings_factory: Callable[..., Settings], tg_api: FakeTelegramAPI) -> Settings:
    telegram = {
        "bot_token": TOKEN,
        "webhook_secret": SECRET,
        "base_url": tg_api.base_url,
        "approvers": [ALICE],
        "chats": [CHAT],
    }
    return settings_factory(telegram=telegram, policies={"trusted": {"timeout": "1h", "grants": ["1h", "run"]}})


async def test_approve_for_1h_makes_a_grant_and_the_next_card_says_so(tg: TG) -> None:
    approval_id, message_id = await tg.posted(policy="trusted")
    buttons = tg.buttons(message_id)
    assert {"✅ Approve · 1h", "✅ Approve · this run"} <= set(buttons)
    assert all(len(v.encode()) <= callback.MAX_BYTES for v in buttons.values())
    assert await tg.send(tg.press(ALICE, buttons["✅ Approve · 1h"], message_id)) == 200
    approval = await tg.rt.service.get(approval_id)
    assert approval.decision is not None and approval.decision.decided_by == f"telegram:{ALICE}"
    [grant] = await tg.rt.store.list_grants(tg.clock.now())
    assert (grant.granted_by, grant.duration, grant.approval_id) == (f"telegram:{ALICE}", "1h", approval_id)

    # the same step, args and agent in another run: approved by the grant; its card says so
    second = await tg.suspend(policy="trusted", run_id="run-2")
    decided = await tg.rt.service.get(second)
    assert decided.decision is not None and decided.decision.decided_by == f"grant:{grant.id}"
    text = render_card(decided, tg.clock.now())
    assert "standing grant" in text and f"grant:{grant.id}" in text


async def test_a_forged_grant_button_is_refused(tg: TG) -> None:
    approval_id, message_id = await tg.posted(policy="trusted")
    real = tg.buttons(message_id)["✅ Approve · 1h"]
    forged = real.replace("g1h|", "grun|", 1)
    assert await tg.send(tg.press(ALICE, forged, message_id)) == 200
    assert (await tg.rt.service.get(approval_id)).status.value == "waiting_approval"
    assert await tg.rt.store.list_grants(tg.clock.now()) == []


def test_grant_callback_data_round_trips_within_64_bytes() -> None:
    macs = TokenSigner([TEST_SECRET])
    data = callback.build_grant(macs, "a" * 16, "1d12h", "t" * 10)
    assert len(data.encode()) <= 64
    button = callback.parse(macs, data)
    assert button is not None and (button.outcome, button.grant, button.seen) == (Outcome.APPROVE, "1d12h", "t" * 10)
    assert callback.parse(macs, data.replace("1d12h", "1d13h")) is None
    with pytest.raises(ValueError, match="grant"):
        callback.build_grant(macs, "a" * 16, "123456789", "t" * 10)
