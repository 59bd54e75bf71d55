"""docs/events.md's verification snippet, run as written against events the gateway really sent."""

from __future__ import annotations

from typing import Any

from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from tests.docs.readme import DOCS, block
from tests.events.support import SECRET, Receiver

DOC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def snippet() -> dict[str, Any]:
    code = block("verify-event", DOCS / "events.md")
    assert len(code.splitlines()) <= 10, "the page promises ten lines"
    assert code.count(DOC_SECRET) == 1
    scope: dict[str, Any] = {}
    exec(compile(code.replace(DOC_SECRET, SECRET), "docs/events.md", "exec"), scope)
    return scope


async def test_the_documented_receiver_verifies_real_events(rt: Runtime, receiver: Receiver) -> None:
    approval, _ = await rt.service.suspend(SuspendRequest("run-1", "charge", "Charge"))
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:alice", channel="web")
    await rt.outbox.drain()
    receive = snippet()["receive"]
    assert len(receiver.received) == 2
    for got in receiver.received:
        event = receive(got.body, got.headers)
        assert event is not None and event["subject"] == approval.id and event["id"] == got.headers["webhook-id"]
        tampered = got.body.replace(b'"Charge"', b'"Chargf"')
        assert tampered != got.body and receive(tampered, got.headers) is None


def test_the_documented_secret_is_one_the_gateway_accepts() -> None:
    from gateway.settings.events import check_secret

    check_secret("events.webhooks[0].secret", DOC_SECRET)
