from __future__ import annotations

import asyncio
from typing import Any

from gateway.http.keys import RUNTIME
from tests.conftest import AUTH, OPERATOR, suspend_body


async def test_fifty_concurrent_decisions_have_one_winner(client: Any) -> None:
    resp = await client.post("/v1/suspend", json=suspend_body(worker="agent"), headers=AUTH)
    approval_id = (await resp.json())["id"]

    async def press(i: int) -> tuple[int, dict[str, Any]]:
        outcome = "approve" if i % 2 else "reject"
        r = await client.post(
            f"/v1/approvals/{approval_id}/decision", json={"outcome": outcome, "by": f"web:u{i}"}, headers=OPERATOR
        )
        return r.status, await r.json()

    results = await asyncio.gather(*(press(i) for i in range(50)))
    statuses = sorted(s for s, _ in results)
    assert statuses == [200] + [409] * 49
    winner = next(body for s, body in results if s == 200)
    losers = [body for s, body in results if s == 409]
    assert all(b["error"]["code"] == "already_decided" for b in losers)
    assert all(winner["decision"]["decided_by"] in b["error"]["message"] for b in losers)

    rt = client.server.app[RUNTIME]
    events = await rt.store.list_events(approval_id)
    decisions = [e for e in events if e.kind in ("approved", "rejected")]
    assert len(decisions) == 1
    assert len([e for e in events if e.kind == "job_queued"]) == 1
    assert len(await rt.store.list_jobs()) == 1
    approval = await rt.store.get_approval(approval_id)
    assert approval.version == 2 and len(approval.votes) == 1
