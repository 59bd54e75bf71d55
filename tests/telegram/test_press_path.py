"""The path of a Telegram Approve through the application layer, counted at the store: the
approval is read once per attempt, and who may decide is checked once per attempt.

The store is the real one; `Counted` only counts the calls that reach it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import Approval, Outcome
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service.commands import Authority
from gateway.store import Store, open_store
from gateway.testing import FakeClock
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.telegram.conftest import ALICE, BOB, TG


class Counted:
    """The store, with a count of each method called on it."""

    def __init__(self, store: Store) -> None:
        self.inner, self.calls = store, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
async def counted_tg(
    aiohttp_client: Callable[..., Any], tg_settings: Settings, tg_api: FakeTelegramAPI, clock: FakeClock
) -> tuple[TG, Counted, Counter[str]]:
    store = Counted(open_store(tg_settings.store.url))
    rt = Runtime(tg_settings, clock=clock, owner="test", store=store)  # type: ignore[arg-type]
    checks = Counter[str]()
    authorize = rt.service.authorizer.authorize

    def counted_authorize(authority: Authority, actor: str, approval: Approval, **kw: Any) -> None:
        checks[authority.value] += 1
        authorize(authority, actor, approval, **kw)

    rt.service.authorizer.authorize = counted_authorize  # type: ignore[method-assign]
    client = await aiohttp_client(create_app(tg_settings, runtime=rt, background=False))
    return TG(rt, client, tg_api, clock), store, checks


async def test_an_approve_reads_once_and_authorizes_once(counted_tg: tuple[TG, Counted, Counter[str]]) -> None:
    tg, store, checks = counted_tg
    approval_id, message_id = await tg.posted()
    store.calls.clear()

    assert await tg.send(tg.press(ALICE, tg.data(message_id, "Approve"), message_id)) == 200

    assert (await tg.rt.service.get(approval_id)).status.value == "approved"
    store.calls["get_approval"] -= 1  # the line above
    # one read (the approval and the card's ref, one snapshot), one commit (with both
    # de-duplication marks, the update's and the callback's): two transactions
    assert +store.calls == {"approval_views": 1, "save_transition": 1}
    assert checks == {"approver": 1}


async def test_a_lost_compare_and_set_reads_and_authorizes_once_more(
    counted_tg: tuple[TG, Counted, Counter[str]],
) -> None:
    """Bob's vote commits between Alice's read and her write: her attempt loses the CAS, and the
    second attempt reads the approval again and checks her again, once each."""
    tg, store, checks = counted_tg
    approval_id, message_id = await tg.posted(policy="pair")
    save = store.inner.save_transition
    raced = False

    async def bob_first(*args: Any, **kwargs: Any) -> bool:
        nonlocal raced
        if not raced:
            raced = True
            await tg.rt.service.decide(approval_id, Outcome.APPROVE, f"telegram:{BOB}", channel="telegram")
        return await save(*args, **kwargs)

    store.inner.save_transition = bob_first  # type: ignore[method-assign]
    store.calls.clear()
    checks.clear()

    assert await tg.send(tg.press(ALICE, tg.data(message_id, "Approve"), message_id)) == 200

    approval = await tg.rt.store.get_approval(approval_id)
    assert approval is not None and approval.status.value == "approved"
    store.calls["get_approval"] -= 1  # the line above
    # Alice: read, lose, read again, win (Bob's own vote reads and writes once, inside her first write)
    assert store.calls["save_transition"] == 2 + 1
    assert store.calls["approval_views"] + store.calls["get_approval"] == 2 + 1
    assert checks == {"approver": 2 + 1}


async def test_a_press_that_died_before_its_commit_is_decided_and_answered_on_redelivery(
    counted_tg: tuple[TG, Counted, Counter[str]],
) -> None:
    """The de-duplication marks commit with the decision: a delivery cut short before that commit
    left nothing behind, so Telegram's redelivery of the update is a first delivery: it decides,
    and the presser gets their answer (marks recorded first would make it a silent duplicate)."""
    tg, store, _ = counted_tg
    approval_id, message_id = await tg.posted()
    save = store.inner.save_transition
    died = False

    async def crash_once(*args: Any, **kwargs: Any) -> bool:
        nonlocal died
        if not died:
            died = True
            raise ConnectionError("the process died here")  # nothing of this transaction committed
        return await save(*args, **kwargs)

    store.inner.save_transition = crash_once  # type: ignore[method-assign]
    update = tg.press(ALICE, tg.data(message_id, "Approve"), message_id)
    assert await tg.send(update) == 500  # no 2xx: Telegram delivers the update again
    assert (await tg.rt.service.get(approval_id)).status.value == "waiting_approval"
    answered = len(tg.answers())

    assert await tg.send(update) == 200  # the redelivery

    assert (await tg.rt.service.get(approval_id)).status.value == "approved"
    assert len(tg.answers()) == answered + 1
    assert await tg.send(update) == 200  # once committed, a redelivery is a duplicate: answered once
    assert len(tg.answers()) == answered + 1
