"""`hitl-gateway approvals approve|reject ID ID ...`: each ID its own decision, on the store
(as operator:cli) or with --url over `POST /v1/approvals/decisions`; a line per ID, exit 1 when
any was refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.cli.main import main
from gateway.cli.remote import RemoteOps
from gateway.config import load_settings
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import TEST_OPERATOR_KEY, TEST_SECRET


def _suspend_some(config: Path, *steps: str, **kw: Any) -> list[str]:
    async def go() -> list[str]:
        rt = Runtime(load_settings(str(config), env={}))
        await rt.start(background=False)
        try:
            reqs = [SuspendRequest("run-1", s, f"Pay {s}", **kw) for s in steps]
            return [(await rt.service.suspend(r))[0].id for r in reqs]
        finally:
            await rt.stop()

    return asyncio.run(go())


def test_several_ids_on_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "gw.toml"
    config.write_text(f'[store]\nurl = "sqlite:///{tmp_path / "gw.db"}"\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n')
    one, two = _suspend_some(config, "one", "two")
    (own,) = _suspend_some(config, "own", requested_by="operator:cli")
    assert main(["--config", str(config), "approvals", "approve", one, two, "--comment", "ok"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{one}  approved", f"{two}  approved"]
    code = main(["--config", str(config), "approvals", "reject", one, own, "--json"])
    items = json.loads(capsys.readouterr().out)["items"]
    assert code == 1
    assert [(i["id"], i["ok"], i["error"]["code"]) for i in items] == [
        (one, False, "already_decided"),
        (own, False, "requester_cannot_decide"),
    ]
    assert main(["--config", str(config), "approvals", "approve", one, two, "--by", "web:ann"]) == 2
    assert "--by takes one ID" in capsys.readouterr().err


async def test_several_ids_over_http(client: TestClient[Any, Any], runtime_of_client: Runtime) -> None:
    one = (await runtime_of_client.service.suspend(SuspendRequest("run-1", "one", "Pay one")))[0].id
    url = str(client.make_url("/")).rstrip("/")
    async with RemoteOps(url, TEST_OPERATOR_KEY) as ops:
        items = await ops.decide_many([one, "nope"], "approve", "fine")
    assert items[0] == {"id": one, "ok": True, "status": "approved"}
    assert items[1]["ok"] is False and items[1]["error"]["code"] == "not_found"
    approval = await runtime_of_client.service.get(one)
    assert approval.decision is not None and approval.decision.decided_by == "operator:test"


@pytest.fixture
def runtime_of_client(client: TestClient[Any, Any]) -> Runtime:
    from gateway.http.keys import RUNTIME

    rt: Runtime = client.server.app[RUNTIME]
    return rt
