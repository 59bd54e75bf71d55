"""`POST /v1/approvals/{id}/decision` with `args_hash`: an approve on args another approver
changed since the caller read them is a 409 naming `args_hash` and records nothing; with the
`current_args_hash` it counts; a reject is a veto on any round; without it, nothing is checked."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.core.keys import args_hash
from gateway.core.models import Outcome
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from tests.conftest import AUTH
from tests.helpers import table_counts
from tests.integration.test_edits_api import ARGS, api, decide, suspend

pytestmark = pytest.mark.subprocess  # every test here starts a process

__all__ = ["api"]  # the fixture


async def test_an_approve_on_args_changed_since_read_is_a_409_and_the_current_hash_approves(api: Any) -> None:
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api, policy="pay")
    assert a.get("current_args_hash") is None  # the suspend answer is short: read the approval
    read = await (await api.get(f"/v1/approvals/{a['id']}", headers=AUTH)).json()
    assert read["current_args_hash"] == args_hash(ARGS)
    await rt.service.decide(a["id"], Outcome.APPROVE, "web:bob", channel="web", args={**ARGS, "amount": 3900})
    before = await table_counts(rt)
    stale = await decide(api, a["id"], 409, outcome="approve", args_hash=read["current_args_hash"])
    assert stale["error"]["code"] == "stale_round" and stale["error"]["details"]["field"] == "args_hash"
    assert stale["error"]["message"].startswith("args_hash: the arguments changed")
    assert await table_counts(rt) == before  # no vote, no event
    bad = await decide(api, a["id"], 400, outcome="approve", args_hash=7)
    assert bad["error"]["details"]["field"] == "args_hash"
    now = await (await api.get(f"/v1/approvals/{a['id']}", headers=AUTH)).json()
    assert now["current_args_hash"] == now["proposal"]["args_hash"] == args_hash({**ARGS, "amount": 3900})
    done = await decide(api, a["id"], outcome="approve", args_hash=now["current_args_hash"])
    assert done["status"] == "approved" and done["decision"]["args"]["amount"] == 3900


async def test_a_reject_with_a_stale_hash_still_rejects_and_no_hash_checks_nothing(api: Any) -> None:
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api, policy="pay")
    await rt.service.decide(a["id"], Outcome.APPROVE, "web:bob", channel="web", args={**ARGS, "amount": 3900})
    vetoed = await decide(api, a["id"], outcome="reject", args_hash=args_hash(ARGS), comment="no")
    assert vetoed["status"] == "rejected"
    b = await suspend(api, policy="pay", step="pay-2")
    await rt.service.decide(b["id"], Outcome.APPROVE, "web:bob", channel="web", args={**ARGS, "amount": 3900})
    assert (await decide(api, b["id"], outcome="approve"))["status"] == "approved"  # unchecked, as before
