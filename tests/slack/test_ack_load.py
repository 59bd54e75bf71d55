"""The 3-second ack under load: 50 presses at once over real HTTP on loopback, real time."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

import pytest
from aiohttp import ClientResponse

from gateway.config import Settings
from gateway.core.models import Status
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import APPROVERS, SlackEnv, slack_section

ACK_BUDGET = 3.0
USERS = [f"U{i:03d}" for i in range(50)]


@pytest.fixture
def slack_settings(settings_factory: Callable[..., Settings], fake_slack: FakeSlack) -> Settings:
    """The operator's allowlist holds the 50 people (an approval's own list can only narrow it)."""
    return settings_factory(slack=slack_section(fake_slack, approvers=[*APPROVERS, *USERS]))


async def _timed(press: asyncio.Future[ClientResponse] | asyncio.Task[ClientResponse]) -> tuple[float, int]:
    start = time.perf_counter()
    resp = await press
    return time.perf_counter() - start, resp.status


async def _report(name: str, times: list[float]) -> None:
    p50, worst = statistics.median(times), max(times)
    print(f"\n{name}: {len(times)} presses, ack p50 {p50 * 1000:.1f} ms, max {worst * 1000:.1f} ms")


async def test_50_presses_on_50_cards_are_each_acked_within_3s(slack: SlackEnv) -> None:
    ids = [await slack.suspend(run_id=f"run-{i}") for i in range(50)]
    await slack.rt.outbox.drain()
    results = await asyncio.wait_for(
        asyncio.gather(*(_timed(asyncio.ensure_future(slack.press("UALICE", "approve", aid))) for aid in ids)),
        timeout=30,
    )
    times = [t for t, _ in results]
    assert all(status == 200 for _, status in results)
    assert max(times) < ACK_BUDGET, times
    for aid in ids:  # every acked press is committed
        assert (await slack.rt.service.get(aid)).status is Status.APPROVED
    await _report("50 cards", times)


async def test_50_approvers_pressing_one_card_at_once(slack: SlackEnv) -> None:
    users = USERS
    aid = await slack.suspend(approvers=[f"slack:{u}" for u in users])
    await slack.rt.outbox.drain()
    results = await asyncio.wait_for(
        asyncio.gather(*(_timed(asyncio.ensure_future(slack.press(u, "approve", aid))) for u in users)),
        timeout=30,
    )
    times = [t for t, _ in results]
    assert all(status == 200 for _, status in results) and max(times) < ACK_BUDGET, times
    kinds = await slack.event_kinds(aid)
    assert kinds.count("approved") == 1
    await slack.channel.settle()
    replies = [r for _, r in slack.fake.responses]
    assert len(replies) == 49 and all(r["text"].startswith("Already approved by <@U") for r in replies)
    await _report("1 card, 50 approvers", times)
