"""An approval is what its creator asked for: a suspend replayed under a used idempotency key
(same key, same agent) that asks for other channels, approvers, policy, title or requester is a
`409 idempotency_conflict` naming the field, never the stored approval or its token.

The attack it stops: an agent pre-creates, under a key it can derive, the approval that a gate
(or any later suspend) will ask for, with a harmless title and no approvers; an operator approves
that, and the gate, handed the stored approval, runs its call."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import BILLING, CHATS, Launch, call, db_counts, make_launcher, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

BOT = 'base_url = "http://127.0.0.1:9/bot"'  # Telegram's section: its approver and its chat follow
EXTRA = (
    CHATS.replace(BOT, f"{BOT}\napprovers = [111]\nchats = [-100123]")
    + """
[policies.slow]
timeout = "2h"

[policies.dated]
timeout = "1h"
agent_may_set = ["timeout"]
max_timeout = "1d"
"""
)
DEADLINE = (datetime.now(UTC) + timedelta(hours=5)).replace(microsecond=0)


def full_body(key: str, **over: Any) -> dict[str, Any]:
    """A suspend that names every field a replay is compared on."""
    return (
        suspend_body(
            f"run-{key}",
            idempotency_key=key,
            summary="Invoice 7 of ACME",
            channels=["web", "telegram:-100123"],
            approvers=["web:alice", "telegram:111"],
            policy="default",
            requested_by="web:carol",
            worker="agent",
            editable=["amount"],
            args_schema={"type": "object", "properties": {"amount": {"type": "integer"}}},
        )
        | over
    )


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started: list[Gateway] = []
    yield make_launcher(tmp_path_factory.mktemp("replay"), started)(extra=EXTRA)
    for gw in started:
        gw.stop()


async def _post(http: aiohttp.ClientSession, gateway: Gateway, body: dict[str, Any]) -> tuple[int, Any]:
    return await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)


async def test_an_honest_retry_replays_the_same_body(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        status, first = await _post(http, gateway, full_body("honest"))
        assert status == 201, first
        # the same request, its lists in another order: the same approval and token
        again = full_body("honest", channels=["telegram:-100123", "web"], approvers=["telegram:111", "web:alice"])
        status, replay = await _post(http, gateway, again)
        assert status == 200 and replay == first, replay
        # `policy` left out is the default policy, as stored
        status, replay = await _post(http, gateway, {k: v for k, v in full_body("honest").items() if k != "policy"})
        assert status == 200 and replay == first, replay
        # a deadline replays too, although it is a shorter timeout at every retry
        dated = full_body("dated", policy="dated", deadline=DEADLINE.isoformat())
        status, first = await _post(http, gateway, dated)
        assert status == 201, first
        status, replay = await _post(http, gateway, dated)
        assert status == 200 and replay == first, replay


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", "Refresh the dashboard cache"),
        ("summary", "nothing to see"),
        ("channels", ["web"]),
        ("approvers", ["web:bob", "telegram:111"]),
        ("approvers", []),
        ("policy", "slow"),
        ("requested_by", "web:bob"),
        ("requested_by", None),
        ("worker", None),
        ("editable", True),
        ("args_schema", {"type": "object"}),
    ],
)
async def test_each_differing_field_is_a_409_naming_it(gateway: Gateway, field: str, value: Any) -> None:
    key = f"differ-{field}-{value!r}"
    async with aiohttp.ClientSession() as http:
        status, first = await _post(http, gateway, full_body(key))
        assert status == 201, first
        before = db_counts(gateway, "approvals", "outbox")
        body = full_body(key) | {field: value}
        status, reply = await _post(http, gateway, {k: v for k, v in body.items() if v is not None})
        assert status == 409, reply
        error = reply["error"]
        assert error["code"] == "idempotency_conflict" and error["details"]["field"] == field, error
        assert error["message"].startswith(f"{field}: ")
        assert first["id"] not in str(reply) and first["resume_token"] not in str(reply)
        assert db_counts(gateway, "approvals", "outbox") == before


async def test_another_deadline_is_a_409_naming_it(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        dated = full_body("deadline", policy="dated", deadline=DEADLINE.isoformat())
        status, first = await _post(http, gateway, dated)
        assert status == 201, first
        later = dated | {"deadline": (DEADLINE + timedelta(hours=1)).isoformat()}
        status, reply = await _post(http, gateway, later)
        assert status == 409 and reply["error"]["details"]["field"] == "deadline", reply
        status, reply = await _post(http, gateway, {k: v for k, v in dated.items() if k != "deadline"})
        assert status == 409 and reply["error"]["details"]["field"] == "policy", reply  # its own 1h timeout


async def test_a_gate_is_never_handed_the_approval_the_agent_made(gateway: Gateway) -> None:
    """The MCP gate's shape: the agent posts first under the gate's key, harmless and with no
    approvers; the gate's own suspend, with its title and approvers, is refused."""
    key, args = "mcp:transfer:0123abcd", {"amount": 9999}
    planted = suspend_body("mcp-run", step="transfer", idempotency_key=key, args=args)
    planted |= {"title": "Refresh the dashboard cache", "summary": ""}
    async with aiohttp.ClientSession() as http:
        status, theirs = await _post(http, gateway, planted)
        assert status == 201, theirs
        gate = planted | {"title": "MCP tool call: transfer", "approvers": ["web:alice"]}
        status, reply = await _post(http, gateway, gate)
        assert status == 409 and reply["error"]["code"] == "idempotency_conflict", reply
        assert reply["error"]["details"]["field"] == "title"
        assert theirs["id"] not in str(reply) and theirs["resume_token"] not in str(reply)
        status, reply = await _post(http, gateway, gate | {"title": planted["title"]})  # the title alone is not it
        assert status == 409 and reply["error"]["details"]["field"] == "approvers", reply


async def test_a_replay_after_the_operator_changed_the_named_policy_still_replays(launch: Launch) -> None:
    """A configured policy is the operator's: a deploy that changes its timeout or quorum while
    the approval waits must not turn the restarted agent's honest replay into a 409; the keys the
    agent chose in it (`agent_may_set`) are still compared."""
    gateway = launch(extra=EXTRA)
    async with aiohttp.ClientSession() as http:
        slow = full_body("config-change", policy="slow")
        status, first = await _post(http, gateway, slow)
        assert status == 201, first
        chosen = full_body("chosen", policy={"name": "dated", "timeout": "3h"})
        status, chosen_first = await _post(http, gateway, chosen)
        assert status == 201, chosen_first
    gateway.stop()
    changed = EXTRA.replace('timeout = "2h"', 'timeout = "4h"\nquorum = 1').replace('timeout = "1h"', 'timeout = "30m"')
    gateway.config.write_text(gateway.config.read_text().replace(EXTRA, changed))
    gateway.start()
    async with aiohttp.ClientSession() as http:
        status, replay = await _post(http, gateway, slow)
        assert status == 200 and replay == first, replay
        status, replay = await _post(http, gateway, chosen)
        assert status == 200 and replay == chosen_first, replay
        other = chosen | {"policy": {"name": "dated", "timeout": "5h"}}
        status, reply = await _post(http, gateway, other)
        assert status == 409 and reply["error"]["details"]["field"] == "policy", reply
