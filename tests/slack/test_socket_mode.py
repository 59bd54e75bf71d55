"""Slack over Socket Mode: the real slack_sdk SocketModeClient against the fake's WebSocket server.

The fake answers `apps.connections.open` with a `ws://127.0.0.1` URL and sends real
`interactive` envelopes; every ack must arrive within Slack's 3 seconds, after the commit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from adapters.slack.spec import SPEC, SlackSettings
from gateway.config import Settings
from gateway.core.errors import ConfigError
from gateway.core.models import Status
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import presses
from gateway.telemetry.logs import SecretFilter
from gateway.testing import FakeClock
from tests.fakes.slack_api import FakeSlack, block_actions, edit_submission, view_submission
from tests.fakes.slack_socket import APP_TOKEN
from tests.slack.conftest import CARDS, PATH, SlackEnv, slack_section

SLACK = f"slack:{CARDS}"
_owners = itertools.count(1)


class Gateway(SlackEnv):
    """One gateway whose Slack interactions come over Socket Mode only (no signing secret)."""

    async def suspend(self, **over: Any) -> str:
        aid = await super().suspend(**over)
        await self.rt.outbox.drain()
        return aid

    def button(self, user: str, verb: str, approval_id: str) -> dict[str, Any]:
        """The `block_actions` payload of a press (an envelope's), not a webhook request."""
        ref = self.ref(approval_id)
        return block_actions(user, f"hitl:{verb}:{ref}", ref, response_url=self.fake.response_url(user))

    async def status(self, approval_id: str) -> Status:
        approval = await self.rt.store.get_approval(approval_id)
        assert approval is not None
        return approval.status

    async def kinds(self, approval_id: str) -> list[str]:
        return await self.event_kinds(approval_id)


def socket_settings(settings_factory: Callable[..., Settings], fake: FakeSlack, **sections: Any) -> Settings:
    return settings_factory(
        slack=slack_section(fake, app_token=APP_TOKEN, signing_secret=""),
        policies={"two": {"quorum": 2}, "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3}},
        **sections,
    )


async def start_gateway(
    aiohttp_client: Callable[..., Any], settings: Settings, clock: FakeClock, fake: FakeSlack
) -> Gateway:
    rt = Runtime(settings, clock=clock, owner=f"test-{next(_owners)}")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    return Gateway(client, rt, fake, clock)


@pytest.fixture
async def gw(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
    fake_slack: FakeSlack,
) -> AsyncIterator[Gateway]:
    gateway = await start_gateway(aiohttp_client, socket_settings(settings_factory, fake_slack), clock, fake_slack)
    await fake_slack.sockets.wait_connected()
    yield gateway


async def test_a_press_is_committed_then_acked(gw: Gateway) -> None:
    aid = await gw.suspend()
    envelope = await gw.fake.sockets.send(gw.button("UALICE", "approve", aid))
    ack = await gw.fake.sockets.ack(envelope)  # within 3 s
    assert ack == {"envelope_id": envelope}
    assert await gw.status(aid) is Status.APPROVED  # committed when the ack was sent
    approval = await gw.rt.store.get_approval(aid)
    assert approval is not None and approval.decision is not None
    assert (approval.decision.decided_by, approval.decision.channel) == ("slack:UALICE", SLACK)
    await gw.rt.outbox.drain()
    (update,) = gw.fake.calls_to("chat.update")
    assert "*Approved* by <@UALICE>" in json.dumps(update["blocks"])
    # the webhook is not served: no signing secret, nothing to check a request against
    assert (await gw.client.post(PATH, data=b"payload=%7B%7D")).status == 404


async def test_a_stranger_is_acked_and_told_privately(gw: Gateway) -> None:
    aid = await gw.suspend()
    await gw.fake.sockets.ack(await gw.fake.sockets.send(gw.button("UMALLORY", "approve", aid)))
    await gw.channel.settle()
    (reply,) = gw.fake.replies("UMALLORY")
    assert "not authorised" in reply["text"]
    assert await gw.status(aid) is Status.WAITING


async def test_a_press_from_another_workspace_is_denied(gw: Gateway) -> None:
    """The same workspace check as the webhook's: an approver's id from another team decides nothing."""
    aid = await gw.suspend()
    foreign = gw.button("UALICE", "approve", aid) | {"team": {"id": "T0OTHER", "domain": "other"}}
    await gw.fake.sockets.ack(await gw.fake.sockets.send(foreign))
    await gw.channel.settle()
    (reply,) = gw.fake.replies("UALICE")
    assert "not authorised" in reply["text"]
    assert await gw.status(aid) is Status.WAITING and "denied" in await gw.kinds(aid)
    meta = json.dumps({"ref": gw.ref(aid), "channel": CARDS})
    submitted = view_submission("UALICE", meta, "no") | {"user": {"id": "UALICE", "team_id": "T0OTHER"}}
    ack = await gw.fake.sockets.ack(await gw.fake.sockets.send(submitted))
    assert ack["payload"]["response_action"] == "errors"  # the modal says why, and nothing is decided
    assert await gw.status(aid) is Status.WAITING


async def test_a_modal_submission_rejects_with_the_reason(gw: Gateway) -> None:
    aid = await gw.suspend()
    await gw.fake.sockets.ack(await gw.fake.sockets.send(gw.button("UALICE", "reason", aid)))
    await gw.channel.settle()
    (opened,) = gw.fake.calls_to("views.open")
    metadata = opened["view"]["private_metadata"]
    empty = await gw.fake.sockets.send(view_submission("UALICE", metadata, "  "))
    ack = await gw.fake.sockets.ack(empty)
    assert ack["payload"]["response_action"] == "errors"  # the modal stays open, saying why
    assert await gw.status(aid) is Status.WAITING
    envelope = await gw.fake.sockets.send(view_submission("UALICE", metadata, "wrong account"))
    assert await gw.fake.sockets.ack(envelope) == {"envelope_id": envelope}  # an empty ack closes it
    approval = await gw.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.REJECTED
    assert approval.decision is not None and approval.decision.comment == "wrong account"


async def test_a_redelivered_envelope_records_nothing_twice(gw: Gateway) -> None:
    aid = await gw.suspend(policy="two")
    payload = gw.button("UALICE", "approve", aid)
    first = await gw.fake.sockets.send(payload)
    await gw.fake.sockets.ack(first)
    again = await gw.fake.sockets.send(payload, envelope_id=first)  # the ack was "lost": Slack sends it again
    assert await gw.fake.sockets.ack(again, nth=2) == {"envelope_id": first}
    kinds = await gw.kinds(aid)
    assert kinds.count("vote") == 1 and "duplicate_vote" not in kinds
    await gw.channel.settle()
    assert [r["text"] for r in gw.fake.replies("UALICE")] == ["Your approval is recorded: 1 of 2 approvals."] * 2
    # a real second press (a new envelope) is still a duplicate vote, on the record
    await gw.fake.sockets.ack(await gw.fake.sockets.send(payload))
    assert (await gw.kinds(aid)).count("duplicate_vote") == 1


async def test_a_dropped_socket_reconnects(gw: Gateway) -> None:
    aid = await gw.suspend()
    await gw.fake.sockets.drop()
    await gw.fake.sockets.wait_connected(opened=2)
    assert gw.fake.sockets.urls_issued == 2  # a fresh URL from apps.connections.open
    envelope = await gw.fake.sockets.send(gw.button("UALICE", "approve", aid))
    await gw.fake.sockets.ack(envelope)
    assert await gw.status(aid) is Status.APPROVED


@pytest.mark.parametrize("how", ["refresh", "cut"])
async def test_a_refreshed_or_cut_socket_reconnects(gw: Gateway, how: str) -> None:
    """Slack's `disconnect` message: a new connection at once. A TCP stream cut without a close
    frame: slack_sdk sees the closed session at its next check (every 5 s)."""
    aid = await gw.suspend()
    if how == "refresh":
        await gw.fake.sockets.refresh()
    else:
        gw.fake.sockets.cut()
    await gw.fake.sockets.wait_connected(opened=2, within=15)
    await gw.fake.sockets.wait_live(1)
    await gw.fake.sockets.ack(await gw.fake.sockets.send(gw.button("UALICE", "approve", aid)))
    assert await gw.status(aid) is Status.APPROVED


async def test_replicas_all_connect_and_one_live_connection_is_enough(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
    fake_slack: FakeSlack,
    pg_url: str,
) -> None:
    """Two replicas on PostgreSQL both hold a connection. An envelope redelivered to the other
    replica records nothing twice; with one replica gone, the other decides alone."""
    settings = socket_settings(settings_factory, fake_slack, store={"url": pg_url})
    a = await start_gateway(aiohttp_client, settings, clock, fake_slack)
    await fake_slack.sockets.wait_connected(opened=1)
    b = await start_gateway(aiohttp_client, settings, clock, fake_slack)
    await fake_slack.sockets.wait_connected(opened=2)
    assert len(fake_slack.sockets.live) == 2
    aid = await a.suspend(policy="two")
    payload = a.button("UALICE", "approve", aid)
    first = await fake_slack.sockets.send(payload, to=0)
    await fake_slack.sockets.ack(first)
    await fake_slack.sockets.ack(await fake_slack.sockets.send(payload, envelope_id=first, to=1), nth=2)
    kinds = await b.kinds(aid)
    assert kinds.count("vote") == 1 and "duplicate_vote" not in kinds
    await a.channel.close()  # replica a goes away: its connection with it
    await fake_slack.sockets.wait_live(1)
    await fake_slack.sockets.ack(await fake_slack.sockets.send(b.button("UBOB", "approve", aid)))
    assert await b.status(aid) is Status.APPROVED


async def test_50_envelopes_at_once_are_each_acked_within_3s(gw: Gateway) -> None:
    ids = [await gw.suspend(run_id=f"run-{i}") for i in range(50)]
    envelopes = [await gw.fake.sockets.send(gw.button("UALICE", "approve", aid)) for aid in ids]
    await asyncio.gather(*(gw.fake.sockets.ack(e) for e in envelopes))  # each within 3 s of its send
    for aid in ids:  # every acked press is committed
        assert await gw.status(aid) is Status.APPROVED
    times = sorted(gw.fake.sockets.latency[e] for e in envelopes)
    print(f"\nsocket mode, 50 cards: ack p50 {times[25] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms")


async def test_closing_lets_an_envelope_being_decided_commit_and_be_acked(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    aid = await gw.suspend()
    started, release = asyncio.Event(), asyncio.Event()
    press = gw.rt.inbound.press

    async def slow_press(p: presses.Press) -> presses.PressOutcome:  # a slow commit, at shutdown
        started.set()
        await release.wait()
        return await press(p)

    monkeypatch.setattr(gw.rt.inbound, "press", slow_press)
    envelope = await gw.fake.sockets.send(gw.button("UALICE", "approve", aid))
    await asyncio.wait_for(started.wait(), 3)
    closing = asyncio.create_task(gw.channel.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # waits for the envelope, the socket still open
    release.set()
    await gw.fake.sockets.ack(envelope)
    await closing
    assert await gw.status(aid) is Status.APPROVED


# ---------------------------------------------------------------- configuration


def test_an_app_token_makes_the_signing_secret_optional() -> None:
    SPEC.check(SlackSettings(bot_token="xoxb-1", app_token=APP_TOKEN))
    with pytest.raises(ConfigError) as err:
        SPEC.check(SlackSettings(bot_token="xoxb-1"))
    assert err.value.key == "slack.signing_secret"


def test_an_app_token_must_be_one() -> None:
    with pytest.raises(ConfigError) as err:
        SPEC.check(SlackSettings(bot_token="xoxb-1", app_token="xoxb-1"))
    assert err.value.key == "slack.app_token"


def test_app_tokens_are_masked_in_logs() -> None:
    line = SecretFilter(patterns=SPEC.secret_patterns).redact(f"connecting with {APP_TOKEN}")
    assert APP_TOKEN not in line and "xapp-[REDACTED]" in line
    assert "app_token" in SPEC.secrets


@pytest.mark.subprocess
async def test_the_edit_modal_over_socket_mode(gw: Gateway) -> None:
    """The Edit & approve modal goes through the same handler: errors in the ack, then approval."""
    schema = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 5000}}}
    aid = await gw.suspend(args_schema=schema, editable=["amount"])
    await gw.fake.sockets.ack(await gw.fake.sockets.send(gw.button("UALICE", "edit", aid)))
    await gw.channel.settle()
    (opened,) = gw.fake.calls_to("views.open", ok_only=True)
    metadata = opened["view"]["private_metadata"]
    bad = await gw.fake.sockets.send(edit_submission("UALICE", metadata, {"amount": "9000"}))
    ack = await gw.fake.sockets.ack(bad)
    assert "maximum of 5000" in ack["payload"]["errors"]["arg:amount"]
    assert await gw.status(aid) is Status.WAITING
    good = await gw.fake.sockets.send(edit_submission("UALICE", metadata, {"amount": "3900"}))
    assert await gw.fake.sockets.ack(good) == {"envelope_id": good}
    approval = await gw.rt.store.get_approval(aid)
    assert approval is not None and approval.decision is not None and approval.decision.args is not None
    assert approval.decision.args["amount"] == 3900
