"""Agent names and their case, against a real `hitl-gateway serve`.

Agent names are case-insensitive where an operator names one (`?agent=NAME`, `NAME:target`
destinations), so they must be everywhere the gateway files an agent's records too. Were an agent
configured as `Billing` to suspend and journal as `agent:Billing`, in the namespace
`agent:Billing`, while `?agent=Billing` means `agent:billing`, the operator who asks for Billing's
approvals or run would get another agent's (or none), journal writes would land in another
agent's run, and Billing would be refused its own name. And `Billing` and `billing` configured as
two agents would be one name to destinations (`billing:target` open to both).
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.procs import Gateway, free_port
from tests.security.conftest import ALICE, BILLING_KEY, MAIL, MAIL_KEY, call, config, suspend_body

pytestmark = pytest.mark.subprocess
CAPITAL = MAIL  # the key configured for the agent named `Billing`
STEP = {
    "status": "succeeded",
    "output": {"charged": True},
    "started_at": "2030-01-01T00:00:00Z",
    "finished_at": "2030-01-01T00:00:01Z",
}


def capitalised(tmp_path: Path, port: int, *, keep_lower: bool) -> Path:
    """A config whose mail key is the agent `Billing`; the agent `billing` stays, or is renamed."""
    text = config(tmp_path / "gw.db", port).replace(f'mail = "{MAIL_KEY}"', f'Billing = "{MAIL_KEY}"')
    if not keep_lower:
        text = text.replace(f'billing = "{BILLING_KEY}"', f'other = "{BILLING_KEY}"')
    path = tmp_path / "gw.toml"
    path.write_text(text)
    return path


@pytest.fixture
def gateway(tmp_path: Path):  # type: ignore[no-untyped-def]
    port = free_port()
    gw = Gateway(capitalised(tmp_path, port, keep_lower=False), port, tmp_path / "gw.log").start()
    yield gw
    gw.stop()


async def test_an_operator_names_a_capitalised_agent_and_reaches_its_records(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        status, made = await call(http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body("r1"), headers=CAPITAL)
        assert status == 201, made
        status, listed = await call(http, "GET", f"{gateway.url}/v1/approvals?agent=Billing", headers=ALICE)
        assert status == 200, listed
        assert [a["id"] for a in listed["items"]] == [made["id"]], f"?agent=Billing lists {listed['items']}"
        assert (await call(http, "GET", f"{gateway.url}/v1/approvals/{made['id']}", headers=ALICE))[1][
            "agent"
        ] == "agent:billing"
        status, own = await call(http, "GET", f"{gateway.url}/v1/approvals?agent=Billing", headers=CAPITAL)
        assert status == 200 and [a["id"] for a in own["items"]] == [made["id"]], f"Billing naming itself: {own}"
        # the operator journals into Billing's run by any spelling; Billing reads it as its own
        steps = f"{gateway.url}/v1/runs/r1/steps"
        assert (await call(http, "PUT", f"{steps}/charge?agent=BILLING", json=STEP, headers=ALICE))[0] == 200
        status, seen = await call(http, "GET", steps, headers=CAPITAL)
        assert status == 200 and [s["name"] for s in seen["items"]] == ["charge"], seen
        status, seen = await call(http, "GET", steps, headers=ALICE)  # one run of that id: no ambiguity
        assert status == 200 and [s["name"] for s in seen["items"]] == ["charge"], seen


async def test_two_agents_differing_only_in_case_do_not_start(tmp_path: Path) -> None:
    port = free_port()
    gw = Gateway(capitalised(tmp_path, port, keep_lower=True), port, tmp_path / "gw.log")
    try:
        started = True
        gw.start()
    except Exception:
        started = False
    finally:
        gw.stop()
    assert not started, "security.agents.Billing and security.agents.billing: one name, two agents"
    assert "security.agents" in (tmp_path / "gw.log").read_text()
