"""A one-time edit link cannot be renewed by submitting bad input.

A refused submit (a 400: a value off the schema) used its link, so the form came back with a new
one; that new link was signed with a new lifetime from now. Whoever held one link could submit
bad input just before it expired, take the link the 400 page carries, and repeat for as long as
the approval waited. The link a refused submit hands back now expires when the first one did.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from gateway.core.models import Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, editlinks
from gateway.testing import FakeClock
from tests.web.conftest import csrf_of, web, web_rt, web_settings  # noqa: F401 (fixtures)

pytestmark = pytest.mark.subprocess  # the args schema is checked in a process

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}}}
_ACTION = re.compile(r'action="(/edit/[^"]+)"')


async def test_a_refused_edit_does_not_renew_the_link(
    web: Any,  # noqa: F811
    web_rt: Runtime,  # noqa: F811
    clock: FakeClock,
) -> None:
    req = SuspendRequest(
        "run-1", "pay", "Pay ACME", policy="pay", args={"amount": 4200}, args_schema=SCHEMA, editable=["amount"]
    )
    approval, _ = await web_rt.service.suspend(req)
    max_age = editlinks.EDIT_LINK_TTL
    path = editlinks.PATH + editlinks.token(web_rt.signer, approval.id, "web:alice", "alice", clock.now())
    csrf = csrf_of(await (await web.get(path)).text())

    clock.advance((max_age - timedelta(seconds=1)).total_seconds())  # just before it expires
    refused = await web.post(path, data={"csrf": csrf, "arg.amount": "9000"})
    html = await refused.text()
    assert refused.status == 400 and "greater than the maximum of 5000" in html
    handed = _ACTION.search(html)
    assert handed is not None and handed.group(1) != path  # the refused submit used its link

    clock.advance(2)  # past the first link's expiry
    late = await web.post(handed.group(1), data={"csrf": csrf, "arg.amount": "3900"})
    assert late.status == 410 and "expired" in await late.text()  # before: 200, approved
    assert (await web_rt.service.get(approval.id)).status is Status.WAITING
