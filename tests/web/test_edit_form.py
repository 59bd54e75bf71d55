"""The web inbox's edit form, generated from the suspend's schema, without JavaScript, and the
extend buttons."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.helpers import table_counts
from tests.web.conftest import csrf_of, sign_in

pytestmark = pytest.mark.subprocess  # every test here starts a process

SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1, "maximum": 5000, "description": "in cents"},
        "currency": {"enum": ["EUR", "USD"]},
        "urgent": {"type": "boolean"},
        "memo": {"type": "string"},
        "lines": {"type": "array"},
        "customer": {"type": "string"},
    },
}
ARGS = {"amount": 4200, "currency": "EUR", "urgent": False, "memo": "May", "lines": [1, 2], "customer": "ACME"}


async def _suspend(rt: Runtime, **kw: Any) -> Any:
    req = SuspendRequest(
        "run-1",
        "pay",
        "Pay ACME",
        args=ARGS,
        args_schema=SCHEMA,
        editable=["amount", "currency", "urgent", "memo", "lines"],
        **kw,
    )
    approval, _ = await rt.service.suspend(req)
    return approval


async def test_the_form_has_one_input_per_editable_field_by_type(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt)
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert '<input type="number" step="1" min="1" max="5000" id="arg-amount" name="arg.amount" value="4200">' in page
    assert '<select id="arg-currency" name="arg.currency"><option value="&quot;EUR&quot;" selected>EUR' in page
    assert (
        '<select id="arg-urgent" name="arg.urgent"><option value="true">yes</option><option value="false" selected>'
        in page
    )
    assert '<input type="text" id="arg-memo" name="arg.memo" value="May">' in page
    assert 'name="arg.lines">[\n  1,\n  2\n]</textarea>' in page  # anything else: JSON
    assert "arg.customer" not in page  # not editable


async def test_an_edit_from_the_form_approves_with_the_change(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt)
    await sign_in(web)
    token = csrf_of(await (await web.get(f"/approvals/{approval.id}")).text())
    form = {"csrf": token, "outcome": "approve", "arg.amount": "3900", "arg.currency": '"USD"', "arg.urgent": "true"}
    form |= {"arg.memo": "May", "arg.lines": "[1, 2]"}
    resp = await web.post(f"/approvals/{approval.id}/decision", data=form)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert (
        resp.status == 200
        and "Approved with changes by web:alice: amount 4200 → 3900, currency EUR → USD, urgent false → true" in page
    )
    after = await web_rt.service.get(approval.id)
    assert after.decision is not None and after.decision.args == {
        **ARGS,
        "amount": 3900,
        "currency": "USD",
        "urgent": True,
    }


async def test_an_unchanged_form_is_a_plain_approval(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt)
    await sign_in(web)
    token = csrf_of(await (await web.get(f"/approvals/{approval.id}")).text())
    form = {"csrf": token, "outcome": "approve", "arg.amount": "4200", "arg.currency": '"EUR"', "arg.urgent": "false"}
    form |= {"arg.memo": "May", "arg.lines": "[\n  1,\n  2\n]"}
    assert (await web.post(f"/approvals/{approval.id}/decision", data=form)).status == 200
    after = await web_rt.service.get(approval.id)
    assert after.decision is not None and after.decision.args is None and after.proposal is None


async def test_a_bad_edit_shows_the_error_inline_and_keeps_what_was_typed(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt)
    await sign_in(web)
    token = csrf_of(await (await web.get(f"/approvals/{approval.id}")).text())
    before = await table_counts(web_rt)
    for value, problem in (("9000", "9000 is greater than the maximum of 5000"), ("a lot", "must be an integer")):
        form = {"csrf": token, "outcome": "approve", "arg.amount": value, "comment": "checked"}
        resp = await web.post(f"/approvals/{approval.id}/decision", data=form)
        page = await resp.text()
        assert resp.status == 400 and f"args.amount: {problem}" in page and 'role="alert"' in page
        assert f'aria-invalid="true" value="{value}">' in page  # kept, and marked
        assert ">checked</textarea>" in page
    resp = await web.post(
        f"/approvals/{approval.id}/decision", data={"csrf": token, "outcome": "approve", "arg.lines": "[1,"}
    )
    assert resp.status == 400 and "args.lines: is not valid JSON" in await resp.text()
    assert await table_counts(web_rt) == before


async def test_a_page_submitted_twice_extends_once(web: Any, web_rt: Runtime) -> None:
    """The form carries the extensions the page showed: its second submit (a double click, a
    resubmit, a tab open since before another approver's extension) changes nothing, though the
    policy allows another."""
    approval = await _suspend(web_rt, policy="pay")
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'name="extensions" value="0"' in page
    form = {"csrf": csrf_of(page), "duration": "+1h", "extensions": "0"}
    assert (await web.post(f"/approvals/{approval.id}/extend", data=form)).status == 200
    before = await table_counts(web_rt)
    again = await web.post(f"/approvals/{approval.id}/extend", data=form)
    text = await again.text()
    assert again.status == 409 and "extended meanwhile (1 extension(s) now, 0 when this page was drawn)" in text
    assert await table_counts(web_rt) == before
    assert (await web_rt.service.get(approval.id)).extensions == 1
    fresh = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'name="extensions" value="1"' in fresh  # the page drawn now extends
    assert (await web.post(f"/approvals/{approval.id}/extend", data={**form, "extensions": "1"})).status == 200
    assert (await web_rt.service.get(approval.id)).extensions == 2
    bad = await web.post(f"/approvals/{approval.id}/extend", data={**form, "extensions": "-1"})
    assert bad.status == 400 and "extensions: must be the number" in await bad.text()


@pytest.mark.parametrize("seen", ["\u00b2", "\u2460", "\u0661"])
async def test_extend_form_extensions_not_ascii_digits_is_a_400(web: Any, web_rt: Runtime, seen: str) -> None:
    """The hidden field is digits only: a superscript or circled digit (str.isdigit says yes,
    int says no) or another script's digit is a 400 naming the field, never a 500, and nothing
    is extended."""
    approval = await _suspend(web_rt, policy="pay")
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    form = {"csrf": csrf_of(page), "duration": "+1h", "extensions": seen}
    bad = await web.post(f"/approvals/{approval.id}/extend", data=form)
    assert bad.status == 400 and "extensions: must be the number" in await bad.text()
    assert (await web_rt.service.get(approval.id)).extensions == 0


async def test_extend_buttons_move_the_deadline(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    approval = await _suspend(web_rt, policy="pay")
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'name="duration" value="+1h"' in page and 'value="+1d"' in page
    token = csrf_of(page)
    resp = await web.post(f"/approvals/{approval.id}/extend", data={"csrf": token, "duration": "+1d"})
    assert resp.status == 200 and "extended 1×" in await resp.text()
    after = await web_rt.service.get(approval.id)
    assert approval.deadline is not None and after.deadline is not None
    assert (after.deadline - approval.deadline).days == 1
    resp = await web.post(f"/approvals/{approval.id}/extend", data={"csrf": token, "duration": "2h"})
    assert resp.status == 403 and "policy &#39;pay&#39; allows extensions of 1h, 1d, not 2h" in await resp.text()
