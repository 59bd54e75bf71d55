"""PII never reaches the API views, events or the database in clear; rehydration gets it raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import AUTH, suspend_body

PII = {"email": "jane.doe@example.com", "card": "4111 1111 1111 1111", "note": "call +44 20 7946 0958"}


async def test_pii_is_redacted_for_display_and_sealed_at_rest(client: Any, db_url: str) -> None:
    body = suspend_body(args=PII, summary="Refund jane.doe@example.com", state={"secret_note": "jane.doe@example.com"})
    created = await (await client.post("/v1/suspend", json=body, headers=AUTH)).json()
    view = await (await client.get(f"/v1/approvals/{created['id']}", headers=AUTH)).json()
    assert view["args"] == {"email": "[redacted:email]", "card": "[redacted:card]", "note": "call [redacted:phone]"}
    assert view["summary"] == "Refund [redacted:email]"
    events = await (await client.get(f"/v1/approvals/{created['id']}/events", headers=AUTH)).text()
    listed = await (await client.get("/v1/approvals", headers=AUTH)).text()
    doc = await (await client.get(f"/v1/resume/{created['resume_token']}")).json()
    assert doc["args"] == PII and doc["state"] == {"secret_note": "jane.doe@example.com"}
    assert doc["approval"]["args"]["email"] == "[redacted:email]"
    again = await client.post("/v1/suspend", json=body, headers=AUTH)  # idempotency still keys on raw args
    assert again.status == 200 and (await again.json())["id"] == created["id"]
    for text in (events, listed):  # not "4111" alone: a hex digest in an event (a card's hash) may hold it
        assert "jane.doe" not in text and "4111 1111" not in text and "7946 0958" not in text
    raw = b"".join(p.read_bytes() for p in Path(db_url.removeprefix("sqlite:///")).parent.glob("gateway.db*"))
    assert b"jane.doe" not in raw and b"4111 1111" not in raw and b"7946 0958" not in raw
