"""The inbox shows the rule behind a decision: who (rule:NAME), that a rule made it, and why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.web.conftest import HASH, WEB, sign_in


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    rules = [{"name": "small-charges", "when": "args.amount < 10", "then": "allow", "reason": "under 10 cents"}]
    return settings_factory(web={**WEB, "passwords": {"alice": HASH}}, rule=rules)


async def test_the_approval_page_names_the_rule_and_its_reason(web: Any, web_rt: Runtime) -> None:
    approval, _ = await web_rt.service.suspend(SuspendRequest("run-1", "charge", "Charge ACME", args={"amount": 5}))
    assert approval.decision is not None and approval.decision.decided_by == "rule:small-charges"
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert "rule:small-charges" in page and "(rule)" in page and "under 10 cents" in page
