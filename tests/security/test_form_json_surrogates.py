"""A lone surrogate in an edit form's JSON field is a 400 that records nothing.

An arg edited as JSON text (an object, a list) was parsed with `json.loads`, which reads the
escape `"\\ud800"` into a string no UTF-8 encoder takes: the submit then failed as a 500 where
the edited args were hashed, after the one-time link had been used up. It is now refused where
it is parsed, naming the field, and the form comes back with a fresh link like any refused edit.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.core.models import Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, editlinks
from gateway.testing import FakeClock
from tests.web.conftest import csrf_of, web, web_rt, web_settings  # noqa: F401 (fixtures)

_ACTION = re.compile(r'action="(/edit/[^"]+)"')


@pytest.mark.parametrize("typed", ['{"a": "\\ud800"}', '{"\\udc00": 1}', '["ok", "\\udbff"]'])
async def test_a_lone_surrogate_in_an_edited_json_arg_is_a_400(
    web: Any,  # noqa: F811
    web_rt: Runtime,  # noqa: F811
    clock: FakeClock,
    typed: str,
) -> None:
    req = SuspendRequest("run-1", "pay", "Pay ACME", args={"memo": {"a": "x"}}, editable=["memo"])
    approval, _ = await web_rt.service.suspend(req)
    path = editlinks.PATH + editlinks.token(web_rt.signer, approval.id, "web:alice", "alice", clock.now())
    csrf = csrf_of(await (await web.get(path)).text())

    resp = await web.post(path, data={"csrf": csrf, "arg.memo": typed})
    html = await resp.text()
    assert resp.status == 400, html[:300]  # before: 500
    assert "unpaired UTF-16 surrogate" in html
    assert _ACTION.search(html) is not None  # a fresh link, as for any refused edit
    after = await web_rt.service.get(approval.id)
    assert after.status is Status.WAITING and after.current_args == {"memo": {"a": "x"}}
