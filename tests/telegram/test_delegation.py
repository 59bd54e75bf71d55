"""A delegate's press on a chat card: refused before the delegation, and afterwards decided for
the delegator (`on_behalf_of`), while the delegation is in force."""

from __future__ import annotations

from datetime import timedelta

from gateway.service.delegations import Delegate
from tests.conftest import OPERATOR
from tests.telegram.conftest import ALICE, MALLORY, TG


async def test_a_delegate_presses_approve_for_the_delegator(tg: TG) -> None:
    approval_id, mid = await tg.posted(approvers=[f"telegram:{ALICE}"])
    assert await tg.send(tg.press(MALLORY, tg.data(mid, "Approve"), mid)) == 200
    assert (await tg.rt.service.get(approval_id)).status.value == "waiting_approval"  # not an approver

    until = tg.clock.now() + timedelta(hours=4)
    made = await tg.rt.service.delegations.create(
        Delegate(f"telegram:{ALICE}", f"telegram:{MALLORY}", until, "operator:test", True)
    )
    assert await tg.send(tg.press(MALLORY, tg.data(mid, "Approve"), mid)) == 200
    view = await (await tg.client.get(f"/v1/approvals/{approval_id}", headers=OPERATOR)).json()
    assert view["status"] == "approved"
    decision = view["decision"]
    assert (decision["decided_by"], decision["on_behalf_of"]) == (f"telegram:{MALLORY}", f"telegram:{ALICE}")
    assert view["votes"][0]["delegation"] == made.id
