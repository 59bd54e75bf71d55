"""Presses tell the truth, and strangers cannot grow the record (issue 13, "presses tell the truth").

Findings covered (each failed on main before the fix):
- "The toast can be wrong": the answer was computed before the commit, so a presser who lost a
  race could be told "Rejected" while the approval was approved. Now the answer is sent after the
  commit and says what was committed: the loser gets "Already approved by NAME". Run 100 times.
- "Stranger presses on a decided approval add one event and one card edit each, without bound":
  now at most 5 `denied` events per person and approval, waiting or decided, concurrent or not,
  every press still answered, and no card edit per press.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.core.models import Outcome
from tests.security.channel_support import CHAT, Stack, stack_of, telegram_section

pytestmark = pytest.mark.subprocess
ALICE, BOB, MALLORY = 111, 222, 666
RACES = 100
KEPT = 5  # denied events kept per person and approval


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, lambda telegram, slack: telegram_section(telegram, [ALICE, BOB])):
        yield s


async def _posted(stack: Stack) -> tuple[str, int]:
    status, body = await stack.suspend(channels=[f"telegram:{CHAT}"])
    assert status == 201, body
    return body["id"], await stack.card(body["id"])


async def test_the_answer_always_matches_what_was_committed(stack: Stack) -> None:
    names = {f"telegram:{ALICE}": "@alice", f"telegram:{BOB}": "@bob"}  # their Telegram names
    outcomes = set()
    for _ in range(RACES):
        approval_id, mid = await _posted(stack)
        approve = stack.press(ALICE, approval_id, Outcome.APPROVE, mid, "alice")
        reject = stack.press(BOB, approval_id, Outcome.REJECT, mid, "bob")
        assert await asyncio.gather(stack.send(approve), stack.send(reject)) == [200, 200]
        view = await stack.approval(approval_id)
        winner = view["decision"]["decided_by"]
        outcomes.add(view["status"])
        won, lost = (approve, reject) if winner == f"telegram:{ALICE}" else (reject, approve)
        verb = "approved" if view["status"] == "approved" else "rejected"
        assert stack.answer(won) == ("Approved" if verb == "approved" else "Rejected. " + _REASON)
        assert stack.answer(lost) == f"Already {verb} by {names[winner]}"
    assert outcomes <= {"approved", "rejected"}


_REASON = "Reply to my question with a reason, if you like."


async def _edits(stack: Stack) -> int:
    return len(stack.telegram.calls_to("editMessageText"))


async def _synced(stack: Stack, approval_id: str) -> None:
    """Wait until the outbox has nothing left for this approval."""
    async with asyncio.timeout(10):
        while True:
            if not any(d["status"] == "pending" for d in (await stack.approval(approval_id))["deliveries"]):
                return
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("decided", [False, True])
async def test_a_stranger_pressing_in_a_loop_is_bounded_and_edits_nothing(stack: Stack, decided: bool) -> None:
    approval_id, mid = await _posted(stack)
    if decided:
        press = stack.press(ALICE, approval_id, Outcome.APPROVE, mid, "alice")
        assert await stack.send(press) == 200 and stack.answer(press) == "Approved"
    await _synced(stack, approval_id)
    before = await _edits(stack)
    presses = [stack.press(MALLORY, approval_id, Outcome.REJECT, mid, "mallory") for _ in range(12)]
    for update in presses[:4]:
        assert await stack.send(update) == 200
    assert await asyncio.gather(*(stack.send(u) for u in presses[4:])) == [200] * 8  # at once, too
    assert [stack.answer(u) for u in presses] == ["Not authorised"] * 12  # every press is answered
    await _synced(stack, approval_id)
    events = await stack.events(approval_id)
    denied = [e for e in events if e["kind"] == "denied"]
    assert len(denied) == KEPT and {e["actor"] for e in denied} == {f"telegram:{MALLORY}"}
    assert len(events) == len({e["id"] for e in events})
    assert await _edits(stack) == before  # no card edit per press
    view = await stack.approval(approval_id)
    assert view["status"] == ("approved" if decided else "waiting_approval")


@pytest.mark.parametrize("decided", [False, True])
async def test_a_stranger_pressing_on_unknown_messages_is_bounded_too(stack: Stack, decided: bool) -> None:
    """Each press on a message the gateway never recorded (a forged or copied card): no card is
    adopted or closed for a stranger, and the `denied` events stay within the same bound."""
    approval_id, mid = await _posted(stack)
    if decided:
        press = stack.press(ALICE, approval_id, Outcome.APPROVE, mid, "alice")
        assert await stack.send(press) == 200 and stack.answer(press) == "Approved"
    await _synced(stack, approval_id)
    before_events, before_edits = len(await stack.events(approval_id)), await _edits(stack)
    presses = [stack.press(MALLORY, approval_id, Outcome.APPROVE, mid + 1000 + i, "mallory") for i in range(15)]
    for update in presses:
        assert await stack.send(update) == 200
    assert [stack.answer(u) for u in presses] == ["Not authorised"] * 15
    await _synced(stack, approval_id)
    added = (await stack.events(approval_id))[before_events:]
    assert [e["kind"] for e in added] == ["denied"] * KEPT, [e["kind"] for e in added]
    assert await _edits(stack) == before_edits  # no copy closed, no card adopted and synced
    view = await stack.approval(approval_id)
    assert view["status"] == ("approved" if decided else "waiting_approval")
    assert [c["ref"] for c in view["cards"]] == [f"{CHAT}:{mid}"]
