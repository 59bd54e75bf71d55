"""What an approver types into the web inbox's edit form is refused by field, never a 500.

The edit form (gateway.http.web.argsform, shared with the one-time edit links and the channel
adapters' link pages) turns each field into a JSON value. A number that overflows to infinity,
`NaN`, `Infinity`, or JSON nested deeper than the API accepts cannot be hashed or stored: each
is a 400 naming the field, and nothing is recorded.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.helpers import table_counts
from tests.web.conftest import csrf_of, sign_in, web, web_rt, web_settings  # noqa: F401 (fixtures)

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "lines": {"type": "array"}},
}
_ROUND = re.compile(r'name="round" value="([^"]+)"')
pytestmark = pytest.mark.subprocess  # an args_schema is checked in the schema checker's process


@pytest.mark.parametrize(
    ("field", "typed"),
    [
        ("arg.amount", "nan"),
        ("arg.amount", "inf"),
        ("arg.amount", "-Infinity"),
        ("arg.amount", "1e400"),
        ("arg.lines", "[NaN]"),
        ("arg.lines", "[1e400]"),
        ("arg.lines", "[" * 5000 + "]" * 5000),
    ],
)
async def test_an_edited_arg_that_json_cannot_carry_is_a_400_naming_it(
    web: Any,  # noqa: F811
    web_rt: Runtime,  # noqa: F811
    field: str,
    typed: str,
) -> None:
    req = SuspendRequest(
        "run-1", "pay", "Pay", args={"amount": 1.5, "lines": [1]}, args_schema=SCHEMA, editable=["amount", "lines"]
    )
    approval, _ = await web_rt.service.suspend(req)
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    found = _ROUND.search(page)
    assert found is not None
    before = await table_counts(web_rt)
    form = {"csrf": csrf_of(page), "outcome": "approve", "round": found.group(1), field: typed}
    resp = await web.post(f"/approvals/{approval.id}/decision", data=form, allow_redirects=False)
    assert resp.status == 400, resp.status
    assert f"args.{field.removeprefix('arg.')}" in await resp.text()
    assert await table_counts(web_rt) == before
