"""Decision comments pass redaction before they are stored or shown (issue 13's finding:
comments were stored and shown as typed, e-mail addresses and card numbers included)."""

from __future__ import annotations

from typing import Any

from gateway.core.models import Outcome
from gateway.http.keys import RUNTIME
from gateway.service.commands import Authority
from tests.conftest import AUTH, OPERATOR, suspend_body

PII = "call jane.doe@example.com, card 4111 1111 1111 1111"
SHOWN = "call [redacted:email], card [redacted:card]"


async def test_api_comments_and_cancel_reasons_are_redacted(client: Any) -> None:
    rt = client.server.app[RUNTIME]
    ids = []
    for run in ("r1", "r2"):
        resp = await client.post("/v1/suspend", json=suspend_body(run_id=run), headers=AUTH)
        ids.append((await resp.json())["id"])
    resp = await client.post(f"/v1/approvals/{ids[0]}/decision", json={"outcome": "reject", "comment": PII},
                             headers=OPERATOR)  # fmt: skip
    assert (await resp.json())["decision"]["comment"] == SHOWN
    resp = await client.post(f"/v1/approvals/{ids[1]}/cancel", json={"reason": PII}, headers=OPERATOR)
    assert (await resp.json())["decision"]["comment"] == SHOWN
    for approval_id in ids:
        stored = await rt.store.get_approval(approval_id)
        assert stored.decision.comment == SHOWN
        events = await rt.store.list_events(approval_id)
        assert PII not in str([e.data for e in events]) and "jane.doe" not in str([e.data for e in events])


async def test_votes_and_comments_added_afterwards_are_redacted(runtime: Any) -> None:
    from gateway.service import SuspendRequest

    svc = runtime.service
    approval, _ = await svc.suspend(SuspendRequest("r3", "s", "t"))
    await svc.decide(approval.id, Outcome.REJECT, "operator:test", comment=PII, authority=Authority.OPERATOR)
    after = await svc.attach_comment(approval.id, "operator:test", f"also {PII}")  # e.g. a Telegram reason
    assert after.decision.comment == f"also {SHOWN}"
    assert [v.comment for v in after.votes] == [SHOWN]
    events = await runtime.store.list_events(approval.id)
    assert "jane.doe" not in str([e.data for e in events])
