"""A Telegram update read by `poll` with an unpaired UTF-16 surrogate, or a press with a field
the reader refuses, is skipped: it records nothing and does not stop the poller.

The webhook refuses such an update with a 400 before anything is recorded
(tests/security/test_lone_surrogates.py), but `poll` (getUpdates) handed it to the same handler
unchecked: it failed where its text was hashed or stored, the exception left the poll loop
(which only expects Telegram's errors) and the command died; started again, it asked for the
same unconfirmed update and died again, so one update stopped every press until Telegram
dropped it a day later.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.telegram.cli import poll_once
from gateway.core.models import Status
from tests.helpers import table_counts
from tests.telegram.conftest import ALICE, TG, tg, tg_api, tg_settings  # noqa: F401 (fixtures)

LONE = "\ud800"  # the fake Bot API writes it as the escape "\ud800", as Telegram's encoder would


@pytest.mark.parametrize("where", ["data", "from", "key"])
async def test_a_polled_update_with_a_lone_surrogate_is_skipped(tg: TG, where: str) -> None:  # noqa: F811
    approval_id, mid = await tg.posted()
    bad: dict[str, Any] = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    if where == "data":
        bad["callback_query"]["data"] += LONE
    elif where == "from":
        bad["callback_query"]["from"]["first_name"] += LONE
    else:
        bad["callback_query"][f"extra{LONE}"] = 1
    tg.api.updates.append(bad)
    channel: Any = tg.rt.channels["telegram"]
    before = await table_counts(tg.rt)

    offset = await poll_once(channel, None, 0)  # before: UnicodeEncodeError out of the loop
    assert offset == bad["update_id"] + 1  # confirmed at the next getUpdates: not asked for again
    assert await table_counts(tg.rt) == before
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING

    tg.api.updates.append(tg.press(ALICE, tg.data(mid, "Approve"), mid))  # the poller goes on
    await poll_once(channel, offset, 0)
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED


async def test_a_polled_update_with_a_malformed_field_is_skipped(tg: TG) -> None:  # noqa: F811
    """The same for an update whose press the reader refuses (`NotAnUpdate`: the webhook's 400)."""
    approval_id, mid = await tg.posted()
    bad: dict[str, Any] = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    bad["callback_query"]["data"] = 12345  # not a string: python-telegram-bot keeps it, our reader refuses it
    tg.api.updates.append(bad)
    channel: Any = tg.rt.channels["telegram"]
    before = await table_counts(tg.rt)

    offset = await poll_once(channel, None, 0)  # before: NotAnUpdate out of the loop
    assert offset == bad["update_id"] + 1
    assert await table_counts(tg.rt) == before

    tg.api.updates.append(tg.press(ALICE, tg.data(mid, "Approve"), mid))
    await poll_once(channel, offset, 0)
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED
