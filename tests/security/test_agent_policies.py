"""Which named policies an agent may ask for (`[security.agents.NAME] policies`), against a real
gateway: any agent could name any configured policy, an operator's auto-approving one too.

`payroll` is given as a table that lists `payments` only; `billing` keeps the string form (any
policy). `default` is always allowed: it is what a suspend that names no policy gets.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import ALICE, BILLING, Launch, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

PAYROLL_KEY = "agent-payroll-key-0123456789abcdef"
PAYROLL = {"Authorization": f"Bearer {PAYROLL_KEY}"}
POLICIES = """
[policies.payments]
timeout = "1h"
on_timeout = "reject"

[policies.ops_auto]
timeout = "1h"
on_timeout = "approve"
"""
PAYROLL_TABLE = f"""
[security.agents.payroll]
key = "{PAYROLL_KEY}"
policies = ["payments"]
"""


async def _suspend(http: aiohttp.ClientSession, gw: Gateway, headers: dict[str, str], run_id: str, **over: Any) -> Any:
    status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(run_id, **over), headers=headers)
    assert status == 201, reply
    _, view = await call(http, "GET", f"{gw.url}/v1/approvals/{reply['id']}", headers=ALICE)
    return view["policy"]["name"]


async def test_an_agent_asks_only_for_its_own_named_policies(launch: Launch) -> None:
    gw = launch(extra=POLICIES + PAYROLL_TABLE)
    async with aiohttp.ClientSession() as http:
        assert await _suspend(http, gw, PAYROLL, "pay-1", policy="payments") == "payments"
        assert await _suspend(http, gw, PAYROLL, "pay-2") == "default"
        assert await _suspend(http, gw, PAYROLL, "pay-3", policy="default") == "default"
        for policy, field in [
            ("ops_auto", "policy"),
            ({"name": "ops_auto"}, "policy.name"),
            ({"name": "ops_auto", "timeout": "1h"}, "policy.name"),
        ]:
            before = db_counts(gw)
            body = suspend_body(f"pay-{field}", policy=policy)
            status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=PAYROLL)
            assert status == 403, reply
            error = reply["error"]
            assert error["code"] == "policy_not_allowed" and error["details"]["field"] == field, reply
            assert "'ops_auto'" in error["message"] and "security.agents.payroll.policies" in error["message"]
            assert db_counts(gw) == before
        # the string form is unchanged: any named policy; operators are not limited either
        assert await _suspend(http, gw, BILLING, "bill-1", policy="ops_auto") == "ops_auto"
        assert await _suspend(http, gw, ALICE, "ops-1", policy="ops_auto") == "ops_auto"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('[security.agents.payroll]\npolicies = ["payments"]\n', "security.agents.payroll.key"),
        (PAYROLL_TABLE.replace('"payments"', '"payments", "payment"'), "security.agents.payroll.policies[1]"),
        (PAYROLL_TABLE + 'policy = "payments"\n', "security.agents.payroll.policy"),
        (PAYROLL_TABLE.replace('policies = ["payments"]', "policies = [7]"), "security.agents.payroll.policies[0]"),
    ],
)
def test_a_bad_agent_table_is_refused_at_start_naming_the_key(launch: Launch, table: str, key: str) -> None:
    with pytest.raises(RuntimeError) as exc:
        launch(extra=POLICIES + table)
    assert f"config: {key}:" in str(exc.value), str(exc.value)
