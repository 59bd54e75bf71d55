"""The Teams channel in a real `hitl-gateway serve`, configured from a file and the environment,
against the fake Bot Framework: the card is posted, an approver's press decides it, the card is
updated, and neither the app password nor a token reaches the log."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapters.teams.parse import make_ref
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.teams_api import APP_ID, APP_PASSWORD, CONVERSATION, TENANT, FakeTeams, invoke
from tests.procs import AUTH, Gateway, free_port, wait_ready, write_config
from tests.security.channel_support import until

pytestmark = pytest.mark.subprocess
ALICE = "aaaaaaaa-0000-4000-8000-00000000a11c"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTeams]:
    fake = FakeTeams(time.time)
    fake.members = {ALICE: "29:1alice"}
    await fake.start()
    yield fake
    await fake.stop()


async def test_a_card_posted_pressed_and_updated_by_a_served_gateway(tmp_path: Path, fake: FakeTeams) -> None:
    teams = (
        f'[teams]\napp_id = "{APP_ID}"\ntenant_ids = ["{TENANT}"]\napprovers = ["{ALICE.upper()}"]\n'
        f'conversations = ["{CONVERSATION}"]\nopenid_metadata = "{fake.metadata_url}"\n'
        f'token_url = "{fake.token_url}"\nservice_url = "{fake.service_url}"\n'
    )
    port = free_port()
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, teams)
    gw = Gateway(config, port, tmp_path / "gw.log", env={"HITL_TEAMS_APP_PASSWORD": APP_PASSWORD})
    await asyncio.to_thread(gw.start)
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, gw.url, lambda: gw.proc is not None and gw.proc.poll() is None, log=gw.log)
            body = {"run_id": "r1", "step": "pay", "title": "Pay ACME", "channels": [f"teams:{CONVERSATION}"]}
            async with http.post(f"{gw.url}/v1/suspend", json=body, headers=AUTH) as resp:
                assert resp.status == 201, await resp.text()
                aid = (await resp.json())["id"]
            await until(lambda: len(fake.cards()) == 1)
            (card_id,) = fake.cards()
            data = {"ref": make_ref(TokenSigner([TEST_SECRET]), aid)}
            press = invoke(verb="approve", data=data, service_url=fake.service_url, user=ALICE, card_id=card_id)
            token = fake.issuer.token(fake.service_url)
            async with http.post(
                f"{gw.url}/webhooks/teams", json=press, headers={"Authorization": f"Bearer {token}"}
            ) as resp:
                assert resp.status == 200
                answer = await resp.json()
            assert "**Approved** by Alice" in json.dumps(answer, ensure_ascii=False)
            await until(lambda: "**Approved**" in json.dumps(fake.cards()[card_id], ensure_ascii=False))
            async with http.get(f"{gw.url}/v1/approvals/{aid}", headers=AUTH) as resp:
                view = await resp.json()
            assert view["status"] == "approved" and view["decision"]["decided_by"] == f"teams:{ALICE}"
    finally:
        gw.stop()
    log = (tmp_path / "gw.log").read_text()
    assert APP_PASSWORD not in log and token not in log and not any(t in log for t in fake.tokens)
