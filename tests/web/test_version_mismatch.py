"""A resume refused for its code version shows on the dashboard's failed jobs, with both versions
and a retry button (issue 16, versioned resumes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.web.conftest import WEB, sign_in


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(web=WEB, workers={"agent": {"command": ["true"], "accepts": ["2.*"]}})


async def test_the_dashboard_shows_a_version_mismatch(web: Any, web_rt: Runtime) -> None:
    req = SuspendRequest(run_id="old", step="deploy", title="Deploy", worker="agent", code_version="1.9")
    approval, _ = await web_rt.service.suspend(req)
    await web_rt.service.decide(approval.id, Outcome.APPROVE, "web:alice", channel="web")
    await web_rt.worker.drain()
    await sign_in(web)
    html = " ".join((await (await web.get("/dashboard")).text()).split())
    assert "version_mismatch: the run was suspended with code_version &#39;1.9&#39;" in html
    assert "worker &#39;agent&#39; accepts 2.*" in html and f'action="/jobs/{approval.id}/retry"' in html
