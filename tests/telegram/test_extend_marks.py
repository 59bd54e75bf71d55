"""A '+1h' press's de-duplication marks (update id, callback id) commit with the extension.

An update cut short before the extension's commit left nothing behind, so Telegram's redelivery
extends (marks recorded first would make it a duplicate, and the extension would be lost); once
committed, the same update again extends nothing, though the policy would allow another one.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.helpers import CommitDiesOnce, table_counts
from tests.telegram.conftest import BOB, TG


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the marks commit in the backend's own transaction


async def test_a_telegram_extend_cut_short_before_its_commit_extends_once_when_sent_again(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="roomy")
    before = await tg.rt.service.get(approval_id)
    assert before.deadline is not None
    update = tg.press(BOB, tg.data(mid, "+1h"), mid)
    dies = CommitDiesOnce(tg.rt)

    assert await tg.send(update) == 500  # no 2xx: Telegram delivers the update again
    assert dies.died and (await tg.rt.service.get(approval_id)).extensions == 0

    assert await tg.send(update) == 200  # the same update: a first delivery, since nothing was left behind
    assert tg.answers()[-1].startswith("Extended: the new deadline is")
    after = await tg.rt.service.get(approval_id)
    assert after.extensions == 1 and after.deadline == before.deadline + timedelta(hours=1)

    counts = await table_counts(tg.rt)
    for _ in range(2):  # committed now: the same update again extends nothing (the policy allows 3)
        assert await tg.send(update) == 200
    assert await table_counts(tg.rt) == counts
    assert (await tg.rt.service.get(approval_id)).extensions == 1
    assert [e.kind for e in await tg.rt.store.list_events(approval_id)].count("extended") == 1
    again = [c.params["text"] for c in tg.api.calls_to("answerCallbackQuery")][-2:]
    assert all(t.startswith("Waiting for a decision") for t in again)  # what is true now, no alert


async def test_a_telegram_extend_refused_by_the_policy_is_not_extended_by_its_replay(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="stretch")
    first = tg.press(BOB, tg.data(mid, "+1h"), mid)
    assert await tg.send(first) == 200
    replay = tg.press(BOB, tg.data(mid, "+1d"), mid)
    assert await tg.send(replay) == 200
    assert "policy 'stretch' allows at most 1 extension" in tg.answers()[-1]
    counts = await table_counts(tg.rt)
    assert await tg.send(replay) == 200  # its marks were recorded with the refusal: nothing changes
    assert await table_counts(tg.rt) == counts and (await tg.rt.service.get(approval_id)).extensions == 1
