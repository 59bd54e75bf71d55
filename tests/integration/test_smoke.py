from __future__ import annotations

from typing import Any

from tests.conftest import AUTH, suspend_body


async def test_suspend_rehydrate_decide(client: Any) -> None:
    resp = await client.post("/v1/suspend", json=suspend_body(), headers=AUTH)
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert body["status"] == "waiting_approval"
    doc = await (await client.get(f"/v1/resume/{body['resume_token']}")).json()
    assert doc["state"] == {"cursor": 3}
    resp = await client.post("/v1/resume", json={"token": body["resume_token"], "outcome": "approve"})
    assert resp.status == 200
    assert (await resp.json())["status"] == "approved"
